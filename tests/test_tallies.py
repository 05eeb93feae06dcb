"""The Progress page's tallies equal a count over every row after each write that changes them: submits,
revisions, skips, flags, more assignments (also by dynamic overlap and control pairs), unassignment,
reassignment, archive and restore, deleting a study; also with processes submitting at once; rows
written outside the tool are found and counted again."""

from collections import defaultdict
from pathlib import Path

import pytest
from sqlalchemy import insert, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select
from typer.testing import CliRunner

from annotator.cli import app
from annotator.intake import assign, controls, study_admin
from annotator.people.authorization import SYSTEM
from annotator.rating import drafts, labels
from annotator.review import study_progress
from annotator.store import db, tallies
from annotator.store.models import Assignment, Study, Tally, User, id_of
from tests.utils.concurrency import Step, check_consistent, make_small_study, queues, run_workers
from tests.utils.factories import account_for, make_annotators, make_form, make_study, make_user
from tests.utils.qchelpers import answer_all


def _agree(engine: Engine) -> None:
    with Session(engine) as session:
        for study_id in session.exec(select(Study.id)).all():
            assert study_id is not None
            stored = tallies.stored(session, study_id)
            fresh = {
                k: (n, round(t, 6))
                for k, (n, t) in tallies.counted(session, study_id, None).items()
                if n or t
            }
            assert stored == fresh


@pytest.fixture
def study(engine: Engine, tmp_path: Path) -> str:
    make_study(engine, tmp_path, 8)
    make_annotators(engine, 3)
    with db.session_scope(engine) as session:
        assign.assign(session, study="s1", overlap=2, account=SYSTEM)
    return "s1"


def _first_open(engine: Engine, username: str) -> tuple[int, int]:
    with Session(engine) as session:
        user = session.exec(select(User).where(User.username == username)).one()
        item = session.exec(
            select(Assignment)
            .where(Assignment.annotator_id == user.id, Assignment.status == "pending")
            .order_by(col(Assignment.position))
        ).first()
        assert item is not None
        return id_of(user), id_of(item)


def test_every_write_leaves_the_tallies_equal_to_a_count(engine: Engine, study: str, tmp_path: Path) -> None:
    _agree(engine)
    answer_all(engine, "ann00")
    answer_all(engine, "ann00", k=1)  # nothing left to serve: no revision
    user_id, item = _first_open(engine, "ann01")
    with db.session_scope(engine) as session:
        worker = account_for(session, user_id)
        labels.skip(session, assignment_id=item, account=worker, reason="later")
    with db.session_scope(engine) as session:
        labels.skip(session, assignment_id=item, account=worker, reason="again")  # skipped once only
    _agree(engine)
    with db.session_scope(engine) as session:
        labels.show(session, assignment_id=item, account=worker)
        labels.submit(session, assignment_id=item, account=worker, submission=make_form("first", 0))
    with db.session_scope(engine) as session:  # a revision moves the time on task to the new judgment
        labels.submit(session, assignment_id=item, account=worker, submission=make_form("second", 1))
    _agree(engine)
    _, other = _first_open(engine, "ann01")
    with db.session_scope(engine) as session:
        drafts.flag_item(session, assignment_id=other, account=worker, reason="broken")
    _agree(engine)
    added = 0
    for kind in ("swap", "degrade", "duplicate"):  # control pairs mixed into the queues
        with db.session_scope(engine) as session:
            made = controls.make_controls(session, study=study, kind=kind, n=2, account=SYSTEM)  # type: ignore[arg-type]
            added += made.assignments
    assert added > 0
    _agree(engine)
    make_study(engine, tmp_path, 3, start=8)
    with db.session_scope(engine) as session:
        assign.assign(session, study=study, overlap=2, account=SYSTEM)
    _agree(engine)
    with db.session_scope(engine) as session:
        researcher = account_for(session, id_of(make_user(session, "lead", role="researcher")))
        moved = study_progress.reassign_open(session, account=researcher, study=study, username="ann02")
    assert moved > 0
    _agree(engine)
    with db.session_scope(engine) as session:
        study_admin.unassign(session, study=study, annotators=["ann01"], account=SYSTEM)
    _agree(engine)
    with db.session_scope(engine) as session:
        study_admin.set_archived(session, study=study, archived=True, account=SYSTEM)
    with db.session_scope(engine) as session:
        study_admin.set_archived(session, study=study, archived=False, account=SYSTEM)
    _agree(engine)
    with Session(engine) as session:
        assert not tallies.ensure(session)  # nothing written outside the tool: nothing to rebuild


def test_deleting_an_unrated_study_deletes_its_tallies(engine: Engine, study: str) -> None:
    with db.session_scope(engine) as session:
        study_admin.delete_study(session, study=study, confirm=study, account=SYSTEM)
    with Session(engine) as session:
        assert session.exec(select(Tally)).all() == []


