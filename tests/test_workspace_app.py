"""The rating page's workspace in AppTest: drafts across a reload, study switch, timer, session tokens."""

import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from annotator.app import cookie
from annotator.errors import ConfigError
from annotator.people import sessions
from annotator.store import db
from annotator.store.models import DONE, Assignment, Study
from annotator.study import DEFAULT_CONFIG, parse_config
from tests.utils.apphelpers import (
    MAIN,
    PASSWORD,
    AppDB,
    add_study,
    app_for,
    app_with_session,
    build_app_db,
    open_item_actions,
    post_draft,
)

pytestmark = pytest.mark.page  # pages in AppTest: the PostgreSQL pass leaves it out

TIMEOUT = 120  # seconds per AppTest run: generous for a loaded CI machine


@pytest.fixture
def app_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AppDB]:
    built = build_app_db(tmp_path / "db", acknowledged=["ann1", "ann2"])
    monkeypatch.setenv(db.ENV_VAR, built.url)
    yield built
    built.engine.dispose()


def app_as(app_db: AppDB, username: str) -> AppTest:
    at = app_for(app_db.account(username), timeout=TIMEOUT)
    assert not at.exception
    return at


def on_screen(at: AppTest) -> tuple[int, str]:
    """The assignment on screen and the prefix of the form's widget keys (the same on every item)."""
    return at.session_state["annotate_item"].assignment_id, "q"


def test_answers_are_kept_as_a_draft_and_come_back_after_a_reload(app_db: AppDB) -> None:
    """An answer runs nothing on the server: the page script posts the form's state to the draft route."""
    first, token = app_with_session(app_db.account("ann1"))
    assignment_id, key = on_screen(first)
    assert post_draft(first, token, {"A_correctness": 4, "preference": 3}, comment="almost") == 204
    reloaded = app_as(app_db, "ann1")  # a new browser session: what a reload gives
    assert on_screen(reloaded) == (assignment_id, key)
    assert reloaded.segmented_control(key=f"{key}_A_correctness").value == 4
    assert reloaded.segmented_control(key=f"{key}_preference").value == 3
    assert reloaded.text_area(key=f"{key}_comment").value == "almost"


def test_the_draft_is_gone_after_submitting(app_db: AppDB) -> None:
    at = app_as(app_db, "ann1")
    assignment_id, key = on_screen(at)
    for side, value in (("A", 5), ("B", 2)):
        for name in ("correctness", "relevance", "helpfulness", "rubric0", "rubric1"):
            at.segmented_control(key=f"{key}_{side}_{name}").set_value(value if "rubric" not in name else 1)
    at.segmented_control(key=f"{key}_preference").set_value(1)
    at.segmented_control(key=f"{key}_confidence").set_value(2)
    at.button(key="annotate_submit").click().run()
    assert not at.exception
    assert len(app_db.judgments(assignment_id)) == 1
    assert on_screen(app_as(app_db, "ann1"))[0] != assignment_id, "a reload does not bring back a saved item"


def test_the_next_item_starts_with_an_empty_form(app_db: AppDB) -> None:
    """The form's widget keys are the same on every item: the answers of the last one must not stay."""
    at = app_as(app_db, "ann1")
    first, key = on_screen(at)
    for side in ("A", "B"):
        for name in ("correctness", "relevance", "helpfulness", "rubric0", "rubric1"):
            at.segmented_control(key=f"{key}_{side}_{name}").set_value(3 if "rubric" not in name else 2)
    at.segmented_control(key=f"{key}_preference").set_value(0)
    at.segmented_control(key=f"{key}_confidence").set_value(3)
    at.text_area(key=f"{key}_comment").input("first item only")
    at.button(key="annotate_submit").click().run()
    assert not at.exception
    assert on_screen(at)[0] != first
    assert [w.value for w in at.segmented_control] == [None] * len(at.segmented_control)
    assert at.text_area(key=f"{key}_comment").value == ""


