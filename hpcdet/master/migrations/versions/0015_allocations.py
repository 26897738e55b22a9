"""allocations: allocation mode's jobs and the trial steps placed into them

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 15:00:00.000000
"""
from alembic import op
import sqlalchemy as sa

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'allocations',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('experiment_id', sa.Integer(), nullable=False),
        sa.Column('job_id', sa.String(length=64), nullable=True),
        sa.Column('name', sa.String(length=128), nullable=False),
        sa.Column('job_dir', sa.Text(), nullable=False),
        sa.Column('slots', sa.Integer(), nullable=False),
        sa.Column('token', sa.String(length=64), nullable=False),
        sa.Column('phase', sa.String(length=32), nullable=False),
        sa.Column('native_state', sa.String(length=64), nullable=True),
        sa.Column('nodes', sa.Text(), nullable=True),
        sa.Column('release_requested', sa.Boolean(), nullable=False),
        sa.Column('cancel_requested', sa.Boolean(), nullable=False),
        sa.Column('end_cause', sa.String(length=64), nullable=True),
        sa.Column('submitted_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('last_seen_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['experiment_id'], ['experiments.id'],
                                name=op.f('fk_allocations_experiment_id_experiments'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_allocations')),
    )
    with op.batch_alter_table('allocations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_allocations_experiment_id'), ['experiment_id'],
                              unique=False)
        batch_op.create_index(batch_op.f('ix_allocations_job_id'), ['job_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_allocations_phase'), ['phase'], unique=False)
    op.create_table(
        'allocation_steps',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('allocation_id', sa.Integer(), nullable=False),
        sa.Column('trial_id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('slots', sa.Integer(), nullable=False),
        sa.Column('script_path', sa.Text(), nullable=False),
        sa.Column('phase', sa.String(length=16), nullable=False),
        sa.Column('step_id', sa.String(length=64), nullable=True),
        sa.Column('exit_code', sa.Integer(), nullable=True),
        sa.Column('cancel_requested', sa.Boolean(), nullable=False),
        sa.Column('placed_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['allocation_id'], ['allocations.id'],
                                name=op.f('fk_allocation_steps_allocation_id_allocations'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['trial_id'], ['trials.id'],
                                name=op.f('fk_allocation_steps_trial_id_trials'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_allocation_steps')),
    )
    with op.batch_alter_table('allocation_steps', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_allocation_steps_allocation_id'),
                              ['allocation_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_allocation_steps_trial_id'), ['trial_id'],
                              unique=False)
        batch_op.create_index(batch_op.f('ix_allocation_steps_phase'), ['phase'], unique=False)


def downgrade() -> None:
    op.drop_table('allocation_steps')
    op.drop_table('allocations')
