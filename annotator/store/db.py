"""Database engines from a URL, SQLite pragmas, sessions and schema migrations (Alembic)."""

import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import event, select, update
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, NoSuchModuleError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlmodel import Session, col, create_engine

from annotator.errors import BusyError, SchemaError, UserError, os_failure
from annotator.store import environment
from annotator.store.integrity import RESTORE, damaged, refusal, verdict
from annotator.store.models import Assignment, Study

DEFAULT_URL = "sqlite:///data/annotations.db"
ENV_VAR = "ANNOTATOR_DB_URL"
BUSY_TIMEOUT_MS = 10_000  # the default; $ANNOTATOR_BUSY_TIMEOUT_MS overrides it
BUSY_TIMEOUT_ENV = "ANNOTATOR_BUSY_TIMEOUT_MS"
MIGRATIONS = Path(__file__).parent / "migrations"
# Connections per engine (one server process): Streamlit runs every browser session's script in its own
# thread, and a page holds at most one connection at a time (short transactions), so this many sessions
# can work at the same moment; a further one waits at most POOL_TIMEOUT_S, then gets POOL_BUSY.
POOL_SIZE = 20  # connections kept open; as many more may open at a peak (max_overflow)
POOL_TIMEOUT_S = 5
POOL_ENV = "ANNOTATOR_DB_POOL"  # overrides POOL_SIZE
POOL_BUSY = "the server is busy (every database connection is in use); please try again in a moment"
# A unit of work that met a lock held too long, or a full pool, runs again this many times in all.
ATTEMPTS = 3
# How long a crowd arrival waits for its turn on a study in this process (holding no connection).
TURN_WAIT_S = 60
# SQLSTATEs of PostgreSQL's lock faults: lock_not_available, deadlock_detected, serialization_failure.
_PG_LOCK_STATES = frozenset({"55P03", "40P01", "40001"})
T = TypeVar("T")


def resolve_url(url: str | None = None) -> str:
    """The database URL: the argument, else $ANNOTATOR_DB_URL, else the default SQLite file."""
    return url or os.environ.get(ENV_VAR) or DEFAULT_URL


class RawJSON(str):
    """JSON text that is already serialized: engines from make_engine store it as it is."""


def json_serializer(value: Any) -> str:
    """How the engines write JSON columns: RawJSON unchanged, anything else through json.dumps."""
    return value if isinstance(value, RawJSON) else json.dumps(value)


def busy_timeout_ms() -> int:
    """How long a SQLite write waits for another writer: $ANNOTATOR_BUSY_TIMEOUT_MS, else 10 s."""
    return environment.whole_number(
        BUSY_TIMEOUT_ENV, BUSY_TIMEOUT_MS, least=0, wording="a whole number of milliseconds"
    )


def pool_size() -> int:
    """Connections each engine keeps: $ANNOTATOR_DB_POOL, else POOL_SIZE."""
    return environment.whole_number(
        POOL_ENV, POOL_SIZE, least=1, wording="a whole number of connections (at least 1)"
    )


def _pool_options() -> dict[str, Any]:
    size = pool_size()
    return {"pool_size": size, "max_overflow": size, "pool_timeout": POOL_TIMEOUT_S}


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms()}")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _private_file(path: Path) -> None:
    """Create the SQLite file (and its folder) readable by its owner only; SQLite gives the WAL and
    shared-memory files the same permissions as the database."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_failure(f"cannot create the database's folder {path.parent}", exc) from None
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass
    except OSError:
        pass  # e.g. a read-only folder: SQLite reports it when the database is opened


def _existing_file(path: Path) -> None:
    """Refuse a SQLite file that does not exist (SchemaError, one line), creating nothing."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise SchemaError(f"no database at {path}; run `annotator init` first") from None
    except OSError:
        pass  # e.g. no permission on its folder: SQLite reports it when the database is opened


