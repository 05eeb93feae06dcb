"""ownerjudgment: the profile owner's own judgments, kept apart from the third-party judgments

Revision ID: 0010_owners
Revises: 0009_judges
Create Date: 2026-12-04 00:40:00.000000

One row per (pair, owner): the owner's preference (-2..2, positive = chosen), confidence, the side chosen
was shown on and the owner's answer per rubric aspect (0 no, 1 partly, 2 yes). The report adds them as
the owners' rows; no third-party service reads them.
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0010_owners"
down_revision = "0009_judges"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ownerjudgment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("pair_id", sa.Integer(), nullable=False),
        sa.Column("owner", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("preference", sa.Integer(), nullable=False),
        sa.Column("confidence", sa.Integer(), nullable=True),
        sa.Column("side_chosen", sqlmodel.sql.sqltypes.AutoString(length=1), nullable=False),
        sa.Column("aspects", sa.JSON(), nullable=False),
        sa.Column("submitted_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["pair_id"], ["pair.id"]),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("pair_id", "owner"),
    )
    with op.batch_alter_table("ownerjudgment", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ownerjudgment_pair_id"), ["pair_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_ownerjudgment_study_id"), ["study_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("ownerjudgment", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ownerjudgment_study_id"))
        batch_op.drop_index(batch_op.f("ix_ownerjudgment_pair_id"))
    op.drop_table("ownerjudgment")
