"""The append-only audit log cannot be switched off silently: `annotator init` restores its triggers
(and says so), `annotator serve` refuses to start without them. Both engines."""

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DatabaseError
from typer.testing import CliRunner

from annotator import server
from annotator.cli import app
from annotator.store import db
from annotator.store.models import Event
from tests.utils.databases import postgres_admin_url


def _switch_off(engine: Engine, how: str) -> None:
    postgres = engine.dialect.name == "postgresql"
    statements = {
        "drop": ["DROP TRIGGER event_append_only ON event"]
        if postgres
        else ["DROP TRIGGER event_no_update", "DROP TRIGGER event_no_delete"],
        "disable": ["ALTER TABLE event DISABLE TRIGGER event_append_only"],
        "defang": [
            "CREATE OR REPLACE FUNCTION event_append_only() RETURNS trigger AS $$ BEGIN RETURN NEW; END; "
            "$$ LANGUAGE plpgsql"
        ]
        if postgres
        else [
            "DROP TRIGGER event_no_update",
            "CREATE TRIGGER event_no_update BEFORE UPDATE ON event BEGIN SELECT 1; END",
        ],
    }[how]
    with engine.begin() as connection:
        for statement in statements:
            connection.execute(text(statement))


def _rewrite_event(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("UPDATE event SET action = 'rewritten'"))


# PostgreSQL can also disable a trigger without dropping it (SQLite has no such statement).
WAYS = ["drop", "defang", *(["disable"] if postgres_admin_url() else [])]


@pytest.mark.parametrize("how", WAYS)
def test_init_restores_a_switched_off_audit_log_and_serve_refuses_without_it(
    env_db: str, engine: Engine, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with db.session_scope(engine) as session:
        session.add(Event(user_id=None, action="import", detail={}))
    _switch_off(engine, how)
    _rewrite_event(engine)  # the attack works: the log can be rewritten now
    assert db.audit_problems(engine)

    def must_not_start(*_args: object, **_kwargs: object) -> int:
        raise AssertionError("serve started on a database whose audit log can be rewritten")

    monkeypatch.setattr(server, "run", must_not_start)
    refused = CliRunner().invoke(app, ["serve"])
    assert refused.exit_code == 1
    assert "is not append-only" in refused.output and "run `annotator init`" in refused.output
    assert "Traceback" not in refused.output

    restored = CliRunner().invoke(app, ["init"])
    assert restored.exit_code == 0, restored.output
    assert "restored the audit log's append-only triggers" in restored.output
    assert db.audit_problems(engine) == []
    with pytest.raises(DatabaseError, match="append-only"):
        _rewrite_event(engine)
    with pytest.raises(DatabaseError, match="append-only"), engine.begin() as connection:
        connection.execute(text("DELETE FROM event"))

    again = CliRunner().invoke(app, ["init"])  # nothing to restore: nothing said
    assert again.exit_code == 0 and "restored" not in again.output


def test_an_intact_audit_log_has_no_problems(engine: Engine) -> None:
    assert db.audit_problems(engine) == []
    assert db.restore_audit(engine) == []
    db.check_audit(engine)
