"""Engines, SQLite pragmas, sessions and migrations (annotator.store.db and `annotator init`)."""

from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel, select
from typer.testing import CliRunner

from annotator.cli import app
from annotator.errors import SchemaError, UserError
from annotator.store import db
from annotator.store.models import Pair, Study
from tests.utils.factories import make_study

runner = CliRunner()
TABLES = {"study", "pair", "user", "assignment", "judgment", "score", "adjudication", "event"}


def test_init_creates_the_schema_at_head(db_url: str) -> None:
    result = runner.invoke(app, ["init", "--db", db_url])
    assert result.exit_code == 0, result.output
    engine = db.make_engine(db_url)
    assert TABLES <= set(inspect(engine).get_table_names())
    assert db.current_revision(engine) == db.head_revision()
    assert db.head_revision() in result.output
    engine.dispose()


def test_init_twice_is_safe(db_url: str) -> None:
    assert runner.invoke(app, ["init", "--db", db_url]).exit_code == 0
    second = runner.invoke(app, ["init", "--db", db_url])
    assert second.exit_code == 0, second.output
    assert f"(was {db.head_revision()})" in second.output


def test_the_migrated_schema_matches_the_models(db_url: str) -> None:
    """Alembic's autogenerate finds nothing to do after `upgrade` on this engine (SQLite or PostgreSQL):
    the migrations create exactly the tables, columns, types and indexes of annotator.store.models."""
    engine = db.make_engine(db_url)
    db.upgrade(engine)
    db.upgrade(engine)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, SQLModel.metadata) == []
    assert db.current_revision(engine) == db.head_revision()
    engine.dispose()


def test_upgrade_keeps_existing_data(engine: Engine, tmp_path: Path) -> None:
    """A database one schema revision behind, holding a study, is upgraded to head with its rows."""
    make_study(engine, tmp_path, 3)
    config = db._alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "-1")
    behind = db.current_revision(engine)
    assert behind is not None and behind != db.head_revision()
    assert db.upgrade(engine) == behind
    assert db.current_revision(engine) == db.head_revision()
    with Session(engine) as session:
        assert len(session.exec(select(Pair)).all()) == 3
        assert session.exec(select(Study.name)).all() == ["s1"]


def test_upgrade_of_an_empty_database_reports_empty(db_url: str) -> None:
    assert db.upgrade(db_url) == "empty"


def _stamp_future(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))


def test_a_newer_schema_is_refused_by_upgrade(engine: Engine) -> None:
    _stamp_future(engine)
    with pytest.raises(SchemaError, match="9999_from_the_future.*newer than this version"):
        db.upgrade(engine)


def test_a_newer_schema_is_refused_by_check_schema(engine: Engine) -> None:
    _stamp_future(engine)
    with pytest.raises(SchemaError, match="upgrade annotator"):
        db.check_schema(engine)


def test_a_newer_schema_gives_one_cli_error_line(engine: Engine, db_url: str) -> None:
    _stamp_future(engine)
    result = runner.invoke(app, ["init", "--db", db_url])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "error:" in result.output and "newer than this version" in result.output


def test_check_schema_refuses_an_empty_database(db_url: str) -> None:
    engine = db.make_engine(db_url)
    with pytest.raises(SchemaError, match="annotator init"):
        db.check_schema(engine)
    engine.dispose()


def test_check_schema_accepts_a_migrated_database(engine: Engine) -> None:
    db.check_schema(engine)


@pytest.mark.sqlite_only
def test_sqlite_connections_get_wal_foreign_keys_and_busy_timeout(engine: Engine) -> None:
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == db.BUSY_TIMEOUT_MS


def test_foreign_keys_are_enforced(engine: Engine) -> None:
    row = {"study_id": 12345, "external_id": "x", "question": "q", "profile": [], "rubric": []}
    row |= {"chosen": "c", "rejected": "r", "meta": {}, "content_hash": "h"}
    with pytest.raises(IntegrityError, match="(?i)foreign key"), db.session_scope(engine) as session:
        session.add(Pair(**row))


@pytest.mark.sqlite_only
def test_the_folder_of_a_sqlite_file_is_created(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "labels.db"
    engine = db.make_engine(f"sqlite:///{target}")
    db.upgrade(engine)
    engine.dispose()
    assert target.is_file()


def test_a_bad_url_is_a_user_error() -> None:
    with pytest.raises(UserError, match="not a database URL"):
        db.make_engine("not a url")


def test_url_comes_from_argument_then_environment_then_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert db.resolve_url(None) == db.DEFAULT_URL
    monkeypatch.setenv(db.ENV_VAR, "sqlite:///from-env.db")
    assert db.resolve_url(None) == "sqlite:///from-env.db"
    assert db.resolve_url("sqlite:///given.db") == "sqlite:///given.db"


def test_session_scope_rolls_back_on_error(engine: Engine) -> None:
    with pytest.raises(RuntimeError), db.session_scope(engine) as session:
        session.add(Study(name="doomed", config={}))
        session.flush()
        raise RuntimeError("boom")
    with Session(engine) as session:
        assert session.exec(select(Study)).all() == []
