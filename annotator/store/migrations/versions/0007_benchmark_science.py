"""benchmark science: model predictions, study arms, rubric verification

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30 16:00:00.000000

Tables and columns added by the benchmark-science work: `modelprediction` (a reward
model's score per response or choice per pair) and `assignment.arm` (the between-annotator study
arm; "" in a study without arms). Rubric-support answers are ordinary scores ("support:<k>").
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("assignment", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("arm", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False, server_default="")
        )

    op.create_table(
        "modelprediction",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("pair_id", sa.Integer(), nullable=False),
        sa.Column("model", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("score_chosen", sa.Float(), nullable=True),
        sa.Column("score_rejected", sa.Float(), nullable=True),
        sa.Column("choice", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["pair_id"], ["pair.id"]),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("pair_id", "model"),
    )
    with op.batch_alter_table("modelprediction", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_modelprediction_pair_id"), ["pair_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_modelprediction_study_id"), ["study_id"], unique=False)


def downgrade() -> None:
    op.drop_table("modelprediction")
    with op.batch_alter_table("assignment", schema=None) as batch_op:
        batch_op.drop_column("arm")
