"""searcher_journal: a search step costs O(events), not O(trials)

The searcher's inputs since its last snapshot (searcher_journal), the token that says
whether a master's searcher in memory is current (experiments.searcher_etag), and an index
for the trials that ended and the searcher has not heard of.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 15:00:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('searcher_journal',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('experiment_id', sa.Integer(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('request_id', sa.String(length=36), nullable=False),
    sa.Column('metric', sa.Float(), nullable=True),
    sa.Column('time_units', sa.Float(), nullable=True),
    sa.Column('reason', sa.String(length=16), nullable=True),
    sa.ForeignKeyConstraint(['experiment_id'], ['experiments.id'], name=op.f('fk_searcher_journal_experiment_id_experiments'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_searcher_journal'))
    )
    with op.batch_alter_table('searcher_journal', schema=None) as batch_op:
        batch_op.create_index('ix_searcher_journal_experiment_id_seq', ['experiment_id', 'seq'], unique=False)
    with op.batch_alter_table('experiments', schema=None) as batch_op:
        batch_op.add_column(sa.Column('searcher_etag', sa.String(length=32), nullable=True))
    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.create_index('ix_trials_searcher_closed_state', ['searcher_closed', 'state'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.drop_index('ix_trials_searcher_closed_state')
    with op.batch_alter_table('experiments', schema=None) as batch_op:
        batch_op.drop_column('searcher_etag')
    with op.batch_alter_table('searcher_journal', schema=None) as batch_op:
        batch_op.drop_index('ix_searcher_journal_experiment_id_seq')
    op.drop_table('searcher_journal')
