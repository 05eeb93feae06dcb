"""append-only audit table: triggers refuse UPDATE and DELETE on `event`

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 10:00:00.000000
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

MESSAGE = "event is append-only"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            f"""
            CREATE OR REPLACE FUNCTION event_append_only() RETURNS trigger AS $$
            BEGIN
                RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'insufficient_privilege';
            END;
            $$ LANGUAGE plpgsql
            """
        )
        op.execute(
            "CREATE TRIGGER event_append_only BEFORE UPDATE OR DELETE ON event "
            "FOR EACH ROW EXECUTE FUNCTION event_append_only()"
        )
        op.execute(
            "CREATE TRIGGER event_no_truncate BEFORE TRUNCATE ON event "
            "FOR EACH STATEMENT EXECUTE FUNCTION event_append_only()"
        )
        return
    for action in ("UPDATE", "DELETE"):
        op.execute(
            f"CREATE TRIGGER event_no_{action.lower()} BEFORE {action} ON event "
            f"BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS event_no_truncate ON event")
        op.execute("DROP TRIGGER IF EXISTS event_append_only ON event")
        op.execute("DROP FUNCTION IF EXISTS event_append_only()")
        return
    op.execute("DROP TRIGGER IF EXISTS event_no_update")
    op.execute("DROP TRIGGER IF EXISTS event_no_delete")
