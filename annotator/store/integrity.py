"""SQLite's `PRAGMA quick_check` when the server starts, bounded in time without letting a write reach a
damaged database.

A database file up to :data:`CHECK_FIRST_MB` is checked before the server starts (a fraction of a
second). A larger one is checked by a guard process that first takes the database's write lock
(``BEGIN IMMEDIATE``) and only then lets the server start: pages may read at once, every write waits on
that lock until the check has passed. A failed check stops the server (SIGTERM, then SIGKILL) before the
lock is released, so nothing is ever written to a damaged file. The guard imports only the standard
library, so it costs no start-up time of its own.

The guard speaks one line at a time: it writes ``locked`` once it holds the lock, then reads one line
from its parent: ``detach`` (the parent now becomes the server; a failed check stops it) or end of file
(the parent exited without serving; nothing to stop).
"""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

CHECK_FIRST_MB = 32
CHECK_FIRST_ENV = "ANNOTATOR_CHECK_FIRST_MB"  # overrides CHECK_FIRST_MB (0: always check while starting)
RESTORE = "stop the app and restore the latest backup (annotator backup makes one)"
STOP_GRACE_S = 10  # how long the server has to stop after SIGTERM before SIGKILL


def damaged(lowered_message: str) -> bool:
    """Whether a database error says the file itself is damaged (the one case for restoring a backup)."""
    return any(word in lowered_message for word in ("malformed", "not a database", "corrupt"))


def verdict(rows: list[tuple[object, ...]]) -> str | None:
    """None when quick_check's rows say ``ok``, else the first three problems on one line."""
    found = [" ".join(str(row[0]).split()) for row in rows]  # one line, whatever SQLite wrote
    return None if found == ["ok"] else "; ".join(found[:3])


def refusal(shown_url: str, problem: str) -> str:
    """The one line that refuses a database failing its integrity check."""
    return f"the database {shown_url} is damaged: it fails its integrity check ({problem}); {RESTORE}"


def check_first_bytes() -> int:
    """Files up to this size are checked before the server starts: $ANNOTATOR_CHECK_FIRST_MB, else 32."""
    raw = os.environ.get(CHECK_FIRST_ENV, "").strip()
    megabytes = float(raw) if raw.replace(".", "", 1).isdigit() else CHECK_FIRST_MB
    return int(megabytes * 2**20)


def checked_while_starting(path: Path) -> bool:
    """Whether the file (with its write-ahead log) is large enough to be checked while the server starts."""
    size = sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    return size > check_first_bytes()


class Guard:
    """A running guard process that holds the database's write lock until its check has passed."""

    def __init__(self, process: "subprocess.Popen[bytes]") -> None:
        self.process = process

    def detach(self) -> None:
        """Tell the guard that this process becomes the server: a failed check stops it."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(b"detach\n")
            self.process.stdin.flush()
        except BrokenPipeError:  # the check already passed and the guard is gone
            pass


def start_guard(path: Path, shown_url: str, busy_timeout_ms: int) -> Guard:
    """Start the guard on the SQLite file `path` for this process; returns once it holds the write lock.

    Raises RuntimeError with the guard's one-line reason when it could not take the lock."""
    process = subprocess.Popen(
        [sys.executable, "-m", "annotator.store.integrity", str(path), shown_url, str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=os.environ | {"ANNOTATOR_BUSY_TIMEOUT_MS": str(busy_timeout_ms)},
    )
    assert process.stdout is not None
    first = process.stdout.readline().decode("utf-8", "replace").strip()
    if first != "locked":
        process.wait()
        raise RuntimeError(first or f"the integrity check could not start (exit {process.returncode})")
    return Guard(process)


def _check(connection: sqlite3.Connection, shown_url: str) -> str | None:
    """quick_check on an open connection: None when sound, else the one line that refuses the database
    (damage, or a fault such as a full disk that kept the check from finishing)."""
    try:
        problem = verdict(connection.execute("PRAGMA quick_check").fetchall())
    except sqlite3.DatabaseError as exc:
        text = " ".join(str(exc).split()) or "corrupt"
        if not damaged(text.lower()):
            return f"the integrity check of {shown_url} could not finish ({text})"
        problem = text
    return None if problem is None else refusal(shown_url, problem)


def _stop(owner: int) -> None:
    """SIGTERM the server `owner` (this process's parent); SIGKILL if it is still there after the grace."""
    try:
        os.kill(owner, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + STOP_GRACE_S
    while os.getppid() == owner and time.monotonic() < deadline:
        time.sleep(0.05)
    if os.getppid() == owner:
        os.kill(owner, signal.SIGKILL)
        while os.getppid() == owner:
            time.sleep(0.05)


def main(path: str, shown_url: str, owner: int) -> int:
    """The guard process: take the write lock, say ``locked``, check, then release or stop the server."""
    timeout_s = int(os.environ.get("ANNOTATOR_BUSY_TIMEOUT_MS", "10000")) / 1000
    try:
        connection = sqlite3.connect(path, timeout=timeout_s, isolation_level=None)
        connection.execute("BEGIN IMMEDIATE")  # every other writer waits from here on
    except sqlite3.Error as exc:
        print(f"cannot hold writes for the integrity check of {shown_url}: {exc}", flush=True)
        return 1
    print("locked", flush=True)
    problem = _check(connection, shown_url)
    if problem is None:
        connection.execute("ROLLBACK")  # nothing was written: writes go ahead
        connection.close()
        return 0
    detached = sys.stdin.readline().strip() == "detach"
    if detached:  # the parent became the server: stop it before anyone writes
        print(f"error: {problem}; the server was stopped", file=sys.stderr, flush=True)
        _stop(owner)
    connection.execute("ROLLBACK")
    connection.close()
    return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
