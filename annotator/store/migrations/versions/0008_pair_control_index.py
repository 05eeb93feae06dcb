"""covering index pair (study_id, control) for the training and control lookups

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30 19:20:00.000000

Every run of the rating page asks whether the study has training pairs (`training.status` and
`labels.show`: a count of the study's pairs with `control = 'training'`). Read from the table,
`control` sits behind each pair's long texts, so SQLite walks every pair's overflow pages: 15-25 ms
per count on a study of 10,000 pairs, twice per item. The covering index answers it from a few bytes
per pair.
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

INDEX = "ix_pair_study_id_control"


def upgrade() -> None:
    op.create_index(INDEX, "pair", ["study_id", "control"], unique=False)


def downgrade() -> None:
    op.drop_index(INDEX, table_name="pair")
