"""The annotator workspace in headless Debian chromium (Playwright) against a live server."""

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlmodel import select

from annotator.store.models import Judgment, id_of
from tests.utils.apphelpers import (
    FORM,
    PASSWORD,
    AppDB,
    build_app_db,
    open_expander,
    pair_record,
    running_app,
    wait_idle,
)

pytestmark = pytest.mark.browser
SCRIPT = "<script>window.__xss=1</script>"
IMG = '<img src=x onerror="window.__xss=2">'
DOLLARS = "dinners cost $5 to $10 each"
N_ITEMS = 3
SCREENSHOTS = Path(tempfile.gettempdir()) / "annotator-screenshots"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, AppDB]]:
    """A server on a free port over a fresh database; ann2's first item carries HTML in its texts."""
    folder = tmp_path_factory.mktemp("browser")
    records = [pair_record(i) for i in range(N_ITEMS)]
    records[2] = pair_record(2, chosen=f"Hostile text {SCRIPT} then {IMG} and **bold** markdown; {DOLLARS}.")
    app_db = build_app_db(
        folder / "db", records=records, queues={"ann1": "ABA", "ann2": "--B"}, acknowledged=["ann2"]
    )
    app_db.engine.dispose()
    with running_app(app_db.url, folder / "server.log") as base_url:
        yield base_url, app_db


@pytest.fixture
def tab(chrome: Browser) -> Iterator[Page]:
    """A fresh browser context (no cookies, own Streamlit session) with a tall window."""
    context = chrome.new_context(viewport={"width": 1400, "height": 2600})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


def log_in(page: Page, base_url: str, username: str) -> None:
    page.goto(base_url)
    wait_idle(page)
    page.locator(".st-key-login_username input").fill(username)
    page.locator(".st-key-login_password input").fill(PASSWORD)
    page.locator(".st-key-login_submit button").click()
    wait_idle(page)


def expect_item(page: Page, app_db: AppDB, username: str, position: int) -> None:
    """The rating page shows the item at `position` of the user's queue (the page names no id: the
    server's record of what it showed says which)."""
    expect(page.locator("body[data-ps-item]")).to_have_count(1)
    expect(page.locator(f".st-key-{FORM}_A_correctness")).to_be_visible()
    assert app_db.on_screen(username) == app_db.queue(username)[position].id


def rate(page: Page, answers: dict[str, int]) -> None:
    """Click the option with index `answers[key]` of every question of the form."""
    for key, index in answers.items():
        page.locator(f".st-key-{FORM}_{key} button[aria-checked]").nth(index).click()
        wait_idle(page)


#: Option indexes: quality 1-5 -> 0-4, rubric 0-2 -> 0-2, preference 0-4, confidence 1-3 -> 0-2.
ANSWERS = {
    "A_correctness": 4,
    "A_relevance": 3,
    "A_helpfulness": 4,
    "B_correctness": 1,
    "B_relevance": 2,
    "B_helpfulness": 0,
    "A_rubric0": 2,
    "A_rubric1": 2,
    "B_rubric0": 0,
    "B_rubric1": 1,
    "preference": 0,
    "confidence": 2,
}


def judgments_of(app_db: AppDB, username: str) -> list[Judgment]:
    ids = [a.id for a in app_db.queue(username)]
    with app_db.session() as session:
        query = select(Judgment).where(Judgment.assignment_id.in_(ids)).order_by(Judgment.id)  # type: ignore[union-attr]
        return list(session.exec(query))


def test_log_in_acknowledge_and_rate_two_items(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, app_db = live
    log_in(tab, base_url, "ann1")
    ack = tab.locator(".st-key-ack_guidelines button")
    expect(ack).to_be_visible()
    ack.click()
    wait_idle(tab)
    assert app_db.user("ann1").guidelines_ack_at is not None
    expect(tab.get_by_text(f"0 of {N_ITEMS} done")).to_be_visible()

    expect_item(tab, app_db, "ann1", 0)
    expect(tab.locator(".st-key-annotate_submit")).to_be_visible()
    SCREENSHOTS.mkdir(exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / "annotate.png"), full_page=True)
    rate(tab, ANSWERS)
    # The past posts are drawn only when opened (a rerun); the answers given so far must survive it.
    expect(tab.get_by_text("Past post 1: I like quick vegetarian food.")).to_have_count(0)
    open_expander(tab, "The user's past posts", tab.get_by_text("Post 2 · cooking"))
    open_expander(tab, "Post 2 · cooking", tab.get_by_text("Past post 1: I like quick vegetarian food."))
    expect(tab.get_by_text("Past post 1: I like quick vegetarian food.")).to_be_visible()
    expect(tab.locator(f"[class*='st-key-{FORM}_'] button[aria-checked=true]")).to_have_count(len(ANSWERS))
    # Ctrl+Enter submits even while an answer button has the focus.
    tab.locator(f".st-key-{FORM}_confidence button[aria-checked=true]").focus()
    tab.keyboard.press("Control+Enter")
    expect(tab.get_by_text(f"1 of {N_ITEMS} done")).to_be_visible()
    wait_idle(tab)

    expect_item(tab, app_db, "ann1", 1)
    expect(tab.locator(f"[class*='st-key-{FORM}_'] button[aria-checked=true]")).to_have_count(0)
    rate(tab, ANSWERS | {"preference": 4})
    tab.locator(".st-key-annotate_submit button").click()
    expect(tab.get_by_text(f"2 of {N_ITEMS} done")).to_be_visible()
    wait_idle(tab)
    expect_item(tab, app_db, "ann1", 2)

    one, two = judgments_of(app_db, "ann1")
    queue = app_db.queue("ann1")
    assert [one.assignment_id, two.assignment_id] == [queue[0].id, queue[1].id]
    # ann1 sees chosen on A for the first item and on B for the second; A was rated higher both times.
    assert (one.preference, two.preference) == (2, 2)
    assert app_db.scores(id_of(one))[("chosen", "correctness")] == 5
    assert app_db.scores(id_of(two))[("chosen", "correctness")] == 2
    assert app_db.scores(id_of(two))[("rejected", "rubric:0")] == 2
    assert one.opened_posts == [1], "the post the annotator opened is recorded with the judgment"


def test_html_in_a_response_is_shown_as_inert_text(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, app_db = live
    errors: list[Any] = []
    tab.on("pageerror", lambda error: errors.append(error))
    log_in(tab, base_url, "ann2")
    expect(tab.get_by_text("Hostile text", exact=False)).to_be_visible()
    wait_idle(tab)
    assert tab.evaluate("typeof window.__xss") == "undefined"
    assert tab.locator("img[onerror]").count() == 0
    response = tab.locator("[data-testid='stMarkdownContainer']", has_text="Hostile text")
    text = response.inner_text()
    assert SCRIPT in text
    assert IMG in text
    assert DOLLARS in text, "dollar signs are money, not LaTeX"
    assert response.locator("strong").inner_text() == "bold", "markdown still works"
    assert tab.evaluate("typeof window.__xss") == "undefined"
    tab.screenshot(path=str(SCREENSHOTS / "hostile.png"), full_page=True)
    assert errors == []
