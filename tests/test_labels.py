"""Serving blinded items and saving judgments (annotator.rating.labels)."""

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from annotator.errors import AuthError, LabelError
from annotator.intake.assign import assign
from annotator.people.authorization import SYSTEM, Account
from annotator.rating import labels
from annotator.store import db
from annotator.store.models import Assignment, Judgment, Pair, Score, id_of
from tests.utils.factories import account_for, make_annotators, make_study

DIMENSIONS = ("correctness", "relevance", "helpfulness")
N_ASPECTS = 2  # make_record's default


@dataclasses.dataclass(frozen=True)
class Setup:
    engine: Engine
    study_id: int
    annotator: Account
    other: Account
    queue: list[int]  # the first annotator's assignment ids in queue order


@pytest.fixture
def setup(engine: Engine, tmp_path: Path) -> Iterator[Setup]:
    """Three pairs, two annotators, each with all three pairs in their queue."""
    make_study(engine, tmp_path, 3)
    annotator, other = make_annotators(engine, 2)
    with db.session_scope(engine) as session:
        assign(session, study="s1", overlap=2, seed=0, account=SYSTEM)
    with Session(engine) as session:
        found = session.exec(
            select(Assignment).where(Assignment.annotator_id == annotator).order_by(Assignment.position)
        ).all()
        me, them = account_for(session, annotator), account_for(session, other)
        yield Setup(engine, found[0].study_id, me, them, [id_of(a) for a in found])


def _set_side(engine: Engine, assignment_id: int, side: str) -> None:
    with engine.begin() as connection:
        connection.execute(update(Assignment).where(Assignment.id == assignment_id).values(chosen_side=side))


def _pair(engine: Engine, assignment_id: int) -> Pair:
    with Session(engine) as session:
        assignment = session.get(Assignment, assignment_id)
        assert assignment is not None
        pair = session.get(Pair, assignment.pair_id)
        assert pair is not None
        return pair


def _form(
    submission_id: str = "sub-1",
    *,
    a: int = 5,
    b: int = 2,
    preference: int | None = 0,
    confidence: int | None = 3,
    **changes: Any,
) -> labels.Submission:
    """A complete form: every dimension and rubric aspect rated `a` for A and `b` for B (aspects 2/0)."""
    scores: dict[str, dict[str, float | None]] = {
        "A": dict.fromkeys(DIMENSIONS, a) | {f"rubric:{k}": 2 for k in range(N_ASPECTS)},
        "B": dict.fromkeys(DIMENSIONS, b) | {f"rubric:{k}": 0 for k in range(N_ASPECTS)},
    }
    return dataclasses.replace(
        labels.Submission(
            submission_id=submission_id, preference=preference, scores=scores, confidence=confidence
        ),
        **changes,
    )


def _show(s: Setup, index: int = 0, user: Account | None = None) -> labels.ItemView:
    with db.session_scope(s.engine) as session:
        return labels.show(session, assignment_id=s.queue[index], account=user or s.annotator)


def _submit(s: Setup, form: labels.Submission, index: int = 0, user: Account | None = None) -> Judgment:
    with db.session_scope(s.engine) as session:
        return labels.submit(
            session, assignment_id=s.queue[index], account=user or s.annotator, submission=form
        )


def _count(engine: Engine, table: type) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(table)).one())


def _scores(engine: Engine, judgment_id: int | None) -> dict[tuple[str, str], float]:
    with Session(engine) as session:
        found = session.exec(select(Score).where(Score.judgment_id == judgment_id)).all()
    return {(score.response, score.item): score.value for score in found}


# ---------------------------------------------------------------------------------------- serving items


def test_next_assignment_follows_the_queue(setup: Setup) -> None:
    with Session(setup.engine) as session:
        found = labels.next_assignment(session, account=setup.annotator, study_id=setup.study_id)
    assert found is not None and found.id == setup.queue[0]


def test_next_assignment_is_none_when_all_are_done(setup: Setup) -> None:
    for index in range(3):
        _submit(setup, _form(f"sub-{index}"), index)
    with Session(setup.engine) as session:
        assert labels.next_assignment(session, account=setup.annotator, study_id=setup.study_id) is None


def test_the_item_view_has_no_pair_internals() -> None:
    names = {f.name for f in dataclasses.fields(labels.ItemView)}
    assert names == {
        "assignment_id",
        "study",
        "question",
        "narrative",
        "profile",
        "rubric",
        "text_a",
        "text_b",
        "revisions",
        "ask_support",
        "profile_shown",
        "shown_at",
        "token",
    }
    assert not any("chosen" in name or "rejected" in name or "pair" in name for name in names)


@pytest.mark.parametrize("side", ["A", "B"])
def test_show_puts_chosen_on_its_side(setup: Setup, side: str) -> None:
    _set_side(setup.engine, setup.queue[0], side)
    pair = _pair(setup.engine, setup.queue[0])
    view = _show(setup)
    expected = (pair.chosen, pair.rejected) if side == "A" else (pair.rejected, pair.chosen)
    assert (view.text_a, view.text_b) == expected


