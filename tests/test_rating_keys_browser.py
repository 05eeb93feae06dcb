"""The rating page by keyboard and across studies, in headless Debian chromium at 1440x900 and 390 px:
every new item (first after login, after a change of study, after a submit, from 14 to 16 questions
and back) opens at its top with the focus on its first question where that is on screen, else on no
question at all (never mid-form, never off-screen, never in the picker), so that n questions take n
digits and Ctrl+Enter; the study picker never takes a digit; the study is in the page's address, so a
reload, Revise and the header keep to the item's study. One server for the module."""

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from tests.utils.apphelpers import (
    PASSWORD,
    PHONE,
    VIEWPORT,
    AppDB,
    add_annotator,
    add_study,
    build_app_db,
    item_tag,
    log_in,
    pair_record,
    running_app,
    selected,
    wait_for_draft,
    wait_for_session_cookie,
    wait_idle,
)
from tests.utils.pagehelpers import choose_study

pytestmark = pytest.mark.browser
SHOTS = Path(tempfile.gettempdir()) / "annotator-screenshots"
OTHER = "alpine"  # a second study: 2 pairs with 2 rubric aspects (12 questions), listed first by name
QUESTIONS = {3: 14, 4: 16}  # rubric aspects -> questions: 3 quality and the aspects per response, then 2
CONFIDENCE = "[class*='_confidence'] [data-testid='stButtonGroup'] button"

#: The options drawn past the right edge of their question's box (cut off on a phone).
CUT_OFF = """() => [...document.querySelectorAll('[class*="st-key-q_"] [data-testid="stButtonGroup"] button')]
  .filter((b) => b.getBoundingClientRect().right
    > b.closest('[data-testid="stElementContainer"]').getBoundingClientRect().right + 0.5)
  .map((b) => b.innerText)"""

#: Where the keyboard focus is: the question holding it (its widget key; null for none), whether the
#: focus is on the page itself (no element), the first question of the form, whether the focused
#: element is wholly on screen, how far the page is scrolled and how many questions the form has.
FOCUS = """() => {
  const keyOf = (el) => {
    const box = el && el.closest('[class*="st-key-q_"]');
    return box ? [...box.classList].find((c) => c.startsWith('st-key-q_')).slice(7) : null;
  };
  const groups = [...document.querySelectorAll('[class*="st-key-q_"] [data-testid="stButtonGroup"]')];
  const active = document.activeElement;
  const box = active ? active.getBoundingClientRect() : null;
  return {
    focused: keyOf(active),
    nowhere: !active || active === document.body,
    scrolled: document.querySelector('[data-testid=stMain]').scrollTop,
    first: groups.length ? keyOf(groups[0]) : null,
    on_screen: !!box && box.top >= 0 && box.bottom <= window.innerHeight && box.height > 0,
    questions: groups.length,
  };
}"""


def records(prefix: int, aspects: list[int]) -> list[dict[str, Any]]:
    return [
        pair_record(
            prefix + i,
            rubric_aspects=[
                {"aspect": f"Aspect {k + 1}", "reason": "The user said so", "evidence": f"post {k}"}
                for k in range(n)
            ],
        )
        for i, n in enumerate(aspects)
    ]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, AppDB]]:
    """study1: 6 pairs of 3 and 4 rubric aspects in turn (14 and 16 questions); ann1 has OTHER too.
    ann3 and ann4 have both studies."""
    folder = tmp_path_factory.mktemp("keys")
    app_db = build_app_db(
        folder / "db",
        records=records(0, [3, 4, 3, 4, 3, 4]),
        queues={"ann1": "ABABAB", "ann2": "BABABA"},
        acknowledged=["ann1", "ann2"],
    )
    add_study(app_db, folder / "other", OTHER, "ann1")
    for name in ("ann3", "ann4"):
        add_annotator(app_db, name, ["study1", OTHER])
    app_db.engine.dispose()
    with running_app(app_db.url, folder / "server.log") as base_url:
        yield base_url, app_db


def new_tab(chrome: Browser, viewport: dict[str, int]) -> Page:
    page = chrome.new_context(viewport=viewport).new_page()  # type: ignore[arg-type]
    page.set_default_timeout(30_000)
    return page


def focus_settled(page: Page) -> dict[str, Any]:
    """The focus once the page script has opened the new item (awaited, not slept)."""
    page.wait_for_function("() => document.body.dataset.psOpened === document.body.dataset.psItem")
    return dict(page.evaluate(FOCUS))


def header(page: Page) -> str:
    return page.locator("[data-testid='stProgress']").first.inner_text()


