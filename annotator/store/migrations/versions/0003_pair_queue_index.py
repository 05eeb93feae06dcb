"""covering index pair (id, n_done) for the annotator queue order

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 21:30:00.000000

`labels.next_assignment` orders an annotator's pending items by the pair's `n_done`. Read from the
table, `n_done` sits behind the pair's long texts (question, profile, responses), so SQLite walks
each row's overflow pages: ~40-100 ms for a queue of 10,000 items. The covering index answers the
same lookup from a few bytes per pair (~7 ms).
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

INDEX = "ix_pair_id_n_done"


def upgrade() -> None:
    op.create_index(INDEX, "pair", ["id", "n_done"], unique=False)


def downgrade() -> None:
    op.drop_index(INDEX, table_name="pair")