@pytest.mark.parametrize("side", ["A", "B"])
def test_the_responses_appear_only_as_a_and_b(setup: Setup, side: str) -> None:
    _set_side(setup.engine, setup.queue[0], side)
    pair = _pair(setup.engine, setup.queue[0])
    view = dataclasses.asdict(_show(setup))
    for key, value in view.items():
        if key not in ("text_a", "text_b"):
            assert pair.chosen not in str(value) and pair.rejected not in str(value)
    assert "chosen" not in str(view) and "rejected" not in str(view)
    assert {a["aspect"] for a in view["rubric"]} == {a["aspect"] for a in pair.rubric}
    assert all(set(a) == {"aspect", "reason", "evidence"} for a in view["rubric"])  # shown beside the rating


def test_show_refuses_another_annotators_item(setup: Setup) -> None:
    with pytest.raises(AuthError, match="not in your queue"):
        _show(setup, user=setup.other)


# ------------------------------------------------------------------------------------------ submitting


@pytest.mark.parametrize("side", ["A", "B"])
def test_scores_are_saved_against_chosen_and_rejected(setup: Setup, side: str) -> None:
    _set_side(setup.engine, setup.queue[0], side)
    _show(setup)
    judgment = _submit(setup, _form(a=5, b=2))
    scores = _scores(setup.engine, judgment.id)
    a_is = "chosen" if side == "A" else "rejected"
    b_is = "rejected" if side == "A" else "chosen"
    assert {scores[(a_is, d)] for d in DIMENSIONS} == {5.0}
    assert {scores[(b_is, d)] for d in DIMENSIONS} == {2.0}
    assert {scores[(a_is, f"rubric:{k}")] for k in range(N_ASPECTS)} == {2.0}
    assert {scores[(b_is, f"rubric:{k}")] for k in range(N_ASPECTS)} == {0.0}
    assert len(scores) == 2 * (len(DIMENSIONS) + N_ASPECTS)


@pytest.mark.parametrize(
    ("side", "index", "stored"),
    [
        ("A", 0, 2),
        ("B", 0, -2),
        ("A", 1, 1),
        ("B", 1, -1),
        ("A", 2, 0),
        ("B", 2, 0),
        ("A", 4, -2),
        ("B", 4, 2),
    ],
)
def test_the_preference_is_stored_for_chosen(setup: Setup, side: str, index: int, stored: int) -> None:
    _set_side(setup.engine, setup.queue[0], side)
    assert _submit(setup, _form(preference=index)).preference == stored


def test_current_answers_come_back_in_a_b_terms(setup: Setup) -> None:
    _set_side(setup.engine, setup.queue[0], "B")
    form = _form(a=4, b=1, preference=3, confidence=2, comment="ok")
    _submit(setup, form)
    with Session(setup.engine) as session:
        again = labels.current_answers(session, assignment_id=setup.queue[0], account=setup.annotator)
    assert again is not None
    assert (again.preference, again.confidence, again.comment) == (3, 2, "ok")
    assert again.scores == {
        side: {k: float(v or 0) for k, v in items.items()} for side, items in form.scores.items()
    }


