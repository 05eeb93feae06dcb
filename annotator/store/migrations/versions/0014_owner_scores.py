"""ownerjudgment.scores: the profile owner's quality ratings of each response

Revision ID: 0014_owner_scores
Revises: 0013_study_archive
Create Date: 2026-12-04 04:50:00.000000

{"chosen" | "rejected": {dimension: point}}; judgments saved before keep {} (no quality asked).
"""

import sqlalchemy as sa
from alembic import op

revision = "0014_owner_scores"
down_revision = "0013_study_archive"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ownerjudgment", schema=None) as batch_op:
        batch_op.add_column(sa.Column("scores", sa.JSON(), nullable=False, server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("ownerjudgment", schema=None) as batch_op:
        batch_op.drop_column("scores")
