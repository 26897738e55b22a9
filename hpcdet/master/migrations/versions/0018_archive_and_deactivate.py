"""workspaces and projects may be archived; users may be deactivated and have a display name;
user groups, their members and their roles in workspaces

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-29 19:00:00.000000
"""
from alembic import op
import sqlalchemy as sa

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ('workspaces', 'projects'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('archived', sa.Boolean(), nullable=False,
                                          server_default=sa.false()))
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('active', sa.Boolean(), nullable=False,
                                      server_default=sa.true()))
        batch_op.add_column(sa.Column('display_name', sa.String(length=256), nullable=False,
                                      server_default=''))
    op.create_table('user_groups',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('created_by', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_user_groups')),
    sa.UniqueConstraint('name', name=op.f('uq_user_groups_name'))
    )
    op.create_table('user_group_members',
    sa.Column('group_id', sa.Integer(), nullable=False),
    sa.Column('user', sa.String(length=128), nullable=False),
    sa.ForeignKeyConstraint(['group_id'], ['user_groups.id'],
                            name=op.f('fk_user_group_members_group_id_user_groups'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('group_id', 'user', name=op.f('pk_user_group_members'))
    )
    with op.batch_alter_table('user_group_members', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_user_group_members_user'), ['user'], unique=False)
    op.create_table('workspace_group_roles',
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('group_id', sa.Integer(), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.ForeignKeyConstraint(['group_id'], ['user_groups.id'],
                            name=op.f('fk_workspace_group_roles_group_id_user_groups'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'],
                            name=op.f('fk_workspace_group_roles_workspace_id_workspaces'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('workspace_id', 'group_id', name=op.f('pk_workspace_group_roles'))
    )
    with op.batch_alter_table('workspace_group_roles', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_workspace_group_roles_group_id'), ['group_id'],
                              unique=False)


def downgrade() -> None:
    op.drop_table('workspace_group_roles')
    op.drop_table('user_group_members')
    op.drop_table('user_groups')
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('display_name')
        batch_op.drop_column('active')
    for table in ('projects', 'workspaces'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column('archived')
