"""Crowd launch-day helpers: run one step in many threads at the same moment, and study setups."""

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy import event, text
from sqlalchemy.engine import Engine

from annotator.people import accounts
from annotator.people.authorization import Account
from annotator.rating import crowd
from annotator.store import db
from annotator.store.models import Assignment, Pair, Study, User
from tests.utils import factories
from tests.utils.passwords import CHEAP_HASHER, hashing_with

T = TypeVar("T")

PROLIFIC = {"platform": "prolific", "places": 3, "completion_code": "C1A2B3", "items": 3}


def race(n: int, step: Callable[[int], T]) -> tuple[list[T], list[BaseException]]:
    """Run step(0) ... step(n - 1) in n threads released together by a barrier: the results and the
    exceptions raised (each step's own)."""
    barrier = threading.Barrier(n)

    def run(k: int) -> tuple[bool, Any]:
        barrier.wait(timeout=60)
        try:
            return True, step(k)
        except BaseException as exc:  # collected for the test to check
            return False, exc

    with ThreadPoolExecutor(max_workers=n) as pool:
        outcomes = list(pool.map(run, range(n)))
    return [v for ok, v in outcomes if ok], [v for ok, v in outcomes if not ok]


def link(worker: str, study: str = "s1") -> dict[str, str]:
    """A Prolific study link's parameters for one worker id."""
    return {"study": study, "PROLIFIC_PID": worker, "STUDY_ID": "st1", "SESSION_ID": f"se-{worker}"}


def enter(engine: Engine, worker: str, study: str = "s1") -> Account:
    """One visit of a study link, in its own transaction."""
    with db.session_scope(engine) as session:
        return crowd.enter(session, study=study, params=link(worker, study))


class ConnectionWatch:
    """The most connections any one thread held at the same time on an engine (pool checkouts)."""

    def __init__(self, engine: Engine) -> None:
        self.held: dict[int, int] = {}
        self.most: dict[int, int] = {}
        self.lock = threading.Lock()
        event.listen(engine, "checkout", self._checkout)
        event.listen(engine, "checkin", self._checkin)

    def _checkout(self, *_: Any) -> None:
        with self.lock:
            me = threading.get_ident()
            self.held[me] = self.held.get(me, 0) + 1
            self.most[me] = max(self.most.get(me, 0), self.held[me])

    def _checkin(self, *_: Any) -> None:
        with self.lock:
            me = threading.get_ident()
            self.held[me] = self.held.get(me, 0) - 1


@contextmanager
def cheap_hashing() -> Iterator[str]:
    """Argon2id with its lowest cost while the block runs (so that 30 logins at once test the
    connections, not the CPU); yields one password hash made with it. The cost is restored after."""
    with hashing_with(CHEAP_HASHER):
        yield accounts.hash_password(factories.PASSWORD)


OFFSET = 1_973_000_000  # ids of the study under test start above this (see offset_ids); ten digits,
# so that one of them turning up by chance in a page's hashes or tokens is all but impossible


def offset_ids(engine: Engine) -> None:
    """Make every id the next rows get large and distinctive (above OFFSET): a placeholder study,
    pair, user and assignment at OFFSET (PostgreSQL's sequences moved past them too), so that a test
    can search the browser's traffic for an id without matching every small number."""
    with db.session_scope(engine) as session:
        session.add(Study(id=OFFSET, name="zz-placeholder", config={}))
        session.add(
            User(id=OFFSET, username="zz-placeholder", role="annotator", password_hash="!", active=False)
        )
        session.flush()
        session.add(
            Pair(
                id=OFFSET,
                study_id=OFFSET,
                external_id="zz",
                question="q",
                profile=[],
                rubric=[],
                chosen="c",
                rejected="r",
                meta={},
                content_hash="zz",
            )
        )
        session.flush()
        session.add(
            Assignment(
                id=OFFSET, study_id=OFFSET, pair_id=OFFSET, annotator_id=OFFSET, chosen_side="A", position=1
            )
        )
        if session.get_bind().dialect.name == "postgresql":
            for table in ("study", "pair", "user", "assignment", "crowdlink", "judgment"):
                session.execute(text(f"SELECT setval(pg_get_serial_sequence('\"{table}\"', 'id'), {OFFSET})"))
