"""Qualification (annotator/people/training.py): training with feedback and a pass threshold, a comprehension
check with a limited number of attempts, and the Training page (AppTest)."""

from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Button

from annotator.errors import AuthError, ConfigError, UserError
from annotator.intake.assign import assign
from annotator.people import training
from annotator.people.authorization import SYSTEM, Account
from annotator.rating import labels
from annotator.store import db
from annotator.store.models import id_of
from annotator.study import Training, parse_config
from tests.utils.apphelpers import app_for
from tests.utils.factories import make_annotators
from tests.utils.qchelpers import qc_config, qc_study

ITEM = {
    "question": "Which fits the user better?",
    "options": ["A", "B", "Tie"],
    "answer": 1,
    "explanation": "B uses the profile.",
}
CHECK = {"question": "What does a tie mean?", "options": ["Equal fit", "Both bad"], "answer": 0}
TRAINING = {
    "items": [ITEM, ITEM | {"answer": 0}],
    "pass_threshold": 1.0,
    "comprehension": [CHECK],
    "comprehension_attempts": 2,
}


def _setup(engine: Engine, folder: Path, **training_config: object) -> Account:
    qc_study(engine, folder, 2, training=TRAINING | training_config)
    (user_id,) = make_annotators(engine, 1)
    with db.session_scope(engine) as session:
        assign(session, study="s1", overlap=1, account=SYSTEM)
    return Account(id=user_id, username="ann00", role="annotator")


def _status(engine: Engine, account: Account) -> training.TrainingStatus:
    with db.session_scope(engine) as session:
        return training.status(session, account=account, study_id=1)


def _answer(engine: Engine, account: Account, choice: int) -> training.Feedback:
    with db.session_scope(engine) as session:
        return training.answer_training(session, account=account, study_id=1, choice=choice)


def _comprehend(engine: Engine, account: Account, choice: int) -> training.ComprehensionResult:
    with db.session_scope(engine) as session:
        return training.submit_comprehension(session, account=account, study_id=1, choices=[choice])


def test_a_training_item_gives_the_expected_answer_and_its_explanation(
    engine: Engine, tmp_path: Path
) -> None:
    account = _setup(engine, tmp_path)
    feedback = _answer(engine, account, 0)
    assert (feedback.correct, feedback.expected, feedback.explanation) == (False, "B", "B uses the profile.")


def test_training_below_the_threshold_starts_a_new_attempt(engine: Engine, tmp_path: Path) -> None:
    account = _setup(engine, tmp_path)
    _answer(engine, account, 0)
    last = _answer(engine, account, 0)
    state = _status(engine, account)
    assert (last.attempt_done, last.attempt_passed, state.attempt, state.training_passed) == (
        True,
        False,
        2,
        False,
    )
    assert (last.right, last.items, last.needed) == (1, 2, 2)  # the score the page shows


def test_training_and_comprehension_passed_qualify(engine: Engine, tmp_path: Path) -> None:
    account = _setup(engine, tmp_path)
    _answer(engine, account, 1)
    _answer(engine, account, 0)
    assert _status(engine, account).training_passed and not _status(engine, account).qualified
    assert _comprehend(engine, account, 0).passed
    assert _status(engine, account).qualified


def test_the_comprehension_check_allows_the_configured_attempts(engine: Engine, tmp_path: Path) -> None:
    account = _setup(engine, tmp_path)
    assert _comprehend(engine, account, 1).attempts_left == 1
    assert _comprehend(engine, account, 1).attempts_left == 0
    assert _status(engine, account).comprehension_failed
    with pytest.raises(UserError, match="no attempts left"):
        _comprehend(engine, account, 0)


def test_a_study_without_training_needs_no_qualification(engine: Engine, tmp_path: Path) -> None:
    qc_study(engine, tmp_path, 2)
    (user_id,) = make_annotators(engine, 1)
    assert _status(engine, Account(id=user_id, username="ann00", role="annotator")).qualified


def test_a_training_answer_must_be_an_index_into_the_options() -> None:
    with pytest.raises(ConfigError, match="training.items.0: answer 5 is not an index of the 3 options"):
        parse_config(qc_config().model_dump() | {"training": {"items": [ITEM | {"answer": 5}]}})


def test_training_config_defaults_require_nothing() -> None:
    assert not Training().required


def _app(db_url: str, monkeypatch: pytest.MonkeyPatch, account: Account) -> AppTest:
    monkeypatch.setenv("ANNOTATOR_DB_URL", db_url)
    return app_for(account)


def test_the_rating_page_sends_an_unqualified_annotator_to_training(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = _setup(engine, tmp_path)
    with db.session_scope(engine) as session:
        from annotator.people import accounts

        accounts.acknowledge_guidelines(session, account=account)
    at = _app(db_url, monkeypatch, account)
    assert not at.exception
    assert any("complete the training first" in info.value for info in at.info)
    assert not at.segmented_control


def test_the_training_page_shows_feedback_after_an_answer(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = _setup(engine, tmp_path)
    at = _app(db_url, monkeypatch, account)
    at.switch_page("views/training.py").run()
    assert not at.exception
    at.radio(key="training_choice_1_0").set_value(0).run()
    at.button(key="training_check").click().run()
    assert not at.exception
    assert any("Your answer: A. The expected answer: B" in error.value for error in at.error)
    assert any("B uses the profile." in info.value for info in at.info)
    assert any("Which fits the user better?" in md.value for md in at.markdown)  # the item stays in view
    at.button(key="training_next").click().run()
    at.radio(key="training_choice_1_1").set_value(0).run()
    at.button(key="training_check").click().run()
    assert any("Not passed yet: 1 of 2 right, 2 needed." in md.value for md in at.markdown)


def test_a_failed_comprehension_attempt_gives_a_fresh_form_whose_submit_counts(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a wrong attempt the page shows a fresh form under the result, both counting the same
    attempts; the next submit is graded (it was lost: the form's key had moved on)."""
    account = _setup(engine, tmp_path)
    _answer(engine, account, 1)
    _answer(engine, account, 0)
    at = _app(db_url, monkeypatch, account)
    at.switch_page("views/training.py").run()
    at.radio(key="comprehension_0_0").set_value(1)
    _submit(at).click().run()
    assert not at.exception
    assert [e.value for e in at.error] == ["Not all answers were right. You have 1 more attempt."]
    assert any("Attempts left: 1." in c.value for c in at.caption)
    assert at.radio(key="comprehension_1_0").value is None  # a fresh form
    at.radio(key="comprehension_1_0").set_value(0)
    _submit(at).click().run()
    assert not at.exception
    assert _status(engine, account).qualified
    assert any("You are qualified" in s.value for s in at.success)


def test_the_service_serves_no_item_before_qualification(engine: Engine, tmp_path: Path) -> None:
    account = _setup(engine, tmp_path)
    with db.session_scope(engine) as session:
        item = labels.next_assignment(session, account=account, study_id=1)
        assert item is not None
        with pytest.raises(AuthError, match="complete the training first"):
            labels.show(session, assignment_id=id_of(item), account=account)
    _answer(engine, account, 1)
    _answer(engine, account, 0)
    _comprehend(engine, account, 0)
    with db.session_scope(engine) as session:
        assert labels.show(session, assignment_id=id_of(item), account=account).text_a


def _submit(at: AppTest) -> Button:
    """The comprehension form's Submit button."""
    return next(b for b in at.button if b.label == "Submit")
