"""Concurrent submits from several processes: nothing lost, nothing duplicated, every revision kept.

Each worker is a separate process ("spawn", as the Streamlit servers or CLI runs would be) with its
own engine on the same database; on SQLite that is one file in WAL mode, on PostgreSQL one database
(when the `db_url` fixture provides one). Two processes of one annotator play two browser tabs.
"""

from collections import Counter, defaultdict
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from annotator.store.models import Judgment
from tests.utils.concurrency import Step, check_consistent, make_small_study, run_workers


@pytest.fixture
def study(engine: Engine, tmp_path: Path) -> dict[int, list[int]]:
    return make_small_study(engine, tmp_path)


@pytest.mark.slow  # about 20 s: six spawned processes
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