def rate_by_keys(
    page: Page, app_db: AppDB, username: str, *, digit: str = "2", below: bool = False
) -> tuple[int, int]:
    """Rate the item on screen with the keyboard alone (no click, no Tab): one digit per question, then
    Ctrl+Enter; returns (questions, keys pressed) once the judgment is saved with every answer. The item
    must open at its top with the focus on its first question, or (`below`: the first question may be
    under the first screen) on no element at all."""
    before = sum(len(app_db.judgments(a.id or 0)) for a in app_db.queue(username))
    focus = focus_settled(page)
    assert focus["scrolled"] == 0, "the item did not open at its top"
    if not (focus["nowhere"] and below):  # below: the first question is under the first screen
        assert focus["focused"] == focus["first"], (
            f"the focus opened on {focus['focused']}, not the first question"
        )
        assert focus["on_screen"], "the focused question is off-screen"
    tag, keys = item_tag(page), 0
    for _ in range(focus["questions"]):
        page.keyboard.press(digit)
        keys += 1
    page.keyboard.press("Control+Enter")
    keys += 1
    page.wait_for_function(
        "(old) => document.body.dataset.psItem !== old || document.body.innerText.includes('All done')",
        arg=tag,
    )
    wait_idle(page)
    judged = [j for a in app_db.queue(username) for j in app_db.judgments(a.id or 0)]
    assert len(judged) == before + 1, "the submit was refused: not every answer landed"
    newest = max(judged, key=lambda j: j.id or 0)
    assert len(app_db.scores(newest.id or 0)) == focus["questions"] - 2  # all but preference, confidence
    return focus["questions"], keys


def test_every_item_takes_one_digit_per_question_and_ctrl_enter(
    live: tuple[str, AppDB], chrome: Browser
) -> None:
    base_url, app_db = live
    page = new_tab(chrome, VIEWPORT)
    log_in(page, base_url, "ann1", PASSWORD)
    page.locator(CONFIDENCE).first.wait_for()
    counted = [rate_by_keys(page, app_db, "ann1") for _ in range(2)]  # OTHER, first after login
    page.get_by_text("All done").wait_for()
    choose_study(page, "study1")
    page.locator(CONFIDENCE).first.wait_for()
    counted += [rate_by_keys(page, app_db, "ann1") for _ in range(6)]  # 14, 16, 14, 16, 14, 16 questions
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "keys_all_done.png"), full_page=True)
    assert [n for n, _ in counted] == [12, 12, 14, 16, 14, 16, 14, 16]
    assert all(keys == n + 1 for n, keys in counted), counted
    page.context.close()


def test_on_a_phone_each_new_item_opens_at_its_top_and_takes_one_digit_per_question(
    live: tuple[str, AppDB], chrome: Browser
) -> None:
    base_url, app_db = live
    page = new_tab(chrome, PHONE)
    log_in(page, base_url, "ann2", PASSWORD)
    page.locator(CONFIDENCE).first.wait_for()
    assert page.evaluate(CUT_OFF) == []  # every option (the preference's five too) within its question
    counted = [rate_by_keys(page, app_db, "ann2", digit="1", below=True) for _ in range(3)]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "keys_phone.png"))
    assert [n for n, _ in counted] == [14, 16, 14]
    assert all(keys == n + 1 for n, keys in counted), counted
    page.context.close()


@pytest.mark.parametrize(("viewport", "username"), [(VIEWPORT, "ann3"), (PHONE, "ann4")], ids=["1440", "390"])
def test_the_study_stays_with_the_item_through_picker_reload_and_revise(
    live: tuple[str, AppDB], chrome: Browser, viewport: dict[str, int], username: str
) -> None:
    base_url, app_db = live
    page = new_tab(chrome, viewport)
    log_in(page, base_url, username, PASSWORD)
    page.locator(CONFIDENCE).first.wait_for()
    assert header(page).startswith(f"Study {OTHER}")
    rate_by_keys(page, app_db, username, below=viewport is PHONE)  # one OTHER item done
    picker = page.get_by_role("combobox", name="Study")
    choose_study(page, "study1")  # reopens the list if the submit's rerun closed it
    page.wait_for_function("() => location.search.includes('study_name=study1')")
    focus_settled(page)
    picker.focus()
    page.keyboard.press("3")  # the picker takes no digit: it answers the first question
    assert picker.input_value() in ("", "study1")
    page.keyboard.press("4")
    wait_for_draft(app_db, username, {"A:correctness": 3, "A:relevance": 4})
    wait_for_session_cookie(page)
    page.reload()
    page.locator(CONFIDENCE).first.wait_for()
    wait_idle(page)
    assert "study_name=study1" in page.url
    assert header(page).startswith("Study study1")
    assert selected(page, "A_correctness")[0].startswith("3") and selected(page, "A_relevance")[0].startswith(
        "4"
    )
    page.goto(f"{base_url}/my_work")
    page.get_by_role("button", name="Revise").first.click()  # the OTHER item
    page.locator(CONFIDENCE).first.wait_for()
    wait_idle(page)
    assert header(page).startswith(f"Study {OTHER}"), header(page)
    assert f"study_name={OTHER}" in page.url
    assert page.get_by_text("You are revising an item").is_visible()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"revise_{viewport['width']}.png"), full_page=True)
    page.context.close()


def test_a_click_on_the_chosen_answer_keeps_it(live: tuple[str, AppDB], chrome: Browser) -> None:
    """A second click on an answer already chosen (a mis-click while revising) does not clear it."""
    base_url, app_db = live
    add_annotator(app_db, "ann5", ["study1"])
    page = new_tab(chrome, VIEWPORT)
    log_in(page, base_url, "ann5", PASSWORD)
    page.locator(CONFIDENCE).first.wait_for()
    focus = focus_settled(page)
    option = page.locator(f".st-key-{focus['first']} [data-testid='stButtonGroup'] button").nth(1)
    option.click()
    page.wait_for_function("(el) => el.getAttribute('aria-checked') === 'true'", arg=option.element_handle())
    option.click()
    wait_idle(page)
    assert option.get_attribute("aria-checked") == "true"
    page.context.close()
