"""workspaces, their members and projects; experiments, tasks and templates may belong to one

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 17:15:00.000000
"""
from alembic import op
import sqlalchemy as sa

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

_OWNED = ('experiments', 'command_tasks', 'templates')


def upgrade() -> None:
    op.create_table('workspaces',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('created_by', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_workspaces')),
    sa.UniqueConstraint('name', name=op.f('uq_workspaces_name'))
    )
    op.create_table('workspace_members',
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('user', sa.String(length=128), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('added_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'],
                            name=op.f('fk_workspace_members_workspace_id_workspaces'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('workspace_id', 'user', name=op.f('pk_workspace_members'))
    )
    with op.batch_alter_table('workspace_members', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_workspace_members_user'), ['user'], unique=False)
    op.create_table('projects',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('created_by', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'],
                            name=op.f('fk_projects_workspace_id_workspaces'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_projects')),
    sa.UniqueConstraint('workspace_id', 'name', name='uq_projects_workspace_id_name')
    )
    with op.batch_alter_table('projects', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_projects_workspace_id'), ['workspace_id'],
                              unique=False)
    for table in _OWNED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('workspace_id', sa.Integer(), nullable=True))
            batch_op.create_index(batch_op.f(f'ix_{table}_workspace_id'), ['workspace_id'],
                                  unique=False)
            batch_op.create_foreign_key(batch_op.f(f'fk_{table}_workspace_id_workspaces'),
                                        'workspaces', ['workspace_id'], ['id'],
                                        ondelete='RESTRICT')
    with op.batch_alter_table('experiments', schema=None) as batch_op:
        batch_op.add_column(sa.Column('project_id', sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f('ix_experiments_project_id'), ['project_id'],
                              unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_experiments_project_id_projects'),
                                    'projects', ['project_id'], ['id'], ondelete='RESTRICT')


def downgrade() -> None:
    with op.batch_alter_table('experiments', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_experiments_project_id_projects'),
                                 type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_experiments_project_id'))
        batch_op.drop_column('project_id')
    for table in _OWNED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(batch_op.f(f'fk_{table}_workspace_id_workspaces'),
                                     type_='foreignkey')
            batch_op.drop_index(batch_op.f(f'ix_{table}_workspace_id'))
            batch_op.drop_column('workspace_id')
    op.drop_table('projects')
    op.drop_table('workspace_members')
    op.drop_table('workspaces')
