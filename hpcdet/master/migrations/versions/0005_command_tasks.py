"""command tasks: Slurm batch jobs submitted with det sbatch

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-21 15:10:00.000000
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table('command_tasks',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('owner', sa.String(length=128), nullable=False),
    sa.Column('name', sa.String(length=256), nullable=False),
    sa.Column('state', sa.String(length=32), nullable=False),
    sa.Column('job_id', sa.String(length=64), nullable=True),
    sa.Column('job_dir', sa.Text(), nullable=False),
    sa.Column('pool', sa.String(length=128), nullable=True),
    sa.Column('partition', sa.String(length=128), nullable=True),
    sa.Column('account', sa.String(length=128), nullable=True),
    sa.Column('options', JSON, nullable=False),
    sa.Column('args', JSON, nullable=False),
    sa.Column('cwd', sa.Text(), nullable=False),
    sa.Column('workdir', sa.Text(), nullable=False),
    sa.Column('output_pattern', sa.Text(), nullable=False),
    sa.Column('error_pattern', sa.Text(), nullable=True),
    sa.Column('native_state', sa.String(length=64), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('exit_code', sa.Integer(), nullable=True),
    sa.Column('nodes', sa.Text(), nullable=True),
    sa.Column('cancel_requested', sa.Boolean(), nullable=False),
    sa.Column('cancel_sent_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('submitted_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_command_tasks'))
    )
    with op.batch_alter_table('command_tasks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_command_tasks_job_id'), ['job_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_command_tasks_owner'), ['owner'], unique=False)
        batch_op.create_index(batch_op.f('ix_command_tasks_state'), ['state'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('command_tasks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_command_tasks_state'))
        batch_op.drop_index(batch_op.f('ix_command_tasks_owner'))
        batch_op.drop_index(batch_op.f('ix_command_tasks_job_id'))

    op.drop_table('command_tasks')
