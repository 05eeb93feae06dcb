"""judgerating: LLM judges' ratings and preferences, kept apart from the human judgments

Revision ID: 0009_judges
Revises: 0008
Create Date: 2026-12-01 13:50:00.000000

One row per (pair, judge, order, response, item): a judge's rating of one response on one item, or its
pair-level preference (response and item ""). The report compares judges with the annotators by the
alternative annotator test; judge rows never enter the human label frame.
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0009_judges"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "judgerating",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("pair_id", sa.Integer(), nullable=False),
        sa.Column("judge", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("order_shown", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("response", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column("item", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("preference", sa.Float(), nullable=True),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["pair_id"], ["pair.id"]),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("pair_id", "judge", "order_shown", "response", "item"),
    )
    with op.batch_alter_table("judgerating", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_judgerating_pair_id"), ["pair_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_judgerating_study_id"), ["study_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("judgerating", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_judgerating_study_id"))
        batch_op.drop_index(batch_op.f("ix_judgerating_pair_id"))
    op.drop_table("judgerating")
