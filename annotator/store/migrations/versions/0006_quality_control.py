"""quality control: controls, training, guideline versions, crowd platforms

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 16:00:00.000000

Tables and columns added by the quality-control work: `pair.control` and `pair.control_of`
(control pairs and the pair they derive from), `judgment.guideline_version`, `crowdlink` (crowd
workers' link entries, only a keyed hash of the worker id) and `traininganswer` (training and
comprehension answers).
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pair", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "control", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False, server_default=""
            )
        )
        batch_op.add_column(sa.Column("control_of", sa.Integer(), nullable=True))
        batch_op.create_foreign_key("fk_pair_control_of_pair", "pair", ["control_of"], ["id"])
    with op.batch_alter_table("judgment", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "guideline_version",
                sqlmodel.sql.sqltypes.AutoString(length=50),
                nullable=False,
                server_default="",
            )
        )

    op.create_table(
        "crowdlink",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("platform", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("worker_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("platform_study", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("platform_session", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("started_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("completed_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "worker_hash"),
    )
    with op.batch_alter_table("crowdlink", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_crowdlink_study_id"), ["study_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_crowdlink_user_id"), ["user_id"], unique=False)

    op.create_table(
        "traininganswer",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("phase", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("item", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("answer", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("correct", sa.Boolean(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("traininganswer", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_traininganswer_study_id"), ["study_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_traininganswer_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    op.drop_table("traininganswer")
    op.drop_table("crowdlink")
    with op.batch_alter_table("judgment", schema=None) as batch_op:
        batch_op.drop_column("guideline_version")
    with op.batch_alter_table("pair", schema=None) as batch_op:
        batch_op.drop_constraint("fk_pair_control_of_pair", type_="foreignkey")
        batch_op.drop_column("control_of")
        batch_op.drop_column("control")
