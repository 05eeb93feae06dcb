"""Undoing set-up work (annotator.intake.study_admin, `annotator assign --unassign`, `annotator study`):
unassign only items not yet started, archive / restore, delete only an unrated study; each audited."""

from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from annotator.cli import app
from annotator.errors import UserError
from annotator.intake import study_admin
from annotator.intake.assign import assign, assigned_annotators
from annotator.intake.controls import make_controls
from annotator.people.authorization import SYSTEM
from annotator.rating import drafts, labels
from annotator.review import study_progress
from annotator.review.study_progress import study_names
from annotator.store import db
from annotator.store.models import Assignment, Draft, Event, Judgment, Pair, Study, User
from tests.utils.concurrency import (
    draft_worker,
    make_small_study,
    queues,
    run_processes,
    unassign_worker,
    worker,
)
from tests.utils.factories import account_for, make_annotators, make_form, make_study

runner = CliRunner()


@pytest.fixture
def study(engine: Engine, tmp_path: Path) -> dict[int, list[int]]:
    """Study s1: ten pairs, annotators ann00-ann02 with all ten each (annotator id -> assignment ids)."""
    return make_small_study(engine, tmp_path)


def _start(engine: Engine, user_id: int, *, judged: int, drafted: int) -> None:
    """Submit the first `judged` items of the annotator's queue and keep a draft on `drafted` more."""
    queue = queues(engine)[user_id]
    with db.session_scope(engine) as session:
        account = account_for(session, user_id)
        for k, assignment_id in enumerate(queue[:judged]):
            labels.submit(
                session,
                assignment_id=assignment_id,
                account=account,
                submission=make_form(f"u{user_id}-{k}", k),
            )
        for assignment_id in queue[judged : judged + drafted]:
            drafts.save_draft(session, assignment_id=assignment_id, account=account, answers={"q": 1})


def _events(engine: Engine, action: str) -> list[dict[str, object]]:
    with Session(engine) as session:
        return [e.detail for e in session.exec(select(Event).where(Event.action == action))]


def test_unassign_removes_only_items_not_started_and_lists_the_kept(
    engine: Engine, study: dict[int, list[int]]
) -> None:
    first = next(iter(study))
    _start(engine, first, judged=2, drafted=1)
    with db.session_scope(engine) as session:
        summary = study_admin.unassign(session, study="s1", annotators=["ann00"], account=SYSTEM)
    assert summary.removed == 7
    assert sorted(why for _, _, why in summary.kept) == ["draft", "judged", "judged"]
    assert {name for name, _, _ in summary.kept} == {"ann00"}
    left = queues(engine)
    assert len(left[first]) == 3  # the started three
    assert all(len(left[other]) == 10 for other in study if other != first)  # others untouched
    assert _events(engine, "unassign") == [{"study": "s1", "annotators": ["ann00"], "removed": 7, "kept": 3}]


def test_unassign_without_names_takes_every_annotator_and_a_preview_writes_nothing(
    engine: Engine, study: dict[int, list[int]]
) -> None:
    with db.session_scope(engine) as session:
        preview = study_admin.unassign_preview(session, study="s1", account=SYSTEM)
    assert preview.removed == 30
    assert sum(len(q) for q in queues(engine).values()) == 30
    assert _events(engine, "unassign") == []
    with db.session_scope(engine) as session:
        assert study_admin.unassign(session, study="s1", account=SYSTEM).removed == 30
    assert queues(engine) == {}


def test_unassign_refuses_an_unknown_name_and_an_annotator(
    engine: Engine, study: dict[int, list[int]]
) -> None:
    with pytest.raises(UserError, match="no user called 'nobody'"), db.session_scope(engine) as session:
        study_admin.unassign(session, study="s1", annotators=["nobody"], account=SYSTEM)
    first = next(iter(study))
    with pytest.raises(UserError, match="needs researcher"), db.session_scope(engine) as session:
        study_admin.unassign(session, study="s1", account=account_for(session, first))
    assert sum(len(q) for q in queues(engine).values()) == 30


def test_the_picker_default_is_the_annotators_already_on_the_study(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 6)
    make_annotators(engine, 4)
    with db.session_scope(engine) as session:
        assert assigned_annotators(session, "s1") == []
        assign(session, study="s1", overlap=1, annotators=["ann01", "ann03"], account=SYSTEM)
    with db.session_scope(engine) as session:
        assert assigned_annotators(session, "s1") == ["ann01", "ann03"]
    assert _events(engine, "assign")[0]["annotators"] == ["ann01", "ann03"]


