"""annotator workspace: drafts, flags, opened posts

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 16:00:00.000000

Tables and columns added by the workspace work: `draft` (the unsaved answers on an item,
one per assignment), `assignment.flag_reason` (an item flagged as broken, status "flagged") and
`judgment.opened_posts` (the profile posts the annotator opened).
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("assignment", schema=None) as batch_op:
        batch_op.add_column(sa.Column("flag_reason", sa.Text(), nullable=True))
    with op.batch_alter_table("judgment", schema=None) as batch_op:
        batch_op.add_column(sa.Column("opened_posts", sa.JSON(), nullable=True))

    op.create_table(
        "draft",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("answers", sa.JSON(), nullable=False),
        sa.Column("opened_posts", sa.JSON(), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["assignment_id"], ["assignment.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("draft", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_draft_assignment_id"), ["assignment_id"], unique=True)
        batch_op.create_index(batch_op.f("ix_draft_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    op.drop_table("draft")
    with op.batch_alter_table("judgment", schema=None) as batch_op:
        batch_op.drop_column("opened_posts")
    with op.batch_alter_table("assignment", schema=None) as batch_op:
        batch_op.drop_column("flag_reason")
