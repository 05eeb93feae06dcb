"""Training pairs (annotator/people/training.py): records marked `"control": "training"` in the pairs file
are practice items with feedback after the study.toml questions, count toward the pass threshold,
open the real queue only once passed, and never enter it; the Training page shows them (AppTest)."""

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from annotator.errors import AuthError
from annotator.intake.assign import assign
from annotator.people import training
from annotator.people.authorization import SYSTEM, Account
from annotator.rating import labels
from annotator.store import db
from annotator.store.models import Assignment, Pair, id_of
from tests.utils.apphelpers import app_for
from tests.utils.factories import make_annotators, make_record
from tests.utils.qchelpers import qc_study

QUESTION = {"question": "Which fits the user better?", "options": ["A", "B"], "answer": 1}
EXPLAIN = "The chosen plan is for two people, as the profile says."


def _training_pair(i: int, preference: int = 1, **overrides: Any) -> dict[str, Any]:
    return make_record(
        100 + i,
        control="training",
        expected={"preference": preference, "explanation": EXPLAIN},
        **overrides,
    )


def _setup(engine: Engine, folder: Path, pairs: list[dict[str, Any]], **training_config: object) -> Account:
    qc_study(engine, folder, 2, extra=pairs, training=training_config)
    (user_id,) = make_annotators(engine, 1)
    with db.session_scope(engine) as session:
        assign(session, study="s1", overlap=1, account=SYSTEM)
    return Account(id=user_id, username="ann00", role="annotator")


def _items(engine: Engine, account: Account) -> list[training.PracticeItem]:
    with db.session_scope(engine) as session:
        return training.practice_items(session, account=account, study_id=1)


def _answer(engine: Engine, account: Account, choice: int) -> training.Feedback:
    with db.session_scope(engine) as session:
        return training.answer_training(session, account=account, study_id=1, choice=choice)


def _status(engine: Engine, account: Account) -> training.TrainingStatus:
    with db.session_scope(engine) as session:
        return training.status(session, account=account, study_id=1)


def test_training_pairs_follow_the_questions(engine: Engine, tmp_path: Path) -> None:
    account = _setup(engine, tmp_path, [_training_pair(0), _training_pair(1)], items=[QUESTION])
    items = _items(engine, account)
    assert [item.pair is not None for item in items] == [False, True, True]
    assert _status(engine, account).items == 3


def test_a_training_pair_shows_both_responses_with_chosen_on_the_expected_side(
    engine: Engine, tmp_path: Path
) -> None:
    account = _setup(engine, tmp_path, [_training_pair(0)])
    (item,) = _items(engine, account)
    assert item.pair is not None
    record = _training_pair(0)
    expected_text = item.pair.response_a if item.answer == 0 else item.pair.response_b
    assert expected_text == record["chosen"]
    assert {item.pair.response_a, item.pair.response_b} == {record["chosen"], record["rejected"]}


def test_a_training_pair_answer_gets_the_expected_answer_and_explanation(
    engine: Engine, tmp_path: Path
) -> None:
    account = _setup(engine, tmp_path, [_training_pair(0)])
    (item,) = _items(engine, account)
    feedback = _answer(engine, account, 1 - item.answer)
    assert (feedback.correct, feedback.expected, feedback.explanation) == (
        False,
        item.options[item.answer],
        EXPLAIN,
    )


def test_a_tie_expected_on_a_training_pair_is_the_both_equally_option(engine: Engine, tmp_path: Path) -> None:
    account = _setup(engine, tmp_path, [_training_pair(0, preference=0)])
    (item,) = _items(engine, account)
    assert item.options[item.answer] == training.PAIR_OPTIONS[2]


def test_training_pairs_count_toward_the_pass_threshold(engine: Engine, tmp_path: Path) -> None:
    account = _setup(engine, tmp_path, [_training_pair(0)], items=[QUESTION], pass_threshold=1.0)
    pair_item = _items(engine, account)[1]
    _answer(engine, account, 1)  # the question: right
    last = _answer(engine, account, 1 - pair_item.answer)  # the pair: wrong
    assert (last.attempt_done, last.attempt_passed, _status(engine, account).attempt) == (True, False, 2)


def test_training_pairs_alone_close_the_real_queue_until_passed(engine: Engine, tmp_path: Path) -> None:
    account = _setup(engine, tmp_path, [_training_pair(0)])
    with db.session_scope(engine) as session:
        item = labels.next_assignment(session, account=account, study_id=1)
        assert item is not None
        with pytest.raises(AuthError, match="complete the training first"):
            labels.show(session, assignment_id=id_of(item), account=account)
    (practice,) = _items(engine, account)
    assert _answer(engine, account, practice.answer).attempt_passed
    with db.session_scope(engine) as session:
        assert labels.show(session, assignment_id=id_of(item), account=account).text_a


def test_training_pairs_never_enter_the_real_queue(engine: Engine, tmp_path: Path) -> None:
    _setup(engine, tmp_path, [_training_pair(0), _training_pair(1)])
    with Session(engine) as session:
        served = session.exec(
            select(Pair.control).join(Assignment, Assignment.pair_id == Pair.id)  # type: ignore[arg-type]
        ).all()
    assert served and "training" not in served


@pytest.mark.page
def test_the_training_page_shows_a_training_pair_and_its_feedback(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = _setup(engine, tmp_path, [_training_pair(0)])
    (item,) = _items(engine, account)
    monkeypatch.setenv("ANNOTATOR_DB_URL", db_url)
    at = app_for(account)
    at.switch_page("views/training.py").run()
    assert not at.exception
    shown = " ".join(m.value for m in at.markdown)
    assert item.pair is not None and item.pair.response_a in shown and item.pair.response_b in shown
    assert "1. **Aspect 0**: Reason 0  \n*Evidence:* “Evidence 0”" in shown  # as on the rating page
    at.radio(key="training_choice_1_0").set_value(1 - item.answer).run()
    at.button(key="training_check").click().run()
    assert not at.exception
    assert any(item.options[item.answer] in error.value for error in at.error)
    assert any(EXPLAIN in info.value for info in at.info)
    # the item stays below its feedback, so the explanation can be checked against the responses
    assert item.pair.response_a in " ".join(m.value for m in at.markdown)


@pytest.mark.page
def test_the_training_page_shows_training_pair_text_as_plain_text(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hostile = "![pixel](http://tracker.invalid/p.png) :green-background[**Recommended**]"
    account = _setup(engine, tmp_path, [_training_pair(0, chosen=hostile, rejected=hostile + " Shorter.")])
    monkeypatch.setenv("ANNOTATOR_DB_URL", db_url)
    at = app_for(account)
    at.switch_page("views/training.py").run()
    assert not at.exception
    shown = [m.value for m in at.markdown if "tracker.invalid" in m.value]
    assert len(shown) == 2
    assert all("!\\[pixel]" in text and "\\:green-background[" in text for text in shown)