def test_a_failed_submission_writes_nothing(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_score(**_: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(labels, "Score", broken_score)
    with pytest.raises(RuntimeError, match="disk on fire"):
        _submit(setup, _form())
    assert (_count(setup.engine, Judgment), _count(setup.engine, Score)) == (0, 0)
    assert _pair(setup.engine, setup.queue[0]).n_done == 0
    with Session(setup.engine) as session:
        assignment = session.get(Assignment, setup.queue[0])
        assert assignment is not None and assignment.status == "pending"


def test_a_repeated_submission_id_is_a_no_op(setup: Setup) -> None:
    first = _submit(setup, _form("same-id"))
    again = _submit(setup, _form("same-id", preference=4))
    assert again.id == first.id and again.preference == first.preference
    assert (_count(setup.engine, Judgment), _count(setup.engine, Score)) == (1, 10)
    assert _pair(setup.engine, setup.queue[0]).n_done == 1


def test_a_new_submission_adds_a_revision_and_keeps_the_first(setup: Setup) -> None:
    first = _submit(setup, _form("first", a=5, b=2))
    second = _submit(setup, _form("second", a=3, b=3, preference=2))
    assert (first.revision, second.revision) == (1, 2)
    assert set(_scores(setup.engine, first.id).values()) == {5.0, 2.0, 0.0}
    assert set(_scores(setup.engine, second.id).values()) == {3.0, 2.0, 0.0}
    with Session(setup.engine) as session:
        assignment = session.get(Assignment, setup.queue[0])
        assert assignment is not None
        assert (assignment.current_judgment_id, assignment.revisions) == (second.id, 2)
    assert _pair(setup.engine, setup.queue[0]).n_done == 1


def test_time_on_task_is_measured_on_the_server(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the server's clock when the item was shown to its clock at the submit (the browser's
    times are never used)."""
    shown = labels.utcnow()
    monkeypatch.setattr(labels, "utcnow", lambda: shown)
    _show(setup)
    monkeypatch.setattr(labels, "utcnow", lambda: shown + timedelta(seconds=42.5))
    judgment = _submit(setup, _form())
    assert judgment.time_on_task_s == pytest.approx(42.5)


def test_an_incomplete_form_names_what_is_missing(setup: Setup) -> None:
    form = _form(preference=None, confidence=None)
    del form.scores["A"]["relevance"]
    del form.scores["B"]["rubric:1"]
    with pytest.raises(LabelError) as info:
        _submit(setup, form)
    message = str(info.value)
    for missing in ("Response A: relevance", "Response B: rubric aspect 2", "better fits", "confidence"):
        assert missing in message
    assert "Response A: correctness" not in message
    assert (_count(setup.engine, Judgment), _count(setup.engine, Score)) == (0, 0)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"a": 6}, "Response A: correctness must be 1-5"),
        ({"preference": 5}, "preference must be one of the five choices"),
        ({"confidence": 0}, "confidence must be 1, 2 or 3"),
        ({"flag": True}, "a reason for the problem flag"),
    ],
)
def test_an_out_of_range_answer_is_refused(setup: Setup, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(LabelError, match=message):
        _submit(setup, _form(**changes))
    assert _count(setup.engine, Judgment) == 0


def test_an_unknown_item_is_refused(setup: Setup) -> None:
    form = _form()
    form.scores["A"]["rubric:7"] = 1
    with pytest.raises(LabelError, match="unknown items"):
        _submit(setup, form)


def test_an_unknown_response_side_is_refused(setup: Setup) -> None:
    form = _form()
    form.scores["C"] = {"correctness": 1}
    with pytest.raises(LabelError, match="unknown responses"):
        _submit(setup, form)
    assert _count(setup.engine, Score) == 0


def test_submit_refuses_another_annotators_item(setup: Setup) -> None:
    with pytest.raises(AuthError, match="not in your queue"):
        _submit(setup, _form(), user=setup.other)
    assert _count(setup.engine, Judgment) == 0


def test_a_submission_id_of_another_annotator_is_refused(setup: Setup) -> None:
    _submit(setup, _form("mine"))
    with db.session_scope(setup.engine) as session:
        theirs = labels.next_assignment(session, account=setup.other, study_id=setup.study_id)
        assert theirs is not None
        with pytest.raises(AuthError):
            labels.submit(session, assignment_id=id_of(theirs), account=setup.other, submission=_form("mine"))


def test_a_flag_with_a_reason_is_saved(setup: Setup) -> None:
    judgment = _submit(setup, _form(flag=True, flag_reason="  texts are truncated "))
    assert (judgment.flag, judgment.flag_reason) == (True, "texts are truncated")


# ----------------------------------------------------------------------------------- skipping, progress


def test_skip_moves_an_item_behind_the_others(setup: Setup) -> None:
    with db.session_scope(setup.engine) as session:
        labels.skip(session, assignment_id=setup.queue[0], account=setup.annotator, reason="unclear question")
    order = []
    for index in range(3):
        with Session(setup.engine) as session:
            found = labels.next_assignment(session, account=setup.annotator, study_id=setup.study_id)
            assert found is not None
            order.append(found.id)
        _submit(setup, _form(f"s{index}"), setup.queue.index(id_of(found)))
    assert order == [setup.queue[1], setup.queue[2], setup.queue[0]]


def test_skip_needs_a_reason(setup: Setup) -> None:
    with pytest.raises(LabelError, match="reason"), db.session_scope(setup.engine) as session:
        labels.skip(session, assignment_id=setup.queue[0], account=setup.annotator, reason=" ")


def test_skip_refuses_another_annotators_item(setup: Setup) -> None:
    with pytest.raises(AuthError), db.session_scope(setup.engine) as session:
        labels.skip(session, assignment_id=setup.queue[0], account=setup.other, reason="not mine")


def test_progress_counts_done_total_and_skipped(setup: Setup) -> None:
    _submit(setup, _form("a"), 0)
    _submit(setup, _form("b"), 0)  # a revision does not count twice
    with db.session_scope(setup.engine) as session:
        labels.skip(session, assignment_id=setup.queue[1], account=setup.annotator, reason="later")
    with Session(setup.engine) as session:
        mine = labels.progress(session, account=setup.annotator, study_id=setup.study_id)
        theirs = labels.progress(session, account=setup.other, study_id=setup.study_id)
    assert mine == labels.Progress(done=1, total=3, skipped=1)
    assert theirs == labels.Progress(done=0, total=3, skipped=0)


def test_finished_items_list_only_done_items(setup: Setup) -> None:
    _submit(setup, _form(), 1)
    with Session(setup.engine) as session:
        items = labels.finished_items(session, account=setup.annotator, study_id=setup.study_id)
    assert [item["assignment_id"] for item in items] == [setup.queue[1]]
    assert not any("chosen" in key or "rejected" in key for key in items[0])
