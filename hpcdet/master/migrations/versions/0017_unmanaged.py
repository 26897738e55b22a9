"""unmanaged experiments (core_v2): the flag, the scripts' external ids, the linked job

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29 19:00:00.000000

Every experiment stored before this revision was run by the master (managed).
"""
from alembic import op
import sqlalchemy as sa

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('experiments', schema=None) as batch_op:
        batch_op.add_column(sa.Column('unmanaged', sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
        batch_op.add_column(sa.Column('external_id', sa.String(length=256), nullable=True))
        batch_op.create_index(batch_op.f('ix_experiments_external_id'), ['external_id'],
                              unique=False)
    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.add_column(sa.Column('external_id', sa.String(length=256), nullable=True))
        batch_op.add_column(sa.Column('external_job', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.drop_column('heartbeat_at')
        batch_op.drop_column('external_job')
        batch_op.drop_column('external_id')
    with op.batch_alter_table('experiments', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_experiments_external_id'))
        batch_op.drop_column('external_id')
        batch_op.drop_column('unmanaged')
