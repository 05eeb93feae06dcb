"""ownerlink: single-use, expiring, revocable links for profile owners

Revision ID: 0011_owner_links
Revises: 0010_owners
Create Date: 2026-12-04 00:45:00.000000

One row per link a researcher made for an owner of a study: the sha256 of its token (cleared when it is
spent), when it expires, was used or revoked.
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0011_owner_links"
down_revision = "0010_owners"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ownerlink",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("owner", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("used_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("revoked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["study_id"], ["study.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("ownerlink", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ownerlink_study_id"), ["study_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_ownerlink_token_hash"), ["token_hash"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("ownerlink", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ownerlink_token_hash"))
        batch_op.drop_index(batch_op.f("ix_ownerlink_study_id"))
    op.drop_table("ownerlink")