def test_rows_written_outside_the_tool_are_counted_again(engine: Engine, study: str) -> None:
    answered = answer_all(engine, "ann00")
    with engine.begin() as connection:  # a bulk load that bypasses the services
        connection.execute(text("DELETE FROM tally"))
    with db.session_scope(engine) as session:
        people = study_progress.annotator_progress(session, study=study, account=SYSTEM)
    assert people["assigned"].sum() == 16 and people["done"].sum() == answered > 0
    _agree(engine)
    with engine.begin() as connection:  # a status edited by hand: the totals cannot show it
        connection.execute(text("UPDATE assignment SET status = 'flagged' WHERE status = 'pending'"))
    with db.session_scope(engine) as session:
        assert not tallies.ensure(session)
        assert tallies.rebuild(session) == ["s1"]  # found by a recount (`annotator recount`)
    _agree(engine)


def test_the_recount_command_repairs_and_says_what_it_found(env_db: str, engine: Engine, study: str) -> None:
    with engine.begin() as connection:
        connection.execute(text("UPDATE tally SET n = n + 5 WHERE kind = 'assigned'"))
    result = CliRunner().invoke(app, ["recount"])
    assert result.exit_code == 0, result.output
    assert "s1" in result.output and "counted again" in result.output
    _agree(engine)
    again = CliRunner().invoke(app, ["recount"])
    assert again.exit_code == 0 and "agree" in again.output


def test_new_assignments_inserted_in_bulk_are_tallied(engine: Engine, study: str) -> None:
    with Session(engine) as session:
        user_id, _ = _first_open(engine, "ann00")
        mine = set(session.exec(select(Assignment.pair_id).where(Assignment.annotator_id == user_id)).all())
        pair_ids = set(session.exec(select(Assignment.pair_id)).all()) - mine
    rows = [
        {"study_id": 1, "pair_id": p, "annotator_id": user_id, "chosen_side": "A", "position": 100 + i}
        for i, p in enumerate(sorted(pair_ids))
    ]
    with db.session_scope(engine) as session:
        session.execute(insert(Assignment), rows)
        tallies.assigned(session, rows)
    _agree(engine)


@pytest.mark.slow  # spawned processes
def test_processes_submitting_at_once_leave_the_tallies_equal_to_a_count(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    """Six processes, two per annotator ("tabs") on the same items: submits and revisions of one item
    at the same moment, and every 4th form sent by both tabs (a double submit)."""
    study = make_small_study(engine, tmp_path)
    plans: list[list[Step]] = []
    expected: dict[int, set[str]] = defaultdict(set)
    for user_id, queue in study.items():
        for tab in range(2):
            plan: list[Step] = []
            for i in range(12):
                double = i % 4 == 0
                assignment_id = queue[(i + (0 if double else 2 * tab)) % len(queue)]
                submission_id = f"u{user_id}-{i}" if double else f"u{user_id}-t{tab}-{i}"
                plan.append((user_id, assignment_id, submission_id, i + tab, True))
                expected[assignment_id].add(submission_id)
            plans.append(plan)
    latencies, errors = run_workers(db_url, plans)
    assert errors == []
    check_consistent(engine, expected)
    _agree(engine)
    with Session(engine) as session:
        done = tallies.stored(session, 1)
    assert sum(n for (_, kind, _), (n, _) in done.items() if kind == "minute") == sum(
        len(ids) for ids in expected.values()
    )
    assert queues(engine)


def test_the_migration_fills_the_tallies_from_the_rows(engine: Engine, study: str) -> None:
    """A database with judgments, taken back to the schema before the tallies, is upgraded: the new
    table holds the same counts as a count over the rows."""
    from alembic import command

    answer_all(engine, "ann00")
    with Session(engine) as session:
        before = tallies.stored(session, 1)
    assert before
    config = db._alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0016_stored_result")
    assert db.current_revision(engine) == "0016_stored_result"
    db.upgrade(engine)
    with Session(engine) as session:
        assert tallies.stored(session, 1) == before
    _agree(engine)


def test_the_totals_are_checked_once_per_transaction(
    engine: Engine, study: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page that reads several tallies checks them against the rows once; the next transaction
    checks again (and rebuilds what was written outside the tool in between)."""
    answer_all(engine, "ann00")
    calls: list[int] = []
    counted = tallies.totals
    monkeypatch.setattr(tallies, "totals", lambda session: calls.append(1) or counted(session))
    with Session(engine) as session:
        assert not tallies.ensure(session)
        study_progress.annotator_progress(session, study=study, account=SYSTEM)
        study_progress.judgments_over_time(session, study=study, account=SYSTEM)
        assert len(calls) == 1
        session.commit()
        with engine.begin() as connection:  # a bulk load that bypasses the services
            connection.execute(text("DELETE FROM tally"))
        assert tallies.ensure(session)  # a new transaction: checked again, and rebuilt
        assert len(calls) == 2
        session.commit()
    _agree(engine)
