"""cluster snapshots: pools and the queue, read from Slurm on a timer

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21 14:20:00.000000
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('cluster_snapshots',
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('data', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('taken_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('kind', name=op.f('pk_cluster_snapshots'))
    )


def downgrade() -> None:
    op.drop_table('cluster_snapshots')
