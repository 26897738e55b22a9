"""command tasks: kind (batch | command) and a command's config (det cmd run)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 05:10:00.000000
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    with op.batch_alter_table('command_tasks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('kind', sa.String(length=16), nullable=False,
                                      server_default='batch'))
        batch_op.add_column(sa.Column('config', _json(), nullable=True))
        batch_op.create_index(batch_op.f('ix_command_tasks_kind'), ['kind'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('command_tasks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_command_tasks_kind'))
        batch_op.drop_column('config')
        batch_op.drop_column('kind')