def test_answers_come_back_after_another_page(app_db: AppDB) -> None:
    """Leaving the rating page drops its widgets' values; the draft brings them back."""
    at, token = app_with_session(app_db.account("ann1"))
    assignment_id, key = on_screen(at)
    assert post_draft(at, token, {"B_relevance": 2}) == 204
    at.switch_page("views/my_work.py").run()
    assert not at.exception
    at.switch_page("views/annotate.py").run()
    assert not at.exception
    assert on_screen(at)[0] == assignment_id
    assert at.segmented_control(key=f"{key}_B_relevance").value == 2


def test_a_rubric_question_is_labelled_with_its_aspect_reason_and_evidence(app_db: AppDB) -> None:
    """The label sits beside the 0/1/2 choice and is the question's accessible name."""
    at = app_as(app_db, "ann1")
    _, key = on_screen(at)
    item = at.session_state["annotate_item"]
    aspect = item.rubric[0]
    label = at.segmented_control(key=f"{key}_B_rubric0").label
    assert label.startswith("Response B · ")
    for part in (aspect["aspect"], aspect["reason"], aspect["evidence"]):
        assert part and part in label


def test_switching_study_switches_the_item(app_db: AppDB, tmp_path: Path) -> None:
    other = add_study(app_db, tmp_path / "other", "bikes", "ann1")
    at = app_as(app_db, "ann1")
    assert at.session_state["annotate_item"].study == "bikes"  # studies are listed by name
    assert on_screen(at)[0] == other[0]
    at.selectbox(key="annotate_study").set_value((app_db.study_id, "study1")).run()
    assert not at.exception
    item = at.session_state["annotate_item"]
    assert item.study == "study1" and item.assignment_id not in other


def test_time_on_the_item_and_the_shortcuts_are_shown(app_db: AppDB) -> None:
    at = app_as(app_db, "ann1")
    assert any("Time on this item" in str(h.proto.body) for h in at.html)
    assert any("Ctrl+Enter" in c.value and "1-5" in c.value for c in at.caption)


def test_one_h1_on_the_rating_page(app_db: AppDB) -> None:
    at = app_as(app_db, "ann1")
    assert [t.value for t in at.title] == ["Rate pairs"]


def test_login_issues_a_session_token_and_ending_it_logs_out_at_once(app_db: AppDB) -> None:
    at = AppTest.from_file(str(MAIN), default_timeout=TIMEOUT)
    at.run()
    at.text_input(key="login_username").input("ann1")
    at.text_input(key="login_password").input(PASSWORD)
    at.button(key="login_submit").click().run()
    token = at.session_state["session_token"]
    assert token and PASSWORD not in token
    bodies = [str(h.proto.body) for h in at.html]
    assert any(cookie.TICKET_HEADER in body for body in bodies), "the page asks the server to set the cookie"
    assert not any(token in body for body in bodies), "the token itself never reaches the page"
    assert not any(PASSWORD in body for body in bodies)
    with db.session_scope(app_db.engine) as session:
        sessions.end_session(session, token)
    at.run()
    assert at.text_input(key="login_username"), "the ended session shows the login page"


def test_logout_ends_the_session_on_the_server(app_db: AppDB) -> None:
    at = AppTest.from_file(str(MAIN), default_timeout=TIMEOUT)
    at.run()
    at.text_input(key="login_username").input("ann1")
    at.text_input(key="login_password").input(PASSWORD)
    at.button(key="login_submit").click().run()
    token = at.session_state["session_token"]
    at.button(key="logout").click().run()
    with db.session_scope(app_db.engine) as session, pytest.raises(Exception, match="ended"):
        sessions.resume_session(session, token)


