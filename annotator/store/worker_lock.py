"""A lock that one process per database holds, whichever server started it: on SQLite an exclusive
``flock`` on a file beside the database, on PostgreSQL a session advisory lock (held by a connection
kept open for as long as the lock). Taking it never waits; the lock goes with the process that held it,
also when that process is killed."""

import fcntl
import hashlib
import os
from pathlib import Path
from typing import IO

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from annotator.store.db import sqlite_file


def lock_file(database: Path, name: str) -> Path:
    """The file a SQLite database's lock `name` is taken on."""
    return database.with_name(f"{database.name}-{name}.lock")


def advisory_key(name: str) -> int:
    """A stable signed 64-bit key for PostgreSQL's advisory locks, from the lock's name."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


class WorkerLock:
    """The lock `name` on the database of `engine`; :meth:`acquire` takes it if nobody holds it."""

    def __init__(self, engine: Engine, name: str) -> None:
        self.engine = engine
        self.name = name
        self._file: IO[bytes] | None = None
        self._connection: Connection | None = None

    @property
    def held(self) -> bool:
        return self._file is not None or self._connection is not None

    def acquire(self) -> bool:
        """Take the lock now if it is free (True) or report that another process holds it (False)."""
        if self.held:
            return True
        path = sqlite_file(self.engine)
        if path is not None:
            handle = lock_file(path, self.name).open("ab")
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                return False
            os.chmod(handle.name, 0o600)
            self._file = handle
            return True
        if self.engine.dialect.name != "postgresql":
            return False  # a database in memory or by URI: no other process can share it
        connection = self.engine.connect()
        taken = connection.execute(
            text("SELECT pg_try_advisory_lock(:key)"), {"key": advisory_key(self.name)}
        ).scalar()
        connection.commit()
        if not taken:
            connection.close()
            return False
        self._connection = connection
        return True

    def release(self) -> None:
        """Give the lock up."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._connection is not None:  # the pool keeps the session open: unlock before returning it
            unlock = text("SELECT pg_advisory_unlock(:key)")
            self._connection.execute(unlock, {"key": advisory_key(self.name)})
            self._connection.commit()
            self._connection.close()
            self._connection = None
