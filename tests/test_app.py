"""The annotator workspace in Streamlit's AppTest: roles, login, guidelines, rating, revision, blinding."""

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from annotator.store import db
from annotator.store.models import Event, Judgment, id_of
from tests.utils.apphelpers import (
    MAIN,
    PASSWORD,
    AppDB,
    app_for,
    build_app_db,
    count_runs,
    open_item_actions,
)

pytestmark = pytest.mark.page  # pages in AppTest: the PostgreSQL pass leaves it out

TIMEOUT = 120  # seconds per AppTest run: generous for a loaded CI machine
#: The pages each role must at least have (the router may register more; all of them are opened).
ROLE_PAGES = {
    "ann1": ["annotate.py", "my_work.py", "guidelines.py"],
    "adj1": ["adjudicate.py", "guidelines.py"],
    "res1": ["progress.py", "guidelines.py"],
}
#: Answers in the annotator's A/B terms: A gets high quality and full rubric fit, B low.
ANSWERS: dict[str, Any] = {
    "A": {"correctness": 5, "relevance": 4, "helpfulness": 3, "rubric0": 2, "rubric1": 1},
    "B": {"correctness": 2, "relevance": 1, "helpfulness": 1, "rubric0": 0, "rubric1": 0},
    "preference": 1,  # "A better"
    "confidence": 3,
}


@pytest.fixture
def app_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AppDB]:
    """A fresh database (own URL, so the app's cached engine is new) with ann1 queued on three pairs."""
    built = build_app_db(tmp_path / "db", acknowledged=["ann1", "ann2"])
    monkeypatch.setenv(db.ENV_VAR, built.url)
    yield built
    built.engine.dispose()


def app_as(app_db: AppDB, username: str | None) -> AppTest:
    """The app from its entry file, logged in as `username` (None: logged out), after one run."""
    at = app_for(None if username is None else app_db.account(username), timeout=TIMEOUT)
    assert not at.exception
    return at


def log_in_with_form(at: AppTest, username: str, password: str) -> AppTest:
    at.text_input(key="login_username").input(username)
    at.text_input(key="login_password").input(password)
    at.button(key="login_submit").click().run()
    assert not at.exception
    return at


def item_key(at: AppTest) -> tuple[int, str]:
    """The assignment on screen and the prefix of the form's widget keys (the same on every item)."""
    return at.session_state["annotate_item"].assignment_id, "q"


def fill(at: AppTest, answers: dict[str, Any], *, skip: tuple[str, ...] = ()) -> str:
    """Fill the rating form of the item on screen (widget keys listed in `skip` are left empty)."""
    _, key = item_key(at)
    for side in ("A", "B"):
        for name, value in answers[side].items():
            if f"{side}_{name}" not in skip:
                at.segmented_control(key=f"{key}_{side}_{name}").set_value(value)
    for name in ("preference", "confidence"):
        if name not in skip:
            at.segmented_control(key=f"{key}_{name}").set_value(answers[name])
    return key


def submit(at: AppTest, answers: dict[str, Any] = ANSWERS, **kwargs: Any) -> int:
    """Fill and submit the form on screen; returns the assignment id that was on screen."""
    assignment_id, _ = item_key(at)
    fill(at, answers, **kwargs)
    at.button(key="annotate_submit").click().run()
    assert not at.exception
    return assignment_id


def progress_text(at: AppTest) -> str:
    """ "1 of 3 done" (the progress bar's text without the study name)."""
    return str(at.progress[0].proto.text).split(" · ")[1]


def all_text(node: Any) -> str:
    """Everything the app sends for display: every element's protobuf (texts, labels, options, help)."""
    parts = []
    proto = getattr(node, "proto", None)
    if proto is not None:
        parts.append(str(proto))
    for child in getattr(node, "children", {}).values():
        parts.append(all_text(child))
    return "\n".join(parts)


def registered(refusal: str) -> list[str]:
    """The file names of the pages AppTest knows, from its refusal to switch to an unregistered page."""
    return [Path(p).name for p in re.findall(r"'([^']+\.py)'", refusal.split("Known pages:", 1)[1])]


