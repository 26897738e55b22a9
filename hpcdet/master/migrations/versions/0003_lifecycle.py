"""lifecycle: executions, requeues, archived metrics, log nodes

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 10:45:19.840943

Columns added to existing tables carry a server default so that existing rows stay valid.
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('report_streams',
    sa.Column('trial_id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('requeue', sa.Integer(), nullable=False),
    sa.Column('rank', sa.Integer(), nullable=False),
    sa.Column('last_seq', sa.BigInteger(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['trial_id'], ['trials.id'], name=op.f('fk_report_streams_trial_id_trials'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('trial_id', 'run_id', 'requeue', 'rank', name=op.f('pk_report_streams'))
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('name', sa.String(length=128), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('requeues', sa.Integer(), nullable=False, server_default='0'))

    with op.batch_alter_table('metrics', schema=None) as batch_op:
        batch_op.add_column(sa.Column('run_id', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('requeue', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('archived', sa.Boolean(), nullable=False, server_default=sa.false()))

    with op.batch_alter_table('trial_logs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('node', sa.String(length=128), nullable=True))

    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.add_column(sa.Column('interruptions', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('cancel_retries', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column('excluded_nodes', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False, server_default='[]'))



def downgrade() -> None:
    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.drop_column('excluded_nodes')
        batch_op.drop_column('cancel_retries')
        batch_op.drop_column('interruptions')

    with op.batch_alter_table('trial_logs', schema=None) as batch_op:
        batch_op.drop_column('node')

    with op.batch_alter_table('metrics', schema=None) as batch_op:
        batch_op.drop_column('archived')
        batch_op.drop_column('requeue')
        batch_op.drop_column('run_id')

    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('requeues')
        batch_op.drop_column('name')

    op.drop_table('report_streams')