def make_engine(url: str | None = None, *, create: bool = True) -> Engine:
    """An engine for `url`; every SQLite connection gets WAL, foreign keys and a busy timeout.

    A SQLite file that does not exist is created (with its folder) when `create`; otherwise it is
    refused and nothing is made: only the commands that create a database (init, demo) create one."""
    url = resolve_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise UserError(f"not a database URL: {url!r}") from exc
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        uri_form = str(parsed.query.get("uri", "")).lower() in ("true", "1")  # file:...?mode=ro&uri=true
        if database and database != ":memory:" and not uri_form:
            path = Path(database).expanduser()
            if create:
                _private_file(path)
            else:
                _existing_file(path)
        connect_args = {"check_same_thread": False, "timeout": busy_timeout_ms() / 1000}
        pooled = _pool_options() if database and database != ":memory:" else {}
        engine = create_engine(url, connect_args=connect_args, json_serializer=json_serializer, **pooled)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    try:
        return create_engine(url, pool_pre_ping=True, json_serializer=json_serializer, **_pool_options())
    except ModuleNotFoundError as exc:
        raise UserError(f"the database driver for {parsed.drivername} is not installed: {exc.name}") from exc
    except NoSuchModuleError as exc:  # an unknown database kind or driver name
        raise UserError(
            f"no database kind {parsed.drivername!r}: use sqlite:///PATH or "
            "postgresql+psycopg://USER:PASSWORD@HOST/NAME"
        ) from exc


def is_locked(exc: BaseException) -> bool:
    """Whether a database error is a lock held too long (SQLite's "database is locked" after the busy
    timeout; PostgreSQL's lock timeout, deadlock or serialization failure): trying again works."""
    if not isinstance(exc, OperationalError | DatabaseError):
        return False
    if getattr(exc.orig, "sqlstate", None) in _PG_LOCK_STATES:
        return True
    return "database is locked" in str(exc.orig).lower() or "table is locked" in str(exc.orig).lower()


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any error. A pool with no free connection
    within POOL_TIMEOUT_S raises BusyError (one line: POOL_BUSY), never a hang; so does a lock held
    too long (one line saying so): the database is fine, and trying again works."""
    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except PoolTimeout as exc:
            session.rollback()
            raise BusyError(POOL_BUSY) from exc
        except DatabaseError as exc:
            session.rollback()
            if is_locked(exc):
                raise BusyError(describe_error(exc)) from exc
            raise
        except BaseException:
            session.rollback()
            raise


def with_retries(engine: Engine, work: Callable[[Session], T], attempts: int = ATTEMPTS) -> T:
    """`work` in its own unit of work; when it meets a lock held too long or a full pool (BusyError),
    it is rolled back and run again after a short random pause, up to `attempts` times in all.
    Only for work that may run twice: each run starts from what is committed."""
    for attempt in range(1, attempts + 1):
        try:
            with session_scope(engine) as session:
                return work(session)
        except BusyError:
            if attempt == attempts:
                raise
            time.sleep(random.uniform(0.05, 0.25) * attempt)  # spread the retries of a burst apart
    raise AssertionError("unreachable")


_TURNS: dict[tuple[str, int], threading.Lock] = {}
_TURNS_GUARD = threading.Lock()


def _turn(engine: Engine, study_id: int) -> threading.Lock:
    key = (engine.url.render_as_string(hide_password=True), study_id)
    with _TURNS_GUARD:
        return _TURNS.setdefault(key, threading.Lock())


@contextmanager
def study_turn(session: Session, study_id: int) -> Iterator[None]:
    """A read-then-write on one study, one at a time, committed before the next one starts.

    The session's transaction so far is committed first, so that while a session waits for its turn
    (a lock of this server process) it holds no database connection: a burst of arrivals queues here,
    not in the connection pool. The holder then takes the database's lock (:func:`lock_study`), which
    still serializes it against other processes, does its work and commits it. BusyError after
    TURN_WAIT_S without a turn.
    """
    session.commit()
    turn = _turn(session.get_bind().engine, study_id)
    if not turn.acquire(timeout=TURN_WAIT_S):
        raise BusyError(POOL_BUSY)
    try:
        lock_study(session, study_id)
        yield
        session.commit()
    finally:
        turn.release()


def lock_study(session: Session, study_id: int) -> None:
    """Serialize a read-then-write on one study until the transaction ends (place counts, get-or-create).

    PostgreSQL: a row lock on the study (SELECT ... FOR UPDATE). SQLite: a no-op UPDATE of the row,
    which takes the database's write lock first (waiting up to the busy timeout), so every read after
    it sees what the previous holder committed. Call it before the reads it protects.
    """
    lock_row(session, Study, study_id, "name")


def lock_row(session: Session, table: type[Study | Assignment], row_id: int, column: str) -> None:
    """Hold the row of `table` with id `row_id` until the transaction ends: on PostgreSQL a row lock
    (SELECT ... FOR UPDATE); on SQLite a no-op UPDATE (`column` set to itself), which takes the
    database's write lock (waiting up to the busy timeout)."""
    key = col(table.id)
    if session.get_bind().dialect.name == "sqlite":
        session.execute(
            update(table)
            .where(key == row_id)
            .values({column: getattr(table, column)})
            .execution_options(synchronize_session=False)
        )
    else:
        session.execute(select(key).where(key == row_id).with_for_update())


