"""hardening: login throttling, sessions, per-study pseudonym secrets

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 16:00:00.000000

Tables and columns added by the hardening work: `usersession` (browser logins, only the
token's sha256 stored), `loginthrottle` (failed logins per client, counted atomically) and
`study.pseudonym_key` (the per-study secret behind pseudonymized exports).
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("study", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("pseudonym_key", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True)
        )

    op.create_table(
        "usersession",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("revoked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("usersession", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_usersession_token_hash"), ["token_hash"], unique=True)
        batch_op.create_index(batch_op.f("ix_usersession_user_id"), ["user_id"], unique=False)

    op.create_table(
        "loginthrottle",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("client_key", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_failed_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("loginthrottle", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_loginthrottle_client_key"), ["client_key"], unique=True)


def downgrade() -> None:
    op.drop_table("loginthrottle")
    op.drop_table("usersession")
    with op.batch_alter_table("study", schema=None) as batch_op:
        batch_op.drop_column("pseudonym_key")
