"""pair.owner: the profile's owner a pairs file names, on the pair itself

Revision ID: 0012_pair_owner
Revises: 0011_owner_links
Create Date: 2026-12-04 00:55:00.000000

The owner (an `owner` or `user_id` key of the record, "" when none) and an index on (study_id, owner)
for an owner's pairs. Pairs imported before keep "" (their records are still in the metadata).
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0012_pair_owner"
down_revision = "0011_owner_links"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pair", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "owner", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False, server_default=""
            )
        )
        batch_op.create_index("ix_pair_study_id_owner", ["study_id", "owner"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("pair", schema=None) as batch_op:
        batch_op.drop_index("ix_pair_study_id_owner")
        batch_op.drop_column("owner")