def messages(at: AppTest) -> list[str]:
    return [str(e.value) for e in (*at.error, *at.warning, *at.info, *at.success)]


# ------------------------------------------------------------------------------------- pages and roles


def registered_pages(at: AppTest) -> list[str]:
    """The file names of the pages the router registered in the last run."""
    with pytest.raises(ValueError, match="Could not find a navigation page") as refused:
        at.switch_page("views/login.py")  # never registered for a logged-in user
    return registered(str(refused.value))


@pytest.mark.parametrize("username", list(ROLE_PAGES))
def test_every_page_renders_for_each_role(app_db: AppDB, username: str) -> None:
    at = app_as(app_db, username)
    pages = registered_pages(at)
    assert set(ROLE_PAGES[username]) <= set(pages)
    for page in pages:
        at.switch_page(f"views/{page}").run()
        assert not at.exception, (page, at.exception)
        assert not at.error, (page, messages(at))


def test_logged_out_visitor_sees_only_the_login_page(app_db: AppDB) -> None:
    at = app_as(app_db, None)
    assert at.text_input(key="login_username")
    with pytest.raises(ValueError, match="Could not find a navigation page") as refused:
        at.switch_page("views/annotate.py")
    assert set(registered(str(refused.value))) == {"login.py"}  # also hidden at the other pages' addresses


def test_annotator_page_list_holds_only_annotator_pages(app_db: AppDB) -> None:
    at = app_as(app_db, "ann1")
    for page in ("views/progress.py", "views/adjudicate.py"):
        with pytest.raises(ValueError, match="Could not find a navigation page") as refused:
            at.switch_page(page)
        # the start page is listed twice: at the root, and hidden at its own address (/annotate)
        assert registered(str(refused.value)) == [
            "annotate.py",
            "my_work.py",
            "training.py",
            "guidelines.py",
            "annotate.py",
        ]
    assert not at.exception


@pytest.mark.parametrize("page", ["progress.py", "adjudicate.py"])
def test_a_page_refuses_a_role_it_is_not_for(app_db: AppDB, page: str) -> None:
    """Even run directly (not through the router), a researcher or adjudicator page refuses an annotator."""
    at = AppTest.from_file(str(MAIN.parent / "views" / page), default_timeout=TIMEOUT)
    at.session_state["account"] = app_db.account("ann1")
    at.session_state["login_at"] = datetime.now(UTC)
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == ["This page is not available to the annotator role."]
    assert not at.title


