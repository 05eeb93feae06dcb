"""The crowd and training pages in AppTest: Training follows the study being rated; flagging every item
ends on the "no credit" screen, not the completion code; the researcher sees why on Progress."""

import re
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from annotator.app.common import CURRENT_STUDY_KEY
from annotator.intake.assign import assign
from annotator.people import accounts
from annotator.people.authorization import SYSTEM, Account
from annotator.rating import drafts
from annotator.store import db
from annotator.store.models import CrowdLink
from annotator.study import get_study
from tests.utils.apphelpers import MAIN, app_for, count_runs, shown_tables
from tests.utils.crowdhelpers import PROLIFIC, enter, link
from tests.utils.factories import make_annotators
from tests.utils.qchelpers import qc_study

ITEM = {"question": "Which fits the user better?", "options": ["A", "B"], "answer": 1}


def _two_studies(engine: Engine, folder: Path) -> tuple[Account, int]:
    """An annotator with items in "a1" (no training) and "b2" (a training item): the account, b2's id."""
    qc_study(engine, folder, 2, study="a1")
    qc_study(engine, folder, 2, study="b2", training={"items": [ITEM], "pass_threshold": 1.0})
    (user_id,) = make_annotators(engine, 1)
    with db.session_scope(engine) as session:
        for study in ("a1", "b2"):
            assign(session, study=study, overlap=1, account=SYSTEM)
        account = Account(id=user_id, username="ann00", role="annotator")
        accounts.acknowledge_guidelines(session, account=account)
        return account, int(get_study(session, "b2").id or 0)


@pytest.mark.page
@pytest.mark.parametrize("current", ["a1", "b2"])
def test_training_follows_the_study_being_rated(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, current: str
) -> None:
    account, b2 = _two_studies(engine, tmp_path)
    monkeypatch.setenv(db.ENV_VAR, db_url)
    at = app_for(account)  # the rating page, on the first study (a1): it is what the annotator works on
    if current == "b2":  # the annotator picked b2 on the rating page
        at.session_state[CURRENT_STUDY_KEY] = b2
    at.switch_page("views/training.py").run()
    assert not at.exception
    assert at.selectbox(key="training_study").value[1] == current
    practice = any("Practice item 1 of 1" in caption.value for caption in at.caption)
    qualified = any("You are qualified" in success.value for success in at.success)
    assert (practice, qualified) == ((True, False) if current == "b2" else (False, True))


def _every_item_flagged(
    engine: Engine, db_url: str, folder: Path, monkeypatch: pytest.MonkeyPatch, crowd: dict[str, Any]
) -> tuple[Account, AppTest]:
    """A crowd worker of a 3-item study (`crowd` settings) who flagged every item, on the rating page."""
    qc_study(engine, folder, 3, crowd=crowd)
    account = enter(engine, "flagger")
    with db.session_scope(engine) as session:
        accounts.acknowledge_guidelines(session, account=account)
        for assignment_id in range(1, 4):
            drafts.flag_item(session, assignment_id=assignment_id, account=account, reason="broken")
    monkeypatch.setenv(db.ENV_VAR, db_url)
    at = app_for(account)
    assert not at.exception
    return account, at


