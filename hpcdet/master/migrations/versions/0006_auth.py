"""auth: hashed session/API/web-link tokens, users seen, trial tokens stored hashed

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 17:20:00.000000
"""
import hashlib

from alembic import op
import sqlalchemy as sa

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('auth_tokens',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('username', sa.String(length=128), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_auth_tokens')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_auth_tokens_token_hash'))
    )
    with op.batch_alter_table('auth_tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_auth_tokens_username'), ['username'], unique=False)
    op.create_table('users',
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('first_seen', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_seen', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_users'))
    )
    _hash_trial_tokens()


def _hash_trial_tokens() -> None:
    """Replace each trial's plain token by its sha256; running jobs keep their token files."""
    conn = op.get_bind()
    trials = sa.table('trials', sa.column('id', sa.Integer()), sa.column('token', sa.String()))
    for trial_id, token in conn.execute(sa.select(trials.c.id, trials.c.token)).all():
        digest = hashlib.sha256(token.encode()).hexdigest()
        conn.execute(trials.update().where(trials.c.id == trial_id).values(token=digest))


def downgrade() -> None:
    # Hashed trial tokens cannot be turned back: trials started before the downgrade must be
    # resubmitted to get a token the old code can check.
    op.drop_table('users')
    with op.batch_alter_table('auth_tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_auth_tokens_username'))
    op.drop_table('auth_tokens')
