"""Shared fixtures: every test gets its own temporary SQLite database, never data/annotations.db."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from annotator import db


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads $ANNOTATOR_DB_URL from the outside or writes the default data/annotations.db."""
    monkeypatch.delenv(db.ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """The URL of a SQLite file that does not exist yet (in a folder that does not exist yet)."""
    return f"sqlite:///{tmp_path / 'db' / 'annotations.db'}"


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """An engine on a fresh database migrated to the head schema."""
    engine = db.make_engine(db_url)
    db.upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def env_db(db_url: str, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> str:
    """A migrated database whose URL is in $ANNOTATOR_DB_URL (for CLI calls without --db)."""
    monkeypatch.setenv(db.ENV_VAR, db_url)
    return db_url
