"""`annotator backup`: a consistent copy of a SQLite database while annotators keep working.

SQLite: the online backup API (`sqlite3.Connection.backup`) copies every page in one step inside one
read transaction; in WAL mode that is a snapshot, so writers are not blocked and the copy is the
database as of one moment (never half a submit). The copy is written to a temporary file next to the
target, checked with `PRAGMA quick_check`, and only then renamed over the target (so a failed or
interrupted backup never leaves a half-written FILE). An existing FILE is refused unless `force`.

PostgreSQL: this command does not copy anything; it explains how to use `pg_dump`, the tool made for
it (a consistent dump of a live database; `pg_restore` reads it back).
"""

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError

from annotator.errors import UserError, os_failure
from annotator.store import db
from annotator.store.models import Event


@dataclass(frozen=True)
class BackupSummary:
    path: Path
    bytes: int
    schema: str

    def __str__(self) -> str:
        return f"backed up to {self.path} ({self.bytes / 1e6:.1f} MB, schema {self.schema})"


def pg_dump_hint(engine: Engine | URL) -> str:
    """The one-line advice for a database that is not SQLite (from its URL: no driver is needed)."""
    parsed = engine if isinstance(engine, URL) else engine.url
    url = parsed.set(drivername=parsed.get_backend_name()).render_as_string(hide_password=True)
    return (
        f"`annotator backup` copies SQLite files; for {parsed.get_backend_name()} use its own tool, "
        f"e.g. pg_dump --format=custom --file FILE '{url}' (restore with pg_restore)"
    )


def _sqlite_engine(engine: Engine | str) -> Engine:
    """The SQLite engine behind `engine` (or a URL); the pg_dump advice for another engine, before any
    connection or driver import."""
    if isinstance(engine, str):
        try:
            parsed = make_url(engine)
        except ArgumentError:
            raise UserError(f"not a database URL: {engine!r}") from None
        if parsed.get_backend_name() != "sqlite":
            raise UserError(pg_dump_hint(parsed))
        engine = db.make_engine(engine, create=False)  # a backup reads its database, never makes one
    if engine.dialect.name != "sqlite":
        raise UserError(pg_dump_hint(engine))
    return engine


def _writable_target(target: Path, database: str, force: bool) -> Path:
    """`target`, once it is a file name in an existing folder that is not the database itself (and,
    unless `force`, does not exist yet)."""
    if target.exists() and not force:
        raise UserError(f"{target} already exists; give --force to overwrite it")
    if target.exists() and target.is_dir():
        raise UserError(f"{target} is a folder; give a file name")
    source_path = Path(database.removeprefix("file:").split("?")[0])
    if target.exists() and source_path.exists() and target.resolve() == source_path.resolve():
        raise UserError(f"{target} is the database itself; choose another file")
    if not target.parent.is_dir():
        raise UserError(f"the folder {target.parent} does not exist")
    return target


def _copy_checked(engine: Engine, temporary: Path, target: Path) -> None:
    """Copy the database into `temporary` with the online backup API and check the copy's integrity."""
    raw = engine.raw_connection()
    try:
        destination = sqlite3.connect(temporary)
        try:
            raw.driver_connection.backup(destination)  # type: ignore[union-attr]
            check = destination.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise UserError(f"the copy failed its integrity check ({check}); {target} not written")
            destination.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
        finally:
            destination.close()
    finally:
        raw.close()


def backup(engine: Engine | str, target: str | Path, *, force: bool = False) -> BackupSummary:
    """Copy the SQLite database behind `engine` (or a URL) to `target` consistently; record an Event
    "backup". For another engine, the pg_dump advice (before any connection or driver import)."""
    engine = _sqlite_engine(engine)
    database = engine.url.database
    if not database or database == ":memory:":
        raise UserError("an in-memory database cannot be backed up")
    db.check_schema(engine)
    target = _writable_target(Path(target), database, force)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        os.close(os.open(temporary, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600))  # owner-only
        _copy_checked(engine, temporary, target)
        os.replace(temporary, target)
    except OSError as exc:
        raise os_failure(f"cannot write {target}", exc) from None
    except sqlite3.DatabaseError as exc:
        raise UserError(
            f"cannot back up {database}: {db.describe_error(DatabaseError(None, None, exc))}"
        ) from None
    finally:
        temporary.unlink(missing_ok=True)
    summary = BackupSummary(target, target.stat().st_size, db.current_revision(engine) or "empty")
    with db.session_scope(engine) as session:
        session.add(
            Event(
                action="backup",
                detail={"file": str(target), "bytes": summary.bytes, "schema": summary.schema},
            )
        )
    return summary
