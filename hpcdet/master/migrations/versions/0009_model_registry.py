"""model registry: models (unique names) and their numbered versions, each pinning a checkpoint

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 23:55:00.000000
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    op.create_table('models',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=256), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('metadata', _json(), nullable=False),
    sa.Column('labels', _json(), nullable=False),
    sa.Column('notes', sa.Text(), nullable=False),
    sa.Column('owner', sa.String(length=128), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=True),
    sa.Column('archived', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'],
                            name=op.f('fk_models_workspace_id_workspaces'),
                            ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_models')),
    sa.UniqueConstraint('name', name=op.f('uq_models_name'))
    )
    with op.batch_alter_table('models', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_models_owner'), ['owner'], unique=False)
        batch_op.create_index(batch_op.f('ix_models_workspace_id'), ['workspace_id'],
                              unique=False)
    op.create_table('model_versions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('model_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('checkpoint_uuid', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=256), nullable=False),
    sa.Column('comment', sa.Text(), nullable=False),
    sa.Column('notes', sa.Text(), nullable=False),
    sa.Column('metadata', _json(), nullable=False),
    sa.Column('labels', _json(), nullable=False),
    sa.Column('owner', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['model_id'], ['models.id'],
                            name=op.f('fk_model_versions_model_id_models'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['checkpoint_uuid'], ['checkpoints.uuid'],
                            name=op.f('fk_model_versions_checkpoint_uuid_checkpoints'),
                            ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_model_versions')),
    sa.UniqueConstraint('model_id', 'version', name='uq_model_versions_model_id_version')
    )
    with op.batch_alter_table('model_versions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_model_versions_model_id'), ['model_id'],
                              unique=False)
        batch_op.create_index(batch_op.f('ix_model_versions_checkpoint_uuid'),
                              ['checkpoint_uuid'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('model_versions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_model_versions_checkpoint_uuid'))
        batch_op.drop_index(batch_op.f('ix_model_versions_model_id'))
    op.drop_table('model_versions')
    with op.batch_alter_table('models', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_models_workspace_id'))
        batch_op.drop_index(batch_op.f('ix_models_owner'))
    op.drop_table('models')
