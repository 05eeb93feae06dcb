"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29 20:49:40.995934
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "study",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("study", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_study_name"), ["name"], unique=True)

    op.create_table(
        "user",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("username", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("role", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("password_hash", sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("failed_logins", sa.Integer(), nullable=False),
        sa.Column("last_failed_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True),
        sa.Column("token_expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("guidelines_ack_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("user", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_user_token_hash"), ["token_hash"], unique=False)
        batch_op.create_index(batch_op.f("ix_user_username"), ["username"], unique=True)

    op.create_table(
        "event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("action", sqlmodel.sql.sqltypes.AutoString(length=50), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["user.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_event_action"), ["action"], unique=False)
        batch_op.create_index(batch_op.f("ix_event_at"), ["at"], unique=False)

    op.create_table(
        "pair",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("external_id", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("profile", sa.JSON(), nullable=False),
        sa.Column("rubric", sa.JSON(), nullable=False),
        sa.Column("narrative", sa.Text(), nullable=False),
        sa.Column("category", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("chosen", sa.Text(), nullable=False),
        sa.Column("rejected", sa.Text(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("content_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("is_gold", sa.Boolean(), nullable=False),
        sa.Column("n_done", sa.Integer(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["study.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "external_id"),
    )
    with op.batch_alter_table("pair", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_pair_study_id"), ["study_id"], unique=False)

    op.create_table(
        "adjudication",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("pair_id", sa.Integer(), nullable=False),
        sa.Column("adjudicator_id", sa.Integer(), nullable=True),
        sa.Column("method", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("rule", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("preference", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column("keep", sa.Boolean(), nullable=False),
        sa.Column("decision", sa.JSON(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["adjudicator_id"],
            ["user.id"],
        ),
        sa.ForeignKeyConstraint(
            ["pair_id"],
            ["pair.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("adjudication", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_adjudication_pair_id"), ["pair_id"], unique=False)

    op.create_table(
        "assignment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("pair_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("chosen_side", sqlmodel.sql.sqltypes.AutoString(length=1), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("skip_count", sa.Integer(), nullable=False),
        sa.Column("skip_reason", sa.Text(), nullable=True),
        sa.Column("shown_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("completed_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("current_judgment_id", sa.Integer(), nullable=True),
        sa.Column("revisions", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["annotator_id"],
            ["user.id"],
        ),
        sa.ForeignKeyConstraint(
            ["pair_id"],
            ["pair.id"],
        ),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["study.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("pair_id", "annotator_id"),
    )
    with op.batch_alter_table("assignment", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_assignment_pair_id"), ["pair_id"], unique=False)
        batch_op.create_index(
            "ix_assignment_queue", ["annotator_id", "study_id", "status", "position"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_assignment_study_id"), ["study_id"], unique=False)

    op.create_table(
        "judgment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("submission_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("submitted_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("time_on_task_s", sa.Float(), nullable=False),
        sa.Column("preference", sa.Integer(), nullable=False),
        sa.Column("confidence", sa.Integer(), nullable=True),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("flag", sa.Boolean(), nullable=False),
        sa.Column("flag_reason", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["assignment_id"],
            ["assignment.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("assignment_id", "revision"),
        sa.UniqueConstraint("submission_id"),
    )
    with op.batch_alter_table("judgment", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_judgment_assignment_id"), ["assignment_id"], unique=False)

    op.create_table(
        "score",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("judgment_id", sa.Integer(), nullable=False),
        sa.Column("response", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column("item", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["judgment_id"],
            ["judgment.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("score", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_score_judgment_id"), ["judgment_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("score", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_score_judgment_id"))

    op.drop_table("score")
    with op.batch_alter_table("judgment", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_judgment_assignment_id"))

    op.drop_table("judgment")
    with op.batch_alter_table("assignment", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_assignment_study_id"))
        batch_op.drop_index("ix_assignment_queue")
        batch_op.drop_index(batch_op.f("ix_assignment_pair_id"))

    op.drop_table("assignment")
    with op.batch_alter_table("adjudication", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_adjudication_pair_id"))

    op.drop_table("adjudication")
    with op.batch_alter_table("pair", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_pair_study_id"))

    op.drop_table("pair")
    with op.batch_alter_table("event", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_event_at"))
        batch_op.drop_index(batch_op.f("ix_event_action"))

    op.drop_table("event")
    with op.batch_alter_table("user", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_user_username"))
        batch_op.drop_index(batch_op.f("ix_user_token_hash"))

    op.drop_table("user")
    with op.batch_alter_table("study", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_study_name"))

    op.drop_table("study")