def test_my_work_says_submitted_once_after_a_first_submission(app_db: AppDB) -> None:
    at = app_as(app_db, "ann1")
    _, key = on_screen(at)
    for side in ("A", "B"):
        for name in ("correctness", "relevance", "helpfulness"):
            at.segmented_control(key=f"{key}_{side}_{name}").set_value(3)
        for name in ("rubric0", "rubric1"):
            at.segmented_control(key=f"{key}_{side}_{name}").set_value(1)
    at.segmented_control(key=f"{key}_preference").set_value(2)
    at.segmented_control(key=f"{key}_confidence").set_value(2)
    at.button(key="annotate_submit").click().run()
    at.switch_page("views/my_work.py").run()
    captions = " ".join(c.value for c in at.caption)
    assert "submitted once" in captions and "revision(s)" not in captions


def test_a_study_that_sets_a_theme_draws_it_and_the_default_follows_the_system(app_db: AppDB) -> None:
    assert not any(":root { color-scheme" in str(h.proto.body) for h in app_as(app_db, "ann1").html)
    with db.session_scope(app_db.engine) as session:
        study = session.get(Study, app_db.study_id)
        assert study is not None
        study.config = {**study.config, "display": {**study.config.get("display", {}), "theme": "dark"}}
    assert any(":root { color-scheme: dark" in str(h.proto.body) for h in app_as(app_db, "ann1").html)


def test_an_unknown_theme_is_refused_naming_the_key() -> None:
    data = tomllib.loads(DEFAULT_CONFIG.read_text(encoding="utf-8"))
    data["display"]["theme"] = "purple"
    with pytest.raises(ConfigError, match="theme"):
        parse_config(data)


def test_my_work_shows_the_answers_a_skip_and_a_flag_with_their_reasons_and_revises(app_db: AppDB) -> None:
    at = app_as(app_db, "ann1")
    first, key = on_screen(at)
    for side in ("A", "B"):
        for name in ("correctness", "relevance", "helpfulness", "rubric0", "rubric1"):
            at.segmented_control(key=f"{key}_{side}_{name}").set_value(4 if "rubric" not in name else 2)
    at.segmented_control(key=f"{key}_preference").set_value(3)
    at.segmented_control(key=f"{key}_confidence").set_value(1)
    at.button(key="annotate_submit").click().run()
    second, _ = on_screen(at)
    open_item_actions(at)
    at.text_input(key="item_reason").input("I need to look it up")
    at.button(key="skip").click().run()
    third, _ = on_screen(at)
    open_item_actions(at)
    at.text_input(key="item_reason").input("response B is cut off")
    at.button(key="flag").click().run()
    assert not at.exception and len({first, second, third}) == 3
    at.switch_page("views/my_work.py").run()
    assert not at.exception
    shown = " ".join(m.value for m in at.markdown)
    assert "**Preference:** B better" in shown and "**confidence:** 1 - Unsure" in shown
    assert (
        "**Response A:** correctness: 4 · relevance: 4 · helpfulness: 4 · rubric aspect 1 (Quick recipes): 2"
        in shown
    )
    assert "**Why you skipped it:** I need to look it up" in shown
    assert "**What you reported:** response B is cut off" in shown
    at.button(key=f"reopen_{first}").click().run()
    assert not at.exception
    assert on_screen(at)[0] == first and at.segmented_control(key=f"{key}_preference").value == 3
    assert any("revising" in w.value for w in at.warning), "the item opens as a revision"


def test_a_new_page_opens_a_study_with_items_left_not_a_finished_one(app_db: AppDB, tmp_path: Path) -> None:
    """Without an address or a recent draft, the page opens the first study that still has items to
    rate: "a-finished" comes first by name, but every item of it is rated."""
    finished = add_study(app_db, tmp_path / "more", "a-finished", "ann1")
    with db.session_scope(app_db.engine) as session:
        for assignment_id in finished:
            row = session.get(Assignment, assignment_id)
            assert row is not None
            row.status = DONE
    at = app_as(app_db, "ann1")
    assert at.session_state["annotate_item"].study == "study1"
    assert at.query_params["study_name"] == "study1"  # and a reload keeps it