def _alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head_revision() -> str:
    """The newest schema revision this version of the tool knows."""
    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError("no migrations found")
    return head


def current_revision(engine: Engine) -> str | None:
    """The schema revision the database is at (None for an empty database)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(url_or_engine: str | Engine | None = None) -> str:
    """Bring the database to the current schema; safe to run any number of times."""
    engine = url_or_engine if isinstance(url_or_engine, Engine) else make_engine(url_or_engine)
    current = _checked_revision(engine)
    config = _alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
    return current or "empty"


def _checked_revision(engine: Engine) -> str | None:
    try:
        current = current_revision(engine)
    except OperationalError as exc:
        raise UserError(f"cannot open the database {engine.url!r}: {exc.orig}") from exc
    known = {script.revision for script in ScriptDirectory.from_config(_alembic_config()).walk_revisions()}
    if current is not None and current not in known:
        raise SchemaError(
            f"the database is at schema revision {current}, which is newer than this version of "
            "annotator knows; upgrade annotator"
        )
    return current


def check_schema(engine: Engine) -> None:
    """Refuse a database that is empty, behind, or ahead of this version of the tool."""
    current = _checked_revision(engine)
    if current is None:
        raise SchemaError(f"the database {engine.url!r} is not initialised; run `annotator init` first")
    if current != head_revision():
        raise SchemaError(f"the database schema is at {current}, not {head_revision()}; run `annotator init`")


# ------------------------------------------------------------------ the append-only audit log

AUDIT_MESSAGE = "event is append-only"
_SQLITE_AUDIT = {
    f"event_no_{action.lower()}": (
        f"CREATE TRIGGER event_no_{action.lower()} BEFORE {action} ON event "
        f"BEGIN SELECT RAISE(ABORT, '{AUDIT_MESSAGE}'); END"
    )
    for action in ("UPDATE", "DELETE")
}
_POSTGRES_AUDIT_FUNCTION = f"""
CREATE OR REPLACE FUNCTION event_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '{AUDIT_MESSAGE}' USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql
"""
_POSTGRES_AUDIT = {
    "event_append_only": "CREATE TRIGGER event_append_only BEFORE UPDATE OR DELETE ON event "
    "FOR EACH ROW EXECUTE FUNCTION event_append_only()",
    "event_no_truncate": "CREATE TRIGGER event_no_truncate BEFORE TRUNCATE ON event "
    "FOR EACH STATEMENT EXECUTE FUNCTION event_append_only()",
}


def audit_problems(engine: Engine) -> list[str]:
    """What keeps the `event` table from being append-only right now: each trigger of migration 0002
    that is missing, disabled or no longer refuses (and, on PostgreSQL, a function that does not raise).
    Empty when the audit log is intact."""
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            found = {
                name: (enabled, source)
                for name, enabled, source in connection.exec_driver_sql(
                    "SELECT t.tgname, t.tgenabled, p.prosrc FROM pg_trigger t "
                    "JOIN pg_proc p ON p.oid = t.tgfoid WHERE t.tgrelid = 'event'::regclass "
                    "AND NOT t.tgisinternal"
                )
            }
            problems = []
            for name in _POSTGRES_AUDIT:
                if name not in found:
                    problems.append(f"trigger {name} is missing")
                elif found[name][0] == "D":
                    problems.append(f"trigger {name} is disabled")
                elif AUDIT_MESSAGE not in found[name][1]:
                    problems.append(f"trigger {name} no longer refuses changes")
            return problems
        sqlite_found: dict[str, str | None] = dict(
            connection.exec_driver_sql(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'event'"
            ).all()
        )
        return [
            f"trigger {name} " + ("is missing" if name not in sqlite_found else "no longer refuses changes")
            for name in _SQLITE_AUDIT
            if name not in sqlite_found or AUDIT_MESSAGE not in (sqlite_found[name] or "")
        ]


def restore_audit(engine: Engine) -> list[str]:
    """Put back every audit-log trigger that :func:`audit_problems` finds wrong (in one transaction);
    returns those problems (empty: nothing needed restoring)."""
    problems = audit_problems(engine)
    if not problems:
        return []
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.exec_driver_sql(_POSTGRES_AUDIT_FUNCTION)
            for name, ddl in _POSTGRES_AUDIT.items():
                connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name} ON event")
                connection.exec_driver_sql(ddl)
        else:
            for name, ddl in _SQLITE_AUDIT.items():
                connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}")
                connection.exec_driver_sql(ddl)
    return problems


def check_audit(engine: Engine) -> None:
    """Refuse a database whose audit log is not append-only (e.g. before `serve` starts on it)."""
    problems = audit_problems(engine)
    if problems:
        raise UserError(
            f"the audit log of {shown_url(str(engine.url))} is not append-only ({'; '.join(problems)}); "
            "run `annotator init` to restore it"
        )


def describe_error(exc: DatabaseError) -> str:
    """A one-line explanation of a database failure, with what to do about it."""
    text = str(exc.orig) if exc.orig is not None else str(exc)
    lowered = text.lower()
    if "no such table" in lowered or "does not exist" in lowered and "relation" in lowered:
        return "the database is not initialised; run `annotator init`"
    if "locked" in lowered:
        seconds = busy_timeout_ms() / 1000
        return (
            f"the database stayed locked for {seconds:g} s (another process is writing); try again "
            f"(${BUSY_TIMEOUT_ENV} sets the wait in ms)"
        )
    if "readonly" in lowered or "read-only" in lowered:
        return (
            "the database is read-only (file or folder permissions, a read-only disk, or mode=ro in "
            "the URL); nothing was saved"
        )
    if "disk" in lowered and "full" in lowered or "no space" in lowered:
        return "the disk is full; free some space and run the command again (nothing partial was saved)"
    if damaged(lowered):
        return (
            "the database file is damaged (" + (text.splitlines()[0] if text else "corrupt") + f"); {RESTORE}"
        )
    if "unable to open" in lowered:
        return "cannot open the database file; check the path and its folder's permissions"
    return text.splitlines()[0] if text else type(exc).__name__


def shown_url(url: str) -> str:
    """A database URL fit for the terminal and logs: the password (PostgreSQL) as ***."""
    return make_url(url).render_as_string(hide_password=True)


def integrity_problem(engine: Engine) -> str | None:
    """None when a SQLite database passes `PRAGMA quick_check` (PostgreSQL: always None), else what failed.

    A fault that is not damage (a full disk, a lock, a missing file) is raised as a UserError naming that
    fault, never reported as a failed integrity check.
    """
    if engine.dialect.name != "sqlite":
        return None
    try:
        with engine.connect() as connection:
            rows = connection.exec_driver_sql("PRAGMA quick_check").fetchall()
    except DatabaseError as exc:
        message = str(exc.orig) if exc.orig is not None else str(exc)
        if not damaged(message.lower()):
            raise UserError(describe_error(exc)) from exc
        return message.splitlines()[0] if message else "corrupt"
    return verdict([tuple(row) for row in rows])


def check_integrity(engine: Engine) -> None:
    """Refuse a database that fails a quick integrity check (e.g. before `analyze` reads it)."""
    problem = integrity_problem(engine)
    if problem is not None:
        raise UserError(refusal(shown_url(str(engine.url)), problem))


def sqlite_file(engine: Engine) -> Path | None:
    """The file of a SQLite database given by a plain path (None: PostgreSQL, in memory, or a URI)."""
    url = engine.url
    if engine.dialect.name != "sqlite" or not url.database or url.database == ":memory:":
        return None
    if str(url.query.get("uri", "")).lower() in ("true", "1"):
        return None
    return Path(url.database).expanduser()
