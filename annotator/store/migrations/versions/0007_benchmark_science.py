"""benchmark science: model predictions, study arms, rubric verification

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30 16:00:00.000000

Tables and columns added by the benchmark-science work (issue 15).
"""

from alembic import op  # noqa: F401

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