@pytest.mark.page
def test_flagging_every_item_ends_on_the_no_credit_screen(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account, at = _every_item_flagged(engine, db_url, tmp_path, monkeypatch, PROLIFIC)
    assert any("No completion code" in error.value for error in at.error)
    assert not any("C1A2B3" in code.value for code in at.code)
    with db.session_scope(engine) as session:
        researcher = accounts.add_user(
            session, username="res", role="researcher", password="a-long-passphrase-9", account=SYSTEM
        )
    page = app_for(Account(id=int(researcher.id or 0), username="res", role="researcher"))
    assert not page.exception
    cells = [  # the Progress page's tables, as a person reads them (labels, escaped Markdown)
        str(value).replace("\\", "")
        for frame in shown_tables(page)
        for column in frame.columns
        if "outcome" in str(column).lower()
        for value in frame[column]
    ]
    assert any(cell.startswith("no credit: 0 items rated (at least") for cell in cells), cells


def _move_start(engine: Engine, *, minutes: int) -> None:
    """Move the crowd worker's start `minutes` earlier (as if that much time had passed)."""
    with db.session_scope(engine) as session:
        row = session.exec(select(CrowdLink)).one()
        row.started_at = row.started_at - timedelta(minutes=minutes)
        session.add(row)


def _three_minutes_left(
    engine: Engine, db_url: str, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> AppTest:
    """A crowd worker of a 30-minute study (warning at 5) with 3 minutes left, on the rating page."""
    qc_study(engine, folder, 3, crowd=PROLIFIC | {"session_minutes": 30, "warn_minutes": 5})
    account = enter(engine, "timed")
    with db.session_scope(engine) as session:
        accounts.acknowledge_guidelines(session, account=account)
    _move_start(engine, minutes=27)
    monkeypatch.setenv(db.ENV_VAR, db_url)
    at = app_for(account)
    assert not at.exception
    return at


def test_the_countdown_warns_before_the_time_limit(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = time.monotonic()
    at = _three_minutes_left(engine, db_url, tmp_path, monkeypatch)
    spent = time.monotonic() - started  # the set-up and the page's run, however slow the machine
    assert any("Less than 3 minute(s) left" in warning.value for warning in at.warning)
    countdowns = [h.proto.body for h in at.get("html") if "ps-countdown" in h.proto.body]
    assert len(countdowns) == 1
    shown = re.search(r'id="ps-countdown">(\d+):(\d\d)<', countdowns[0])
    assert shown is not None, countdowns[0]
    left = 60 * int(shown[1]) + int(shown[2])
    assert 180 - spent - 1 <= left <= 180, (left, spent)  # 3 minutes left when the start was moved


def test_no_countdown_beside_the_completion_screen(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A timed study's worker with every item finished (3 minutes still left): the completion screen and
    no clock still counting down beside it."""
    timed = PROLIFIC | {"session_minutes": 30, "min_rated": 0, "max_flag_share": 1}
    _, at = _every_item_flagged(engine, db_url, tmp_path, monkeypatch, timed)
    assert any("C1A2B3" in code.value for code in at.code)
    assert not [h for h in at.get("html") if "ps-countdown" in h.proto.body]


def test_an_answer_sent_after_the_limit_says_it_was_not_counted(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page was drawn with 3 minutes left; the limit passes on the server before the submit
    arrives: the page says the answer was not counted and shows no item any more."""
    from annotator.app.rating_page import actions

    at = _three_minutes_left(engine, db_url, tmp_path, monkeypatch)
    assert at.button(key="annotate_submit")
    _move_start(engine, minutes=10)  # the server's clock passes the limit meanwhile
    at.button(key="annotate_submit").click().run()
    assert not at.exception
    assert [w.value for w in at.warning if "not counted" in w.value] == [actions.LATE]
    assert not [b for b in at.button if b.key == "annotate_submit"]


def test_a_study_link_opens_the_guidelines_in_one_run(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The study link is taken before the routing: the run of the first visit already draws the
    annotator's rating page (its guidelines step), and the worker id leaves the address."""
    qc_study(engine, tmp_path, 3, crowd=PROLIFIC)
    monkeypatch.setenv(db.ENV_VAR, db_url)
    runs = count_runs(monkeypatch)
    at = AppTest.from_file(str(MAIN), default_timeout=120)
    for key, value in link("worker1").items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert len(runs) == 1
    assert at.session_state["account"].role == "annotator"
    assert at.button(key="ack_guidelines")
    assert "PROLIFIC_PID" not in at.query_params


def test_a_worker_back_by_the_link_while_signed_in_leaves_no_worker_id_in_the_address(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Signed in already (the session, as after a reload with the cookie), the same worker opens the
    study link again: the same account, and the link's parameters leave the address."""
    qc_study(engine, tmp_path, 3, crowd=PROLIFIC)
    monkeypatch.setenv(db.ENV_VAR, db_url)
    at = AppTest.from_file(str(MAIN), default_timeout=120)
    for key, value in link("worker1").items():
        at.query_params[key] = value
    at.run()
    first = at.session_state["account"]
    for key, value in link("worker1").items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert at.session_state["account"].id == first.id
    assert "PROLIFIC_PID" not in at.query_params and "study" not in at.query_params


def test_a_link_to_a_study_without_crowd_places_is_one_line_without_a_form(
    engine: Engine, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    qc_study(engine, tmp_path, 3)
    monkeypatch.setenv(db.ENV_VAR, db_url)
    at = AppTest.from_file(str(MAIN), default_timeout=120)
    for key, value in link("worker1").items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == ["this study does not take participants from a crowd platform"]
    assert "account" not in at.session_state
    assert not at.text_input
