"""The rating page in headless Debian chromium at 1440x900: layout, keys, reload, offline, accessibility."""

import time
from collections.abc import Iterator
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page

from annotator import sessions, workspace
from annotator.store import db
from tests.apphelpers import (
    FORM,
    PASSWORD,
    VIEWPORT,
    AppDB,
    annotators_page,
    answer_by_keys,
    build_app_db,
    item_tag,
    log_in,
    pair_record,
    press_answer,
    running_app,
    selected,
    wait_idle,
    wait_next_item,
)

pytestmark = pytest.mark.browser
N_POSTS = 25


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, AppDB]]:
    """A server over a fresh database: six pairs with long responses and narratives (their panes
    scroll) whose profiles hold N_POSTS posts (one about kayaks)."""
    folder = tmp_path_factory.mktemp("workspace")
    posts = [
        {"id": f"q{k}", "category": "cooking", "text": f"Post {k}: quick vegetarian food again."}
        for k in range(N_POSTS)
    ]
    posts[17] = {"id": "q17", "category": "sport", "text": "I paddle my kayak every weekend."}
    long_text = "Cook a batch of lentils on Sunday and keep them for three dinners. " * 30
    records = [
        pair_record(i, profile=posts, chosen=f"Plan {i}. {long_text}", narrative="I cook after work. " * 40)
        for i in range(6)
    ]
    app_db = build_app_db(
        folder / "db",
        records=records,
        queues={"ann1": "ABABAB", "ann2": "BABABA"},
        acknowledged=["ann1", "ann2"],
    )
    app_db.engine.dispose()
    with running_app(app_db.url, folder / "server.log") as base_url:
        yield base_url, app_db


def rating_page(page: Page, base_url: str, username: str) -> str:
    """Log in and wait until the rating form is drawn; returns the item's tag ("a12r0")."""
    log_in(page, base_url, username, PASSWORD)
    page.locator("[class*='_confidence'] [data-testid='stButtonGroup'] button").first.wait_for()
    wait_idle(page)
    return item_tag(page)


def main_scroll(page: Page) -> dict[str, float]:
    return page.evaluate(
        "() => { const m = document.querySelector('[data-testid=stMain]');"
        " return {top: m.scrollTop, height: m.scrollHeight}; }"
    )


def test_the_default_rating_page_is_at_most_twice_the_viewport_high(
    live: tuple[str, AppDB], tab: Page
) -> None:
    rating_page(tab, live[0], "ann2")
    assert main_scroll(tab)["height"] <= 2 * VIEWPORT["height"]


def test_a_rubric_row_shows_its_aspect_beside_the_choice(live: tuple[str, AppDB], tab: Page) -> None:
    rating_page(tab, live[0], "ann2")
    boxes = tab.evaluate(
        """() => {
          const row = document.querySelector(".st-key-q_A_rubric0");
          const box = (selector) => {
            const r = row.querySelector(selector).getBoundingClientRect();
            return [r.left, r.right, r.top, r.bottom];
          };
          return [box("[data-testid=stWidgetLabel]"), box("[role=radiogroup]")];
        }"""
    )
    (label_left, label_right, label_top, label_bottom), (choice_left, _, choice_top, choice_bottom) = boxes
    assert label_right <= choice_left, "the label is to the left of the 0/1/2 choice"
    assert choice_top < label_bottom and label_top < choice_bottom, "on the same row"
    assert label_right - label_left > 200, "the label has room for the reason and the evidence"


