"""metric_series_index: one metric's series in step order (the pages' downsampled charts)

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 11:00:00.000000
"""
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_metrics_trial_group_name_step', 'metrics',
                    ['trial_id', 'group', 'name', 'archived', 'steps_completed', 'value'])


def downgrade() -> None:
    op.drop_index('ix_metrics_trial_group_name_step', table_name='metrics')
