"""command tasks: a proxied service's address and secret (det notebook, TensorBoard)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26 07:30:00.000000
"""
from alembic import op
import sqlalchemy as sa

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('command_tasks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('service_host', sa.String(length=256), nullable=True))
        batch_op.add_column(sa.Column('service_port', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('service_token', sa.String(length=128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('command_tasks', schema=None) as batch_op:
        batch_op.drop_column('service_token')
        batch_op.drop_column('service_port')
        batch_op.drop_column('service_host')