def test_number_keys_answer_the_focused_question_and_keep_a_draft(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, app_db = live
    rating_page(tab, base_url, "ann2")
    press_answer(tab, "A_correctness", "4")
    wait_idle(tab)
    press_answer(tab, "B_rubric0", "2")
    wait_idle(tab)
    assert selected(tab, "A_correctness") == ["4 Correct"]
    assert selected(tab, "B_rubric0") == ["2"]
    assignment = app_db.on_screen("ann2")
    with db.session_scope(app_db.engine) as session:
        draft = workspace.load_draft(session, assignment_id=assignment, user_id=app_db.users["ann2"])
    assert draft is not None and draft.answers["A:correctness"] == 4 and draft.answers["B:rubric:0"] == 2


def test_ctrl_enter_from_a_focused_answer_submits_and_the_next_item_starts_at_the_top(
    live: tuple[str, AppDB], tab: Page
) -> None:
    base_url, app_db = live
    first = rating_page(tab, base_url, "ann1")
    first_id = app_db.on_screen("ann1")
    answer_by_keys(tab)  # the focus stays on the last answer (a button of the confidence question)
    tab.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTo(0, 100000)")
    assert main_scroll(tab)["top"] > 0
    tab.keyboard.press("Control+Enter")
    wait_next_item(tab, first)
    tab.wait_for_timeout(300)
    assert selected(tab, "A_correctness") == [], "the next item's form starts empty"
    assert main_scroll(tab)["top"] == 0
    heading = tab.get_by_role("heading", name="Question").bounding_box()
    assert heading is not None and 0 <= heading["y"] < VIEWPORT["height"]
    assert len(app_db.judgments(first_id)) == 1


def test_a_reload_keeps_the_login_and_the_draft(live: tuple[str, AppDB], tab: Page) -> None:
    rating_page(tab, live[0], "ann2")
    shown = live[1].on_screen("ann2")
    press_answer(tab, "A_relevance", "2")
    wait_idle(tab)
    started = time.perf_counter()
    tab.reload()
    tab.locator(f".st-key-{FORM}_A_relevance button[aria-checked=true]").wait_for()
    seconds = time.perf_counter() - started
    assert live[1].on_screen("ann2") == shown  # the same item (its token is new: one per display)
    assert selected(tab, "A_relevance")[0].startswith("2 ")
    assert tab.get_by_role("button", name="Log out").is_visible()
    assert seconds <= 2.0


def test_the_cookie_holds_a_session_token_only(live: tuple[str, AppDB], tab: Page) -> None:
    rating_page(tab, live[0], "ann2")
    cookies = {c["name"]: c["value"] for c in tab.context.cookies()}
    assert "pair_studio_session" in cookies and PASSWORD not in cookies["pair_studio_session"]
    assert "token" not in tab.url and PASSWORD not in tab.url


def test_logout_ends_the_session_and_a_reload_shows_the_login(live: tuple[str, AppDB], tab: Page) -> None:
    rating_page(tab, live[0], "ann2")
    tab.get_by_role("button", name="Log out").click()
    wait_idle(tab)
    tab.reload()
    wait_idle(tab)
    assert tab.get_by_role("textbox", name="Username").is_visible()


def test_a_session_ended_elsewhere_logs_out_at_the_next_answer(live: tuple[str, AppDB], tab: Page) -> None:
    """An answer reruns only the item area (a fragment); it still checks the session first."""
    base_url, app_db = live
    rating_page(tab, base_url, "ann2")
    token = {c["name"]: c["value"] for c in tab.context.cookies()}["pair_studio_session"]
    with db.session_scope(app_db.engine) as session:
        sessions.end_session(session, token)
    press_answer(tab, "A_correctness", "3")
    tab.get_by_role("textbox", name="Username").wait_for()
    assert not tab.locator(f".st-key-{FORM}_A_correctness").count()


def test_every_question_names_the_response_it_is_about(live: tuple[str, AppDB], tab: Page) -> None:
    rating_page(tab, live[0], "ann2")
    names = tab.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stButtonGroup]')].map(g =>"
        " g.closest('.stElementContainer')"
        ".querySelector('label, [data-testid=stWidgetLabel]')?.innerText.trim())"
    )
    assert "Response A · Correctness" in names and "Response B · Correctness" in names
    assert len(names) == len(set(names)), "no two questions share a name"


def test_the_profile_says_how_many_posts_are_hidden_and_searches_them_all(
    live: tuple[str, AppDB], tab: Page
) -> None:
    rating_page(tab, live[0], "ann2")
    tab.get_by_text(f"The user's past posts (showing 10 of {N_POSTS})").click()
    wait_idle(tab)
    tab.get_by_role("searchbox", name="Search all posts").fill("kayak")
    tab.keyboard.press("Enter")
    wait_idle(tab)
    assert tab.get_by_text(f"1 of {N_POSTS} posts match").is_visible()
    assert tab.get_by_text("Post 18 · sport").is_visible()


def test_no_request_goes_to_another_host(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, _ = live
    hosts: set[str] = set()
    tab.on("request", lambda request: hosts.add(request.url.split("/")[2]))
    rating_page(tab, base_url, "ann2")
    tab.goto(f"{base_url}/my_work")
    wait_idle(tab)
    assert hosts == {base_url.split("/")[2]}


def test_dark_mode_follows_the_system(live: tuple[str, AppDB], chrome: Browser) -> None:
    context = chrome.new_context(viewport=VIEWPORT, color_scheme="dark")
    page = context.new_page()
    page.goto(live[0])
    wait_idle(page)
    background = page.evaluate("() => getComputedStyle(document.querySelector('.stApp')).backgroundColor")
    context.close()
    red, green, blue = (int(v) for v in background.removeprefix("rgb(").rstrip(")").split(",")[:3])
    assert red + green + blue < 3 * 80, background


def serious(page: Page) -> list[tuple[str, str]]:
    """The serious or critical axe-core violations on the page: (rule, first element)."""
    results: Any = Axe().run(page)
    return [
        (v["id"], v["nodes"][0]["html"][:120])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize(
    ("username", "path"),
    [(None, ""), ("ann2", ""), ("ann2", "my_work"), ("res1", "validation"), ("adj1", "")],
)
def test_no_serious_accessibility_violation(
    live: tuple[str, AppDB], tab: Page, username: str | None, path: str
) -> None:
    base_url, _ = live
    if username is None:
        tab.goto(base_url)
    else:
        log_in(tab, base_url, username, PASSWORD)
        tab.get_by_role("button", name="Log out").wait_for()
        if path:
            tab.goto(f"{base_url}/{path}")
    wait_idle(tab)
    tab.locator("h1").first.wait_for()
    if username is not None:
        tab.get_by_role("button", name="Log out").wait_for()  # still logged in: the page asked for
    tab.wait_for_timeout(1500)
    assert tab.locator("h1").count() == 1
    assert serious(tab) == []


def test_deactivation_is_confirmed_in_a_dialog_first(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, app_db = live
    annotators_page(tab, base_url, "gone1")
    tab.get_by_role("button", name="Reactivate").click()
    wait_idle(tab)
    assert app_db.user("gone1").active
    tab.get_by_role("button", name="Deactivate…").click()
    dialog = tab.get_by_role("dialog")
    dialog.wait_for()
    assert app_db.user("gone1").active, "nothing happens before the confirmation"
    dialog.get_by_role("button", name="Deactivate").click()
    wait_idle(tab)
    tab.get_by_text("gone1 is deactivated; their labels are kept.").wait_for()
    assert not app_db.user("gone1").active
