"""pair.sample_probability, pair.in_sample: the human sample the tool drew for a judged study

Revision ID: 0015_human_sample
Revises: 0014_owner_scores
Create Date: 2026-12-04 07:45:00.000000

Each main pair's inclusion probability, recorded when the sample is drawn, and whether the draw took
it; both NULL for a study without a drawn sample (pairs saved before keep NULL).
"""

import sqlalchemy as sa
from alembic import op

revision = "0015_human_sample"
down_revision = "0014_owner_scores"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pair", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sample_probability", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("in_sample", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("pair", schema=None) as batch_op:
        batch_op.drop_column("in_sample")
        batch_op.drop_column("sample_probability")
