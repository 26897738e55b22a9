"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-21 05:36:27.235664
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('experiments',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=256), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('labels', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('owner', sa.String(length=128), nullable=False),
    sa.Column('state', sa.String(length=32), nullable=False),
    sa.Column('config', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('original_config', sa.Text(), nullable=False),
    sa.Column('context', sa.LargeBinary(), nullable=False),
    sa.Column('searcher_name', sa.String(length=32), nullable=False),
    sa.Column('resource_pool', sa.String(length=128), nullable=True),
    sa.Column('archived', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_experiments'))
    )
    with op.batch_alter_table('experiments', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_experiments_owner'), ['owner'], unique=False)
        batch_op.create_index(batch_op.f('ix_experiments_state'), ['state'], unique=False)

    op.create_table('state_changes',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('entity_kind', sa.String(length=16), nullable=False),
    sa.Column('entity_id', sa.Integer(), nullable=False),
    sa.Column('from_state', sa.String(length=32), nullable=True),
    sa.Column('to_state', sa.String(length=32), nullable=False),
    sa.Column('cause', sa.Text(), nullable=False),
    sa.Column('actor', sa.String(length=128), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_state_changes'))
    )
    with op.batch_alter_table('state_changes', schema=None) as batch_op:
        batch_op.create_index('ix_state_changes_entity', ['entity_kind', 'entity_id'], unique=False)

    op.create_table('trials',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('experiment_id', sa.Integer(), nullable=False),
    sa.Column('state', sa.String(length=32), nullable=False),
    sa.Column('hparams', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('seed', sa.BigInteger(), nullable=False),
    sa.Column('restarts', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('steps_completed', sa.BigInteger(), nullable=False),
    sa.Column('token', sa.String(length=64), nullable=False),
    sa.Column('job_dir', sa.Text(), nullable=False),
    sa.Column('latest_checkpoint', sa.String(length=64), nullable=True),
    sa.Column('best_validation', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('latest_validation', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['experiment_id'], ['experiments.id'], name=op.f('fk_trials_experiment_id_experiments'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_trials'))
    )
    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_trials_experiment_id'), ['experiment_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_trials_state'), ['state'], unique=False)

    op.create_table('checkpoints',
    sa.Column('uuid', sa.String(length=64), nullable=False),
    sa.Column('trial_id', sa.Integer(), nullable=False),
    sa.Column('steps_completed', sa.BigInteger(), nullable=False),
    sa.Column('metadata', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('resources', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('validation_metrics', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('reported_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['trial_id'], ['trials.id'], name=op.f('fk_checkpoints_trial_id_trials'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('uuid', name=op.f('pk_checkpoints'))
    )
    with op.batch_alter_table('checkpoints', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_checkpoints_trial_id'), ['trial_id'], unique=False)

    op.create_table('jobs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('trial_id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.String(length=64), nullable=True),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('cancel_requested', sa.Boolean(), nullable=False),
    sa.Column('phase', sa.String(length=32), nullable=True),
    sa.Column('native_state', sa.String(length=64), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('exit_code', sa.Integer(), nullable=True),
    sa.Column('nodes', sa.Text(), nullable=True),
    sa.Column('script_path', sa.Text(), nullable=False),
    sa.Column('log_offsets', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('submitted_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['trial_id'], ['trials.id'], name=op.f('fk_jobs_trial_id_trials'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs'))
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_jobs_active'), ['active'], unique=False)
        batch_op.create_index(batch_op.f('ix_jobs_job_id'), ['job_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_jobs_trial_id'), ['trial_id'], unique=False)

    op.create_table('metrics',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('trial_id', sa.Integer(), nullable=False),
    sa.Column('group', sa.String(length=32), nullable=False),
    sa.Column('steps_completed', sa.BigInteger(), nullable=False),
    sa.Column('name', sa.String(length=256), nullable=False),
    sa.Column('value', sa.Float(), nullable=False),
    sa.Column('reported_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['trial_id'], ['trials.id'], name=op.f('fk_metrics_trial_id_trials'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_metrics'))
    )
    with op.batch_alter_table('metrics', schema=None) as batch_op:
        batch_op.create_index('ix_metrics_trial_group_step', ['trial_id', 'group', 'steps_completed'], unique=False)

    op.create_table('trial_logs',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('trial_id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.String(length=64), nullable=True),
    sa.Column('rank', sa.Integer(), nullable=True),
    sa.Column('stream', sa.String(length=8), nullable=False),
    sa.Column('line', sa.Text(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['trial_id'], ['trials.id'], name=op.f('fk_trial_logs_trial_id_trials'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_trial_logs'))
    )
    with op.batch_alter_table('trial_logs', schema=None) as batch_op:
        batch_op.create_index('ix_trial_logs_trial_id_id', ['trial_id', 'id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('trial_logs', schema=None) as batch_op:
        batch_op.drop_index('ix_trial_logs_trial_id_id')

    op.drop_table('trial_logs')
    with op.batch_alter_table('metrics', schema=None) as batch_op:
        batch_op.drop_index('ix_metrics_trial_group_step')

    op.drop_table('metrics')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_jobs_trial_id'))
        batch_op.drop_index(batch_op.f('ix_jobs_job_id'))
        batch_op.drop_index(batch_op.f('ix_jobs_active'))

    op.drop_table('jobs')
    with op.batch_alter_table('checkpoints', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_checkpoints_trial_id'))

    op.drop_table('checkpoints')
    with op.batch_alter_table('trials', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_trials_state'))
        batch_op.drop_index(batch_op.f('ix_trials_experiment_id'))

    op.drop_table('trials')
    with op.batch_alter_table('state_changes', schema=None) as batch_op:
        batch_op.drop_index('ix_state_changes_entity')

    op.drop_table('state_changes')
    with op.batch_alter_table('experiments', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_experiments_state'))
        batch_op.drop_index(batch_op.f('ix_experiments_owner'))

    op.drop_table('experiments')
