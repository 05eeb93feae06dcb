"""Concurrent submits from several processes: nothing lost, nothing duplicated, every revision kept.

Each worker is a separate process ("spawn", as the Streamlit servers or CLI runs would be) with its
own engine on the same database; on SQLite that is one file in WAL mode, on PostgreSQL one database
(when the `db_url` fixture provides one). Two processes of one annotator play two browser tabs.
"""

import multiprocessing
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from annotator import labels
from annotator.assign import assign
from annotator.store import db
from annotator.store.models import Assignment, Event, Judgment, Pair, Score
from tests.factories import DIMENSIONS, make_annotators, make_form, make_study

N_ASPECTS = 2  # make_record's default
SCORES_PER_JUDGMENT = 2 * (len(DIMENSIONS) + N_ASPECTS)


# (user_id, assignment_id, submission_id, k, wait at the barrier first)
Step = tuple[int, int, str, int, bool]


def worker(url: str, steps: list[Step], barrier: Any, results: Any) -> None:
    """Submit `steps` in order, each in its own transaction; report latencies and any error text."""
    engine = db.make_engine(url)
    latencies, errors = [], []
    try:
        for user_id, assignment_id, submission_id, k, sync in steps:
            if sync:
                barrier.wait(timeout=60)
            start = time.perf_counter()
            try:
                with db.session_scope(engine) as session:
                    labels.submit(
                        session,
                        assignment_id=assignment_id,
                        user_id=user_id,
                        submission=make_form(submission_id, k, n_aspects=N_ASPECTS),
                    )
            except Exception as exc:  # reported to the parent, which fails the test with it
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies.append(time.perf_counter() - start)
    finally:
        engine.dispose()
        results.put((latencies, errors))


def run_workers(url: str, plans: list[list[Step]]) -> tuple[list[float], list[str]]:
    """Run one process per plan at the same time; all their latencies and errors."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(plans))
    results = ctx.Queue()
    processes = [ctx.Process(target=worker, args=(url, plan, barrier, results)) for plan in plans]
    for process in processes:
        process.start()
    collected = [results.get(timeout=240) for _ in processes]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    return [x for lat, _ in collected for x in lat], [e for _, errs in collected for e in errs]


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


@pytest.fixture
def study(engine: Engine, tmp_path: Path) -> dict[int, list[int]]:
    return make_small_study(engine, tmp_path)


def make_small_study(engine: Engine, tmp_path: Path) -> dict[int, list[int]]:
    """Ten pairs, three annotators, each with all ten pairs: annotator id -> assignment ids."""
    make_study(engine, tmp_path, 10)
    make_annotators(engine, 3)
    with db.session_scope(engine) as session:
        assign(session, study="s1", overlap=3, seed=0)
    return queues(engine)


def test_six_processes_submit_and_revise_without_losing_anything(
    db_url: str, engine: Engine, study: dict[int, list[int]]
) -> None:
    """6 processes x 25 submits: two processes ("tabs") per annotator go through the same 10 items, so
    items are revised while the other tab revises them too; every 5th form is submitted by both tabs
    with the same submission id (a double submit)."""
    plans: list[list[Step]] = []
    expected: dict[int, set[str]] = defaultdict(set)
    for user_id, queue in study.items():
        for tab in range(2):
            plan: list[Step] = []
            for i in range(25):
                double = i % 5 == 0  # both tabs send this form for the same item
                assignment_id = queue[(i + (0 if double else 3 * tab)) % len(queue)]
                submission_id = f"u{user_id}-{i}" if double else f"u{user_id}-t{tab}-{i}"
                plan.append((user_id, assignment_id, submission_id, i + tab, double))
                expected[assignment_id].add(submission_id)
            plans.append(plan)
    latencies, errors = run_workers(db_url, plans)
    assert errors == []
    assert len(latencies) == 6 * 25
    check_consistent(engine, expected)


def test_a_double_submit_and_two_tabs_at_the_same_moment(
    db_url: str, engine: Engine, study: dict[int, list[int]]
) -> None:
    """Two processes of one annotator meet at a barrier before each submit. Items 0-4: the same form
    (one submission id) from both -> exactly one judgment. Items 5-9: two tabs, two submission ids ->
    two revisions, the later one current. No error reaches the annotator."""
    user_id, queue = next(iter(study.items()))
    plans: list[list[Step]] = [[], []]
    expected: dict[int, set[str]] = defaultdict(set)
    for index, assignment_id in enumerate(queue):
        for tab in range(2):
            submission_id = f"same-{index}" if index < 5 else f"tab{tab}-{index}"
            plans[tab].append((user_id, assignment_id, submission_id, index + tab, True))
            expected[assignment_id].add(submission_id)
    latencies, errors = run_workers(db_url, plans)
    assert errors == []
    check_consistent(engine, expected)
    with Session(engine) as session:
        counts = Counter(session.exec(select(Judgment.assignment_id)).all())
    assert [counts[a] for a in queue] == [1] * 5 + [2] * 5