def test_archive_hides_a_study_from_every_picker_and_restore_brings_it_back(
    engine: Engine, study: dict[int, list[int]], tmp_path: Path
) -> None:
    make_study(engine, tmp_path, 3, study="other")
    first = next(iter(study))
    with db.session_scope(engine) as session:
        line = study_admin.set_archived(session, study="s1", archived=True, account=SYSTEM)
    assert "archived" in line
    with db.session_scope(engine) as session:
        assert study_names(session) == ["other"]
        assert study_admin.archived_studies(session) == ["s1"]
        assert labels.annotator_studies(session, account=account_for(session, first)) == []
        with pytest.raises(UserError, match="archived; restore it first"):
            assign(session, study="s1", overlap=1, account=SYSTEM)
        assert session.exec(select(func.count()).select_from(Assignment)).one() == 30  # data kept
    with db.session_scope(engine) as session:
        study_admin.set_archived(session, study="s1", archived=False, account=SYSTEM)
    with db.session_scope(engine) as session:
        assert study_names(session) == ["other", "s1"]
        assert [
            name for _, name in labels.annotator_studies(session, account=account_for(session, first))
        ] == ["s1"]
    assert _events(engine, "study_archive") == [{"study": "s1"}]
    assert _events(engine, "study_restore") == [{"study": "s1"}]


def test_delete_needs_the_typed_name_and_a_study_without_judgments(
    engine: Engine, study: dict[int, list[int]], tmp_path: Path
) -> None:
    make_study(engine, tmp_path, 3, study="kept")
    with pytest.raises(UserError, match="type the study's name 's1' exactly"), db.session_scope(engine) as s:
        study_admin.delete_study(s, study="s1", confirm="s 1", account=SYSTEM)
    _start(engine, next(iter(study)), judged=1, drafted=0)
    with (
        pytest.raises(UserError, match="has 1 judgments; it cannot be deleted"),
        db.session_scope(engine) as s,
    ):
        study_admin.delete_study(s, study="s1", confirm="s1", account=SYSTEM)
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(Judgment)).one() == 1
    assert _events(engine, "study_delete") == []


def test_delete_removes_an_unrated_study_with_its_controls_and_drafts(
    engine: Engine, study: dict[int, list[int]], tmp_path: Path
) -> None:
    make_study(engine, tmp_path, 3, study="kept")
    with db.session_scope(engine) as session:
        make_controls(session, study="s1", kind="duplicate", n=2, seed=0, account=SYSTEM)
    _start(engine, next(iter(study)), judged=0, drafted=2)
    with db.session_scope(engine) as session:
        assert (
            study_admin.delete_study(session, study="s1", confirm="s1", account=SYSTEM)
            == "study 's1' deleted"
        )
    with Session(engine) as session:
        assert session.exec(select(Study.name)).all() == ["kept"]
        assert session.exec(select(func.count()).select_from(Pair)).one() == 3
        assert session.exec(select(func.count()).select_from(Assignment)).one() == 0
        assert session.exec(select(func.count()).select_from(Draft)).one() == 0
        assert session.exec(select(func.count()).select_from(User)).one() == 3  # accounts stay
    assert _events(engine, "study_delete") == [{"study": "s1"}]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--needs-more"], "--needs-more"),
        (["--overlap", "2", "--judge", "j", "--sample", "5"], "--overlap, --judge, --sample"),
    ],
)
def test_unassign_with_an_option_that_assigns_is_refused_and_removes_nothing(
    env_db: str, engine: Engine, study: dict[int, list[int]], options: list[str], named: str
) -> None:
    with Session(engine) as session:
        before = session.exec(select(func.count()).select_from(Assignment)).one()
    result = runner.invoke(app, ["assign", "--study", "s1", "--unassign", *options])
    assert result.exit_code == 1
    assert (
        result.output.strip() == f"error: --unassign removes items and takes only --annotators, not {named}"
    )
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(Assignment)).one() == before > 0


