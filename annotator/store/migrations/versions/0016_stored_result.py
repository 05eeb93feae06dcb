"""storedresult: the newest validation report and adjudication queue of a study, computed ahead of a visit

Revision ID: 0016_stored_result
Revises: 0015_human_sample
Create Date: 2026-12-04 22:10:00.000000

One row per (study, kind): the pickled result, the data version it covers and when it was computed.
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0016_stored_result"
down_revision = "0015_human_sample"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "storedresult",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("version", sa.Text(), nullable=False),
        sa.Column("newest_judgment", sa.Integer(), nullable=False),
        sa.Column("n_judgments", sa.Integer(), nullable=False),
        sa.Column("computed_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "kind"),
    )


def downgrade() -> None:
    op.drop_table("storedresult")