def test_a_fresh_server_opens_a_page_only_through_the_router(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An annotator's first request to a fresh server asks for the researcher page by its URL.

    Every AppTest run starts as a fresh server does; the page files live in views/ (not pages/, which
    would switch on Streamlit's legacy multipage mode and run a page without the router), so the
    request goes through the router and the annotator gets an annotator page.
    """
    built = build_app_db(tmp_path / "db", acknowledged=["ann1"])
    monkeypatch.setenv(db.ENV_VAR, built.url)
    at = AppTest.from_file(str(MAIN), default_timeout=TIMEOUT)
    at.session_state["account"] = built.account("ann1")
    at.session_state["login_at"] = datetime.now(UTC)
    at.switch_page("views/progress.py").run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Rate pairs"], "the progress page did not run"
    assert progress_text(at) == "0 of 3 done", "the annotator's default page ran instead"
    assert at.button(key="logout"), "the router's sidebar is there"
    at.switch_page("views/my_work.py").run()
    assert not at.exception
    assert [t.value for t in at.title] == ["My work"]
    assert at.button(key="logout")
    built.engine.dispose()


# ---------------------------------------------------------------------------------------------- login


def test_login_form_logs_in(app_db: AppDB) -> None:
    at = log_in_with_form(app_as(app_db, None), "ann1", PASSWORD)
    assert at.session_state["account"] == app_db.account("ann1")
    assert not at.error
    assert progress_text(at) == "0 of 3 done"
    with app_db.session() as session:
        assert session.exec(select(Event).where(Event.action == "login")).first() is not None


def test_wrong_password_is_refused(app_db: AppDB) -> None:
    at = log_in_with_form(app_as(app_db, None), "ann1", "not-the-password")
    assert [e.value for e in at.error] == ["wrong username or password"]
    assert "account" not in at.session_state
    assert at.text_input(key="login_username")


def test_deactivated_account_gets_its_own_message(app_db: AppDB) -> None:
    at = log_in_with_form(app_as(app_db, None), "gone1", PASSWORD)
    assert [e.value for e in at.error] == ["this account is deactivated; ask the study's researcher"]
    assert "account" not in at.session_state


def test_empty_login_form_asks_for_both_fields(app_db: AppDB) -> None:
    at = log_in_with_form(app_as(app_db, None), "ann1", "")
    assert [e.value for e in at.error] == ["Please enter your username and password."]
    assert "account" not in at.session_state


def test_log_out_returns_to_the_login_page(app_db: AppDB) -> None:
    at = app_as(app_db, "ann1")
    at.button(key="logout").click().run()
    assert not at.exception
    assert "account" not in at.session_state
    assert at.text_input(key="login_username")


# ----------------------------------------------------------------------------------------- guidelines


def ack_events(app_db: AppDB) -> list[Event]:
    with app_db.session() as session:
        return list(session.exec(select(Event).where(Event.action == "guidelines_ack")))


def test_guidelines_acknowledgement_before_the_first_item(app_db: AppDB) -> None:
    with db.session_scope(app_db.engine) as session:
        user = app_db.user("ann1")
        user.guidelines_ack_at = None
        session.add(user)
    at = app_as(app_db, "ann1")
    assert not at.segmented_control, "no item before the guidelines are acknowledged"
    at.button(key="ack_guidelines").click().run()
    assert not at.exception
    assert app_db.user("ann1").guidelines_ack_at is not None
    assert [e.user_id for e in ack_events(app_db)] == [app_db.users["ann1"]]
    assert progress_text(at) == "0 of 3 done"
    at.run()
    assert len(ack_events(app_db)) == 1


def test_guidelines_page_records_the_acknowledgement(app_db: AppDB) -> None:
    with db.session_scope(app_db.engine) as session:
        user = app_db.user("ann2")
        user.guidelines_ack_at = None
        session.add(user)
    at = app_as(app_db, "ann2")
    at.switch_page("views/guidelines.py").run()
    assert not at.exception
    at.button(key="ack_guidelines").click().run()
    assert not at.exception
    assert app_db.user("ann2").guidelines_ack_at is not None
    assert [e.user_id for e in ack_events(app_db)] == [app_db.users["ann2"]]
    assert at.segmented_control, "the acknowledgement leads to the first item"


# ------------------------------------------------------------------------------------------- rating


def test_submissions_map_a_and_b_to_chosen_and_rejected(app_db: AppDB) -> None:
    queue = app_db.queue("ann1")
    assert [a.chosen_side for a in queue[:2]] == ["A", "B"]
    at = app_as(app_db, "ann1")
    assert progress_text(at) == "0 of 3 done"
    first = submit(at)
    assert progress_text(at) == "1 of 3 done"
    second = submit(at)
    assert progress_text(at) == "2 of 3 done"
    assert [first, second] == [queue[0].id, queue[1].id]

    expected_a = {"correctness": 5, "relevance": 4, "helpfulness": 3, "rubric:0": 2, "rubric:1": 1}
    expected_b = {"correctness": 2, "relevance": 1, "helpfulness": 1, "rubric:0": 0, "rubric:1": 0}
    for assignment, chosen, rejected, preference in (
        (queue[0], expected_a, expected_b, 1),  # chosen shown as A, "A better": chosen better
        (queue[1], expected_b, expected_a, -1),  # chosen shown as B, "A better": rejected better
    ):
        [judgment] = app_db.judgments(id_of(assignment))
        assert judgment.preference == preference
        assert judgment.confidence == 3
        assert judgment.revision == 1
        scores = app_db.scores(id_of(judgment))
        assert scores == {("chosen", k): v for k, v in chosen.items()} | {
            ("rejected", k): v for k, v in rejected.items()
        }
        saved = app_db.assignment(id_of(assignment))
        assert (saved.status, saved.revisions, saved.current_judgment_id) == ("done", 1, judgment.id)
        assert app_db.pair(assignment.pair_id).n_done == 1


def test_incomplete_form_saves_nothing_and_names_what_is_missing(app_db: AppDB) -> None:
    at = app_as(app_db, "ann1")
    assignment_id = submit(at, skip=("B_helpfulness", "A_rubric1", "confidence"))
    [error] = at.error
    assert "Response B: helpfulness" in error.value
    assert "Response A: rubric aspect 2" in error.value
    assert "confidence" in error.value
    assert "Response A: correctness" not in error.value
    assert app_db.judgments(assignment_id) == []
    assert progress_text(at) == "0 of 3 done"
    assert item_key(at)[0] == assignment_id, "the same item stays on screen"
    _, key = item_key(at)
    assert at.segmented_control(key=f"{key}_A_correctness").value == 5, "the answers given are kept"


def test_an_incomplete_submit_keeps_the_answers_given_as_the_draft(app_db: AppDB) -> None:
    """The page drops the draft that waits for a pause when the submit is pressed; a submit that
    is refused keeps the answers it carried as the draft, so a reload brings them back."""
    from annotator.rating import drafts

    at = app_as(app_db, "ann1")
    assignment_id = submit(at, skip=("confidence",))
    assert at.error
    with app_db.session() as session:
        draft = drafts.load_draft(session, assignment_id=assignment_id, account=app_db.account("ann1"))
    assert draft is not None
    assert draft.answers["A:correctness"] == ANSWERS["A"]["correctness"]
    assert draft.answers["preference"] == ANSWERS["preference"]
    assert "confidence" not in draft.answers


def test_a_broken_item_is_flagged_with_only_a_reason(app_db: AppDB) -> None:
    at = app_as(app_db, "ann1")
    assignment_id, _ = item_key(at)
    open_item_actions(at)
    at.button(key="flag").click().run()
    assert "say what is wrong" in at.error[0].value
    assert app_db.assignment(assignment_id).status == "pending"
    at.text_input(key="item_reason").input("the response is cut off")
    at.button(key="flag").click().run()
    assert not at.exception
    flagged = app_db.assignment(assignment_id)
    assert (flagged.status, flagged.flag_reason) == ("flagged", "the response is cut off")
    assert app_db.judgments(assignment_id) == [], "no rating was needed"
    assert item_key(at)[0] != assignment_id, "the item left the queue"


def test_revision_through_my_work_keeps_the_history(app_db: AppDB) -> None:
    at = app_as(app_db, "ann1")
    assignment_id = submit(at)
    at.switch_page("views/my_work.py").run()
    assert not at.exception
    at.button(key=f"reopen_{assignment_id}").click().run()
    assert not at.exception
    assert item_key(at)[0] == assignment_id
    assert at.session_state["annotate_item"].revisions == 1
    at.switch_page("views/annotate.py")  # the app went there; AppTest would keep asking for My work
    _, key = item_key(at)
    answer = at.segmented_control(key=f"{key}_A_correctness").value
    assert answer == 5, "the form starts from the current answers"
    assert at.segmented_control(key=f"{key}_preference").value == 1
    assert any("revising" in w.value for w in at.warning)
    at.segmented_control(key=f"{key}_A_correctness").set_value(4)
    at.segmented_control(key=f"{key}_preference").set_value(2)
    at.button(key="annotate_submit").click().run()
    assert not at.exception
    assert progress_text(at) == "1 of 3 done", "a revision is not a new item"

    first, second = app_db.judgments(assignment_id)
    assert (first.revision, second.revision) == (1, 2)
    assert (first.preference, second.preference) == (1, 0)
    saved = app_db.assignment(assignment_id)
    assert (saved.revisions, saved.current_judgment_id) == (2, second.id)
    assert app_db.scores(id_of(first))[("chosen", "correctness")] == 5
    assert app_db.scores(id_of(second))[("chosen", "correctness")] == 4
    assert app_db.pair(saved.pair_id).n_done == 1
    assert item_key(at)[0] != assignment_id, "after the revision the next item comes"


def test_skip_with_a_reason_moves_the_item_to_the_end(app_db: AppDB) -> None:
    queue = [id_of(a) for a in app_db.queue("ann1")]
    at = app_as(app_db, "ann1")
    assert item_key(at)[0] == queue[0]
    open_item_actions(at)
    at.button(key="skip").click().run()
    assert [e.value for e in at.error] == ["Please give a reason for skipping, then press Skip again."]
    assert item_key(at)[0] == queue[0]
    assert at.session_state["item_actions"], "the reason field stays open and asks for the reason"
    at.text_input(key="item_reason").input("I need to look something up")
    at.button(key="skip").click().run()
    assert not at.exception
    assert item_key(at)[0] == queue[1]
    skipped = app_db.assignment(queue[0])
    assert (skipped.status, skipped.skip_count, skipped.skip_reason) == (
        "pending",
        1,
        "I need to look something up",
    )
    assert submit(at) == queue[1]
    assert submit(at) == queue[2]
    assert item_key(at)[0] == queue[0], "the skipped item comes back last"


def test_finished_screen_when_the_queue_is_empty(app_db: AppDB) -> None:
    at = app_as(app_db, "ann1")
    for _ in range(3):
        submit(at)
    assert not at.segmented_control
    assert progress_text(at) == "3 of 3 done"
    assert any("All done" in s.value for s in at.success)
    at.run()
    assert not at.exception


def test_annotator_without_items_is_told_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = build_app_db(tmp_path / "db", queues={}, acknowledged=["ann1"])
    monkeypatch.setenv(db.ENV_VAR, built.url)
    at = app_as(built, "ann1")
    assert [i.value for i in at.info] == ["You have no items yet. Your researcher will assign some."]
    at.switch_page("views/my_work.py").run()
    assert not at.exception
    built.engine.dispose()


# ------------------------------------------------------------------------------------------- blinding


def test_the_browser_never_sees_pair_internals_or_other_annotators_labels(app_db: AppDB) -> None:
    secret = "OTHER-ANNOTATOR-COMMENT-7731"
    other = app_as(app_db, "ann2")
    other_key = item_key(other)[1]
    other.text_area(key=f"{other_key}_comment").input(secret)
    submit(other)
    with app_db.session() as session:
        assert session.exec(select(Judgment).where(Judgment.comment == secret)).first() is not None

    at = app_as(app_db, "ann1")
    seen = [all_text(at._tree)]
    submit(at)
    seen.append(all_text(at._tree))
    at.switch_page("views/my_work.py").run()
    seen.append(all_text(at._tree))
    at.switch_page("views/guidelines.py").run()
    seen.append(all_text(at._tree))
    text = "\n".join(seen)
    assert "Plan 1 alpha" in text and "Plan 1 omega" in text, "the test reads the rendered texts"
    for record_id in ("EXT-00000-zq", "EXT-00001-zq", "EXT-00002-zq"):
        assert record_id not in text
    assert not re.search(r"chosen|rejected", text, flags=re.IGNORECASE)
    assert secret not in text


# ------------------------------------------------------------------------------------- runs per arrival


def test_the_login_click_draws_the_first_item_in_one_run(
    app_db: AppDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The password is checked in the button's callback, so the run of the click already draws the
    role's start page (no second run to leave the login page)."""
    at = app_as(app_db, None)
    runs = count_runs(monkeypatch)
    log_in_with_form(at, "ann1", PASSWORD)
    assert len(runs) == 1
    assert progress_text(at) == "0 of 3 done"


def test_the_guidelines_acknowledgement_draws_the_first_item_in_one_run(
    app_db: AppDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    with db.session_scope(app_db.engine) as session:
        user = app_db.user("ann1")
        user.guidelines_ack_at = None
        session.add(user)
    at = app_as(app_db, "ann1")
    runs = count_runs(monkeypatch)
    at.button(key="ack_guidelines").click().run()
    assert not at.exception
    assert len(runs) == 1
    assert progress_text(at) == "0 of 3 done"
