"""Processes that submit judgments at the same time, and the checks that nothing was lost."""

import contextlib
import multiprocessing
import sys
import time
import types
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from annotator.intake.assign import assign
from annotator.intake.study_admin import unassign
from annotator.people.authorization import SYSTEM, account_of
from annotator.rating import drafts, labels
from annotator.store import db
from annotator.store.models import Assignment, Event, Judgment, Pair, Score, User, id_of
from tests.utils.factories import DIMENSIONS, make_annotators, make_form, make_study

N_ASPECTS = 2  # make_record's default
SCORES_PER_JUDGMENT = 2 * (len(DIMENSIONS) + N_ASPECTS)


# (user_id, assignment_id, submission_id, k, wait at the barrier first)
Step = tuple[int, int, str, int, bool]


def worker(url: str, steps: list[Step], barrier: Any, results: Any) -> None:
    """Submit `steps` in order, each in its own transaction; report latencies and any error text."""
    engine = db.make_engine(url)
    latencies, errors = [], []
    try:
        with Session(engine) as session:  # each user submits as itself
            acting_as = {id_of(user): account_of(user) for user in session.exec(select(User))}
        for user_id, assignment_id, submission_id, k, sync in steps:
            if sync:
                barrier.wait(timeout=60)
            start = time.perf_counter()
            try:
                with db.session_scope(engine) as session:
                    labels.submit(
                        session,
                        assignment_id=assignment_id,
                        account=acting_as[user_id],
                        submission=make_form(submission_id, k, n_aspects=N_ASPECTS),
                    )
            except Exception as exc:  # reported to the parent, which fails the test with it
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies.append(time.perf_counter() - start)
    finally:
        engine.dispose()
        results.put((latencies, errors))


@contextlib.contextmanager
def plain_main() -> Iterator[None]:
    """Start spawned processes under a `__main__` with no file: a spawned child runs the parent's
    `__main__` file again, and after an AppTest of a page in the same test process that file is the
    page script (the child then dies drawing the page, before it runs its target)."""
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = saved


def run_workers(url: str, plans: list[list[Step]]) -> tuple[list[float], list[str]]:
    """Run one process per plan at the same time; all their latencies and errors."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(plans))
    results = ctx.Queue()
    processes = [ctx.Process(target=worker, args=(url, plan, barrier, results)) for plan in plans]
    with plain_main():
        for process in processes:
            process.start()
    collected = [results.get(timeout=240) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    return [x for lat, _ in collected for x in lat], [e for _, errs in collected for e in errs]


def draft_worker(url: str, steps: list[tuple[int, int]], barrier: Any, results: Any) -> None:
    """Save a draft on each (user_id, assignment_id) in order, after the barrier; report errors."""
    engine = db.make_engine(url)
    errors = []
    try:
        with Session(engine) as session:
            acting_as = {id_of(user): account_of(user) for user in session.exec(select(User))}
        barrier.wait(timeout=60)
        for user_id, assignment_id in steps:
            try:
                with db.session_scope(engine) as session:
                    drafts.save_draft(
                        session, assignment_id=assignment_id, account=acting_as[user_id], answers={"k": 1}
                    )
            except Exception as exc:  # reported to the parent, which checks it
                errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        engine.dispose()
        results.put(([], errors))


def unassign_worker(url: str, study: str, barrier: Any, results: Any) -> None:
    """Unassign every item of `study` not yet started, after the barrier; report any error."""
    engine = db.make_engine(url)
    errors = []
    try:
        barrier.wait(timeout=60)
        with db.session_scope(engine) as session:
            unassign(session, study=study, account=SYSTEM)
    except Exception as exc:  # reported to the parent, which fails the test with it
        errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        engine.dispose()
        results.put(([], errors))


def run_processes(targets: list[tuple[Callable[..., None], tuple[Any, ...]]]) -> list[str]:
    """Run each (function, arguments) in its own process at once; each function takes a barrier and a
    result queue after its arguments, and waits at the barrier once. All their errors."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(targets))
    results = ctx.Queue()
    processes = [ctx.Process(target=fn, args=(*args, barrier, results)) for fn, args in targets]
    with plain_main():
        for process in processes:
            process.start()
    collected = [results.get(timeout=240) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    return [e for _, errs in collected for e in errs]


def queues(engine: Engine) -> dict[int, list[int]]:
    """Each annotator's assignment ids in queue order."""
    with Session(engine) as session:
        rows = session.exec(
            select(Assignment.annotator_id, Assignment.id).order_by(
                col(Assignment.annotator_id), col(Assignment.position)
            )
        ).all()
    found: dict[int, list[int]] = defaultdict(list)
    for user_id, assignment_id in rows:
        found[int(user_id)].append(int(assignment_id or 0))
    return found


def check_consistent(engine: Engine, expected: dict[int, set[str]]) -> None:
    """Every submission id saved exactly once on its assignment; revisions 1..n; the newest current;
    every judgment with all its scores; pair counters and the audit log agree."""
    with Session(engine) as session:
        judgments = session.exec(select(Judgment)).all()
        assignments = {a.id: a for a in session.exec(select(Assignment))}
        score_counts = Counter(session.exec(select(Score.judgment_id)).all())
        n_submit_events = len(session.exec(select(Event.id).where(Event.action == "submit")).all())
        pairs = {p.id: p.n_done for p in session.exec(select(Pair))}
    by_assignment: dict[int, list[Judgment]] = defaultdict(list)
    for judgment in judgments:
        by_assignment[judgment.assignment_id].append(judgment)
    assert len(judgments) == sum(len(ids) for ids in expected.values())  # none lost, none duplicated
    assert n_submit_events == len(judgments)
    for assignment_id, ids in expected.items():
        saved = sorted(by_assignment[assignment_id], key=lambda j: j.revision)
        assert {j.submission_id for j in saved} == ids
        assert [j.revision for j in saved] == list(range(1, len(ids) + 1))
        assignment = assignments[assignment_id]
        assert assignment.current_judgment_id == saved[-1].id
        assert assignment.revisions == len(ids)
        assert assignment.status == "done"
    assert all(score_counts[j.id] == SCORES_PER_JUDGMENT for j in judgments)
    done = Counter(a.pair_id for a in assignments.values() if a.status == "done")
    assert pairs == {pair_id: done.get(pair_id, 0) for pair_id in pairs}


def make_small_study(engine: Engine, tmp_path: Path) -> dict[int, list[int]]:
    """Ten pairs, three annotators, each with all ten pairs: annotator id -> assignment ids."""
    make_study(engine, tmp_path, 10)
    make_annotators(engine, 3)
    with db.session_scope(engine) as session:
        assign(session, study="s1", overlap=3, seed=0, account=SYSTEM)
    return queues(engine)
