"""command tasks: the address a proxied service was pinned to at registration

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27 09:00:00.000000

A service registered before this revision has a host but no pinned address: its address is
cleared, so the reconciler registers it again (pinned) in its next cycle.
"""
from alembic import op
import sqlalchemy as sa

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('command_tasks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('service_address', sa.String(length=64), nullable=True))
    op.execute("UPDATE command_tasks SET service_host = NULL, service_port = NULL")


def downgrade() -> None:
    with op.batch_alter_table('command_tasks', schema=None) as batch_op:
        batch_op.drop_column('service_address')