def test_the_cli_unassigns_archives_restores_and_deletes(
    env_db: str, engine: Engine, study: dict[int, list[int]]
) -> None:
    _start(engine, next(iter(study)), judged=1, drafted=0)
    result = runner.invoke(app, ["assign", "--study", "s1", "--unassign", "--annotators", "ann00"])
    assert result.exit_code == 0, result.output
    assert "9 assignments not yet started removed; 1 started kept" in result.output
    assert "kept: ann00 pair-" in result.output and "(judged)" in result.output
    result = runner.invoke(app, ["study", "archive", "--study", "s1"])
    assert result.exit_code == 0 and "archived" in result.output
    result = runner.invoke(app, ["study", "restore", "--study", "s1"])
    assert result.exit_code == 0 and "restored" in result.output
    result = runner.invoke(app, ["study", "delete", "--study", "s1"], input="s1\n")
    assert result.exit_code == 1
    assert "has 1 judgments; it cannot be deleted (archive it instead)" in result.output
    assert "Traceback" not in result.output
    make_study(engine, Path("."), 2, study="empty")
    result = runner.invoke(app, ["study", "delete", "--study", "empty", "--confirm", "nope"])
    assert result.exit_code == 1 and "type the study's name 'empty' exactly" in result.output
    result = runner.invoke(app, ["study", "delete", "--study", "empty"], input="empty\n")
    assert result.exit_code == 0 and "study 'empty' deleted" in result.output
    assert [d["study"] for d in _events(engine, "study_delete")] == ["empty"]


@pytest.mark.slow  # about 15 s: four spawned processes
def test_unassign_in_parallel_with_submits_and_drafts_never_removes_a_started_item(
    db_url: str, engine: Engine, study: dict[int, list[int]]
) -> None:
    """One process unassigns everything while two annotators submit and a third saves drafts, all
    released by one barrier. Afterwards exactly the started items (a judgment or a draft) are left; a
    submit or draft that came after the unassign is refused in one line ("not yours")."""
    (a, qa), (b, qb), (c, qc) = study.items()
    errors = run_processes(
        [
            (unassign_worker, (db_url, "s1")),
            (worker, (db_url, [(a, x, f"a{i}", i, i == 0) for i, x in enumerate(qa)])),
            (worker, (db_url, [(b, x, f"b{i}", i, i == 0) for i, x in enumerate(qb)])),
            (draft_worker, (db_url, [(c, x) for x in qc])),
        ]
    )
    assert all("is not yours" in e or "not assigned" in e or "AuthError" in e for e in errors), errors
    with Session(engine) as session:
        left = set(session.exec(select(Assignment.id)).all())
        judged = set(session.exec(select(Judgment.assignment_id)).all())
        drafted = set(session.exec(select(Draft.assignment_id)).all())
        (event,) = [e.detail for e in session.exec(select(Event).where(Event.action == "unassign"))]
    assert left == judged | drafted
    assert event["removed"] + len(left) == 30


def test_a_pair_is_complete_only_with_the_studys_overlap_of_judgments(engine: Engine, tmp_path: Path) -> None:
    """A pair nobody has yet is never complete; in a crowd study (items assigned as workers arrive) a
    pair also needs the overlap (3) of judgments."""
    from annotator.intake.assign import assign_pairs, study_pair_ids
    from annotator.review.study_progress import pair_counts

    make_study(engine, tmp_path, 5)
    users = make_annotators(engine, 3)
    with db.session_scope(engine) as session:
        first = study_pair_ids(session, "s1")[0]
        for name in ("ann00", "ann01"):
            assign_pairs(session, study="s1", annotator=name, pair_ids=[first])
    for user_id in users[:2]:
        _start(engine, user_id, judged=1, drafted=0)
    with db.session_scope(engine) as session:
        assert pair_counts(session, study="s1", account=SYSTEM) == {"pairs": 5, "complete": 1}
        row = session.exec(select(Study)).one()
        row.config = {**row.config, "crowd": {"platform": "prolific", "places": 5}}
        session.add(row)
    with db.session_scope(engine) as session:
        assert pair_counts(session, study="s1", account=SYSTEM) == {"pairs": 5, "complete": 0}
        assign_pairs(session, study="s1", annotator="ann02", pair_ids=[first])
    _start(engine, users[2], judged=1, drafted=0)
    with db.session_scope(engine) as session:
        assert pair_counts(session, study="s1", account=SYSTEM) == {"pairs": 5, "complete": 1}


def test_reassign_by_the_system_account_is_audited_without_a_user(engine: Engine, tmp_path: Path) -> None:
    """The system account (scripts, the CLI) has no user row: its reassignment is audited with no user."""
    make_study(engine, tmp_path, 6)
    make_annotators(engine, 3)
    with db.session_scope(engine) as session:
        assign(session, study="s1", overlap=1, account=SYSTEM)
    with db.session_scope(engine) as session:
        moved = study_progress.reassign_open(session, account=SYSTEM, study="s1", username="ann00")
    assert moved > 0
    with Session(engine) as session:
        event = session.exec(select(Event).where(Event.action == "reassign")).one()
    assert event.user_id is None
    assert event.detail == {"study": "s1", "from": "ann00", "moved": moved}
