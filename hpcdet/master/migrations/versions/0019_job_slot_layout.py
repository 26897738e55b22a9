"""jobs keep the slot layout they were submitted with (nodes, slots per node)

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-30 03:00:00.000000

A job stored before this revision has neither: its log lines are attributed by the layout
derived from its experiment's config, as before.
"""
from alembic import op
import sqlalchemy as sa

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None
# Job.node_count, Job.slots_per_node: nullable integers.
LAYOUT_COLUMNS = ('node_count', 'slots_per_node')


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        for name in LAYOUT_COLUMNS:
            batch_op.add_column(sa.Column(name, sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        for name in reversed(LAYOUT_COLUMNS):
            batch_op.drop_column(name)
