"""searcher state, searcher events and templates

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 07:53:19.908389

Columns added to existing tables carry a server default so that rows of experiments
created before the upgrade stay valid.
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('templates',
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('config', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('owner', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_templates'))
    )
    op.create_table('searcher_events',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('experiment_id', sa.Integer(), nullable=False),
    sa.Column('trial_id', sa.Integer(), nullable=False),
    sa.Column('steps_completed', sa.BigInteger(), nullable=False),
    sa.Column('metrics', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('processed', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['experiment_id'], ['experiments.id'], name=op.f('fk_searcher_events_experiment_id_experiments'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['trial_id'], ['trials.id'], name=op.f('fk_searcher_events_trial_id_trials'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_searcher_events'))
    )
    with op.batch_alter_table('searcher_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_searcher_events_experiment_id'), ['experiment_id'], unique=False)
        batch_op.create_index('ix_searcher_events_processed_id', ['processed', 'id'], unique=False)

    with op.batch_alter_table('experiments', schema=None) as batch_op:
        batch_op.add_column(sa.Column('searcher_state', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True))
        batch_op.add_column(sa.Column('progress', sa.Float(), nullable=False, server_default='0'))

    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.add_column(sa.Column('request_id', sa.String(length=36), nullable=True))
        batch_op.add_column(sa.Column('early_exit', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('searcher_closed', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column('stop_requested_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('stop_reason', sa.String(length=32), nullable=True))
        batch_op.create_index(batch_op.f('ix_trials_request_id'), ['request_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_trials_request_id'))
        batch_op.drop_column('stop_reason')
        batch_op.drop_column('stop_requested_at')
        batch_op.drop_column('searcher_closed')
        batch_op.drop_column('early_exit')
        batch_op.drop_column('request_id')

    with op.batch_alter_table('experiments', schema=None) as batch_op:
        batch_op.drop_column('progress')
        batch_op.drop_column('searcher_state')

    with op.batch_alter_table('searcher_events', schema=None) as batch_op:
        batch_op.drop_index('ix_searcher_events_processed_id')
        batch_op.drop_index(batch_op.f('ix_searcher_events_experiment_id'))

    op.drop_table('searcher_events')
    op.drop_table('templates')
