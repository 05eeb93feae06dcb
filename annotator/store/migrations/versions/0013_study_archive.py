"""study.archived_at: an archived study is hidden from every picker, its data kept, restorable

Revision ID: 0013_study_archive
Revises: 0012_pair_owner
Create Date: 2026-12-04 04:10:00.000000

NULL for a study in use (every study before this revision).
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0013_study_archive"
down_revision = "0012_pair_owner"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("study", sa.Column("archived_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))


def downgrade() -> None:
    # Not a batch copy of the table: on SQLite that drops `study`, which the other tables point at.
    op.execute("ALTER TABLE study DROP COLUMN archived_at")
