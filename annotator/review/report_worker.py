"""The report worker: a process beside ``annotator serve`` that keeps every stored result
(:mod:`annotator.review.stored_results`) up to date, so that the Validation and Adjudicate pages open
with a recent one instead of computing it during the visit.

A separate process, not a thread: a report holds its interpreter's lock for seconds to minutes, which
in the server would stall every annotator's submit. The worker

- runs for one database, the one its server was started for, and writes to no other;
- is one per database: it computes only while it holds the database's lock
  (:class:`annotator.store.worker_lock.WorkerLock`); a second server's worker waits for the lock;
- notices a new data version by a few cheap reads every :data:`POLL_S`, waits until the data has not
  changed for :data:`SETTLE_S` (or has been stale for :data:`MAX_WAIT_S`), then computes at low
  priority (``os.nice``);
- stops when its server does (a watcher thread checks the parent process);
- survives a failing computation: one line on its output, and no new attempt until the data changes.
"""

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from annotator.errors import one_line

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

POLL_S = 1.0
SETTLE_S = 3.0
MAX_WAIT_S = 30.0
NICE = 10  # how much the worker yields to its server (os.nice); $ANNOTATOR_REPORT_WORKER_NICE overrides it
NICE_ENV = "ANNOTATOR_REPORT_WORKER_NICE"
RESTART_S = 30.0  # a server starts its worker again at most this often after it stopped
LOCK_NAME = "report-worker"
PREFIX = "report worker:"


def log(message: str) -> None:
    """One line on the worker's output (the server's log)."""
    print(f"{PREFIX} {message}", file=sys.stderr, flush=True)


@dataclass
class Pending:
    """When a stored result's data first changed (since it was computed) and last changed."""

    version: str
    first_seen: float
    last_changed: float


@dataclass
class Keeper:
    """The worker's state: what it saw change and when, and the versions whose computation failed."""

    pending: dict[tuple[str, str], Pending] = field(default_factory=dict)
    failed: dict[tuple[str, str], str] = field(default_factory=dict)

    def due(self, key: tuple[str, str], current: str, stored: str, now: float) -> bool:
        """Whether `key`'s stored result (at `stored`) should be computed again now that the data is at
        `current`: it differs, did not fail at this version, and has settled or waited long enough."""
        if current == stored or self.failed.get(key) == current:
            self.pending.pop(key, None)
            return False
        seen = self.pending.get(key)
        if seen is None:
            self.pending[key] = Pending(current, now, now)
            return SETTLE_S <= 0
        if seen.version != current:
            seen.version, seen.last_changed = current, now
        return now - seen.last_changed >= SETTLE_S or now - seen.first_seen >= MAX_WAIT_S


def keep_once(url: str, keeper: Keeper, now: float) -> int:
    """One pass over the stored results of the database at `url`: recompute those that are due.
    Returns how many were stored."""
    from annotator.review import stored_results
    from annotator.store import db

    engine = _engine(url)
    with db.session_scope(engine) as session:
        watched = stored_results.watched(session)
    stored_count = 0
    for study, kind, stored in watched:
        key, current = (study, kind), stored
        try:
            with db.session_scope(engine) as session:
                current = stored_results.current_version(session, study=study, kind=kind)
            if not keeper.due(key, current, stored, now):
                continue
            stored_results.compute_and_save(engine, study=study, kind=kind, version=current)
            keeper.pending.pop(key, None)
            stored_count += 1
        except Exception as exc:  # one line, then wait for the data to change
            keeper.failed[key] = current
            keeper.pending.pop(key, None)
            log(f"the {kind} of study {study!r} failed: {one_line(exc)}")
    return stored_count


_engines: dict[str, "Engine"] = {}


def _engine(url: str) -> "Engine":
    """One engine per database for the worker's life."""
    from annotator.store import db

    if url not in _engines:
        _engines[url] = db.make_engine(url)
    return _engines[url]


def _watch_parent(owner: int) -> None:
    """Exit this process as soon as `owner` (the server) is gone, even in the middle of a computation."""
    while os.getppid() == owner:
        time.sleep(POLL_S / 2)
    os._exit(0)


def niceness() -> int:
    """How much the worker yields to its server: $ANNOTATOR_REPORT_WORKER_NICE (0 to 19), else NICE."""
    from annotator.store.environment import whole_number

    return whole_number(NICE_ENV, NICE, least=0, most=19, wording="a whole number from 0 to 19")


def main(owner: int) -> int:
    """The worker process for the database its server passed in the environment (never on the command
    line, where other users could read a password), started by the server `owner`."""
    from annotator.errors import UserError

    try:  # `annotator serve` checks it before it starts; a server started otherwise may not have
        yielding = niceness()
    except UserError as exc:
        log(str(exc))
        return 2
    threading.Thread(target=_watch_parent, args=(owner,), daemon=True).start()
    os.nice(yielding)  # before the heavy imports: all of the worker's work yields to the server's
    from annotator.store.db import ENV_VAR
    from annotator.store.worker_lock import WorkerLock

    url = os.environ[ENV_VAR]

    lock = WorkerLock(_engine(url), LOCK_NAME)
    keeper = Keeper()
    waiting_said = False
    while True:
        if not lock.acquire():
            if not waiting_said:
                log("another server's worker keeps this database's reports; waiting")
                waiting_said = True
            time.sleep(POLL_S * 5)
            continue
        try:
            keep_once(url, keeper, time.monotonic())
        except Exception as exc:  # the database is away: try again on the next pass
            log(f"cannot read the stored results: {one_line(exc)}")
        time.sleep(POLL_S)


# The server's side: at most one worker process per database per server process.
_started: dict[str, tuple["subprocess.Popen[bytes]", float]] = {}
_guard = threading.Lock()


def ensure_running(url: str) -> None:
    """Start the worker for the database at `url` from this (the server's) process unless it runs
    (a stopped one is started again, at most every :data:`RESTART_S`)."""
    with _guard:
        running = _started.get(url)
        if running is not None and (running[0].poll() is None or time.monotonic() - running[1] < RESTART_S):
            return
        from annotator.store.db import ENV_VAR

        process = subprocess.Popen(
            [sys.executable, "-m", "annotator.review.report_worker", str(os.getpid())],
            stdin=subprocess.DEVNULL,
            env=os.environ | {ENV_VAR: url},
        )
        _started[url] = (process, time.monotonic())


if __name__ == "__main__":
    raise SystemExit(main(int(sys.argv[1])))
