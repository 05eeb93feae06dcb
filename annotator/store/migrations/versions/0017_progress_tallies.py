"""tally: the Progress page's counts per study and annotator, kept as judgments and assignments change

Revision ID: 0017_progress_tallies
Revises: 0016_stored_result
Create Date: 2026-12-04 22:10:00.000000

Filled from the existing rows (annotator.store.tallies.rebuild), so a database upgraded with judgments
in it shows the same numbers as before. No foreign keys (see annotator.store.models.Tally).
"""

import sqlalchemy as sa
from alembic import op
from sqlmodel import Session

revision = "0017_progress_tallies"
down_revision = "0016_stored_result"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tally",
        sa.Column("study_id", sa.Integer(), primary_key=True),
        sa.Column("annotator_id", sa.Integer(), primary_key=True),
        sa.Column("kind", sa.String(length=10), primary_key=True),
        sa.Column("bucket", sa.Integer(), primary_key=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("total", sa.Float(), nullable=False),
    )
    op.create_index("ix_tally_study_kind_bucket", "tally", ["study_id", "kind", "bucket"])
    from annotator.store.tallies import rebuild

    rebuild(Session(bind=op.get_bind()))


def downgrade() -> None:
    op.drop_index("ix_tally_study_kind_bucket", table_name="tally")
    op.drop_table("tally")
