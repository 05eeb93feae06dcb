"""Temporary databases for tests: a SQLite file per test, or (with $ANNOTATOR_TEST_POSTGRES) a fresh
PostgreSQL database per test, copied from a migrated template and dropped afterwards."""

import os
import shutil
import sqlite3
import tempfile
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

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
        self.copy_option = self._copy_option()

    def url(self, name: str) -> str:
        return self.admin_url.set(database=name).render_as_string(hide_password=False)

    def _copy_option(self) -> str:
        """`STRATEGY FILE_COPY` where the server has the option (PostgreSQL 15 on): a copy of a small
        template by files and a checkpoint instead of its every block through the WAL (0.03 s instead
        of 0.12 s per database on this machine; a test cluster runs with fsync off)."""
        with self.admin.connect() as connection:
            version = int(connection.execute(text("SHOW server_version_num")).scalar_one())
        return " STRATEGY FILE_COPY" if version >= 150000 else ""

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
        self._execute(f'CREATE DATABASE "{name}" TEMPLATE "{self._template()}"{self.copy_option}')
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

    def copy(self, source_url: str) -> str:
        """A new database holding what `source_url` holds (which no connection may be open to);
        dropped after the current test."""
        name = self._new_name()
        self._execute(
            f'CREATE DATABASE "{name}" TEMPLATE "{make_url(source_url).database}"{self.copy_option}'
        )
        url = self.url(name)
        self.live.append(url)
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


_POSTGRES: PostgresDatabases | None = None  # made on first use, closed by conftest


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

    On SQLite: a file `<tmp_path>/<name>/annotations.db` that does not exist yet (nor does its folder),
    or a copy of a migrated file when `migrated`.
    On PostgreSQL: a new empty database, or one already at the head schema when `migrated`; it is
    dropped when the test ends, or with `keep` (for module-scoped fixtures) when the session ends.
    """
    server = postgres()
    if server is not None:
        return server.fresh(migrated=migrated, keep=keep)
    path = tmp_path / name / "annotations.db"
    if migrated:  # a copy of a migrated file (faster than migrating), its owner-only mode kept
        path.parent.mkdir(parents=True)
        shutil.copy(_sqlite_template(), path)
    return f"sqlite:///{path}"


_SQLITE_TEMPLATE: Path | None = None  # a migrated SQLite file, made on first use


def _sqlite_template() -> Path:
    global _SQLITE_TEMPLATE
    if _SQLITE_TEMPLATE is None:
        path = Path(tempfile.mkdtemp(prefix="annotator-template-")) / "annotations.db"
        engine = db.make_engine(f"sqlite:///{path}")
        db.upgrade(engine)
        engine.dispose()  # the last connection's close folds the WAL into the file
        _SQLITE_TEMPLATE = path
    return _SQLITE_TEMPLATE


def built_once(folder: Path, build: Callable[[Engine], object]) -> str:
    """The URL of a database at the head schema that `build` filled, kept for the session and with no
    connection left open: the source a module-scoped fixture hands to :func:`copy_of`."""
    url = fresh_db_url(folder, migrated=True, keep=True)
    engine = db.make_engine(url)
    try:
        build(engine)
    finally:
        engine.dispose()
    return url


def copy_of(source_url: str, tmp_path: Path, name: str = "db") -> str:
    """The URL of a new database for this test that holds what `source_url` holds: a study built once
    per module (with `fresh_db_url(..., keep=True)`, its engine disposed) and copied for each test."""
    server = postgres()
    if server is not None:
        return server.copy(source_url)
    target = tmp_path / name / "annotations.db"
    target.parent.mkdir(parents=True)
    source, copy = sqlite3.connect(str(make_url(source_url).database)), sqlite3.connect(target)
    try:
        source.backup(copy)
    finally:
        source.close()
        copy.close()
    return f"sqlite:///{target}"


@contextmanager
def engine_on(url: str) -> Iterator[Engine]:
    """An engine on the database at `url` (a test's copy), disposed when the block ends."""
    engine = db.make_engine(url)
    try:
        yield engine
    finally:
        engine.dispose()


def close_databases() -> None:
    """Drop every database the session made (at the end of the test session), and the SQLite template."""
    if _SQLITE_TEMPLATE is not None:
        shutil.rmtree(_SQLITE_TEMPLATE.parent, ignore_errors=True)
    if _POSTGRES is not None:
        _POSTGRES.close()


def drop_test_databases() -> None:
    """Drop the databases made for the test that just ended."""
    if _POSTGRES is not None:
        _POSTGRES.drop_all()
