"""shell_keys: a det shell's client key pair and host public key

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 07:30:00.000000
"""
from alembic import op
import sqlalchemy as sa

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'shell_keys',
        sa.Column('task_id', sa.Integer(), nullable=False),
        sa.Column('client_private_key', sa.Text(), nullable=False),
        sa.Column('client_public_key', sa.Text(), nullable=False),
        sa.Column('host_public_key', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['task_id'], ['command_tasks.id'],
                                name=op.f('fk_shell_keys_task_id_command_tasks'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('task_id', name=op.f('pk_shell_keys')),
    )


def downgrade() -> None:
    op.drop_table('shell_keys')
