"""Shared fixtures: every test gets its own temporary database, never data/annotations.db.

By default that is a SQLite file. When $ANNOTATOR_TEST_POSTGRES holds the admin URL of a PostgreSQL
server (e.g. postgresql+psycopg://annotator:annotator@127.0.0.1:5432/postgres), every test gets a fresh
PostgreSQL database instead, dropped at teardown; tests marked `sqlite_only` are skipped then.
"""

import os
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url

from annotator.store import db

POSTGRES_ENV = "ANNOTATOR_TEST_POSTGRES"
PREPARED = 2  # migrated PostgreSQL databases kept ready for the next tests


def postgres_admin_url() -> str | None:
    """The admin URL of the PostgreSQL server the tests run on, or None for SQLite."""
    return os.environ.get(POSTGRES_ENV) or None


class PostgresDatabases:
    """Creates and drops uniquely named databases on one server.

    A migrated template makes `CREATE DATABASE ... TEMPLATE` the way to a database at the head schema;
    a few such copies are always being prepared in background threads, and drops run there too, so that a
    test rarely waits for the server's file copying.
    """

    def __init__(self, admin_url: str) -> None:
        self.admin_url = make_url(admin_url)
        self.admin = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        self.prefix = f"annotator_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self.template: str | None = None
        self.count = 0
        self.live: list[str] = []  # dropped after the test that made them
        self.kept: list[str] = []  # dropped at the end of the session (module-scoped fixtures)
        self.worker = ThreadPoolExecutor(max_workers=2, thread_name_prefix="pg-test-databases")
        self.prepared: list[Future[str]] = []

    def url(self, name: str) -> str:
        return self.admin_url.set(database=name).render_as_string(hide_password=False)

    def _execute(self, statement: str) -> None:
        with self.admin.connect() as connection:
            connection.execute(text(statement))

    def _new_name(self) -> str:
        self.count += 1
        return f"{self.prefix}_{self.count}"

    def _template(self) -> str:
        if self.template is None:
            name = f"{self.prefix}_tmpl"
            self._execute(f'CREATE DATABASE "{name}"')
            engine = db.make_engine(self.url(name))
            db.upgrade(engine)
            engine.dispose()  # a template must have no connections while it is copied
            self.template = name
        return self.template

    def _copy(self, name: str) -> str:
        self._execute(f'CREATE DATABASE "{name}" TEMPLATE "{self._template()}"')
        return self.url(name)

    def fresh(self, *, migrated: bool = False, keep: bool = False) -> str:
        """The URL of a new database: empty, or at the head schema when `migrated`; dropped after the
        current test, or with `keep` at the end of the session."""
        if migrated:
            self._template()
            while len(self.prepared) < PREPARED + 1:
                self.prepared.append(self.worker.submit(self._copy, self._new_name()))
            url = self.prepared.pop(0).result()
        else:
            name = self._new_name()
            self._execute(f'CREATE DATABASE "{name}"')
            url = self.url(name)
        (self.kept if keep else self.live).append(url)
        return url

    def _drop(self, url: str) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)')

    def drop(self, url: str) -> None:
        """Drop a database (in the background), ending whatever connections are still open to it."""
        if url in self.live:
            self.live.remove(url)
        self.worker.submit(self._drop, url)

    def drop_all(self) -> None:
        for url in list(self.live):
            self.drop(url)

    def close(self) -> None:
        self.drop_all()
        for url in self.kept:
            self.worker.submit(self._drop, url)
        for prepared in self.prepared:
            self.worker.submit(self._drop, prepared.result())
        if self.template is not None:
            self.worker.submit(self._drop, self.url(self.template))
        self.worker.shutdown(wait=True)
        self.admin.dispose()


_POSTGRES: PostgresDatabases | None = None


def postgres() -> PostgresDatabases | None:
    """The session's PostgreSQL database maker, or None when the tests run on SQLite."""
    global _POSTGRES
    admin_url = postgres_admin_url()
    if admin_url is None:
        return None
    if _POSTGRES is None:
        _POSTGRES = PostgresDatabases(admin_url)
    return _POSTGRES


def fresh_db_url(tmp_path: Path, name: str = "db", *, migrated: bool = False, keep: bool = False) -> str:
    """The URL of a new database for this test (for tests that need several, or build their own).

    On SQLite: a file `<tmp_path>/<name>/annotations.db` that does not exist yet (nor does its folder).
    On PostgreSQL: a new empty database, or one already at the head schema when `migrated`; it is
    dropped when the test ends, or with `keep` (for module-scoped fixtures) when the session ends.
    """
    server = postgres()
    if server is None:
        return f"sqlite:///{tmp_path / name / 'annotations.db'}"
    return server.fresh(migrated=migrated, keep=keep)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _POSTGRES is not None:
        _POSTGRES.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if postgres_admin_url() is None:
        return
    skip = pytest.mark.skip(reason=f"SQLite-specific test (${POSTGRES_ENV} is set: running on PostgreSQL)")
    for item in items:
        if item.get_closest_marker("sqlite_only"):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads $ANNOTATOR_DB_URL from the outside or writes the default data/annotations.db;
    PostgreSQL databases made for a test are dropped after it (after the other fixtures' teardown)."""
    monkeypatch.delenv(db.ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    yield
    if _POSTGRES is not None:
        _POSTGRES.drop_all()


@pytest.fixture
def db_url(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The URL of a fresh database: a SQLite file that does not exist yet (in a folder that does not
    exist yet), or (on PostgreSQL) a new database, already migrated when the test also asks for
    `engine` (copying the session's template is faster than migrating)."""
    return fresh_db_url(tmp_path, migrated="engine" in request.fixturenames)


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
