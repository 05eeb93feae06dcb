"""The rating page in headless Debian chromium at 1440x900 and 390 px wide, on items longer than the
sample's (responses of 400-600 words in paragraphs, a long narrative): layout, keys, reload, offline,
accessibility."""

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from annotator.people import sessions
from annotator.store import db
from annotator.store.models import id_of
from tests.utils.apphelpers import (
    FORM,
    KEY_ANSWERS,
    PASSWORD,
    PHONE,
    VIEWPORT,
    AppDB,
    annotators_page,
    answer_by_keys,
    build_app_db,
    item_tag,
    log_in,
    long_text,
    open_expander,
    pair_record,
    press_answer,
    running_app,
    selected,
    wait_for_draft,
    wait_for_session_cookie,
    wait_idle,
    wait_next_item,
)
from tests.utils.pagehelpers import serious

pytestmark = pytest.mark.browser
N_POSTS = 25


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, AppDB]]:
    """A server over a fresh database: six pairs with long responses (600 words in 6 paragraphs against
    420 in 4) and a long narrative, whose profiles hold N_POSTS posts (one about kayaks)."""
    folder = tmp_path_factory.mktemp("workspace")
    posts = [
        {"id": f"q{k}", "category": "cooking", "text": f"Post {k}: quick vegetarian food again."}
        for k in range(N_POSTS)
    ]
    posts[17] = {"id": "q17", "category": "sport", "text": "I paddle my kayak every weekend."}
    records = [
        pair_record(
            i,
            profile=posts,
            chosen=f"Plan {i}. " + long_text(600, 6),
            rejected=f"Menu {i}. " + long_text(420, 4),
            narrative=long_text(250, 3, "I cook after work and my partner eats no meat."),
        )
        for i in range(6)
    ]
    app_db = build_app_db(
        folder / "db",
        records=records,
        queues={"ann1": "ABABAB", "ann2": "BABABA", "ann3": "ABABAB"},
        acknowledged=["ann1", "ann2", "ann3"],
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


#: Boxes on the page that scroll on their own and hold text (a pane, the narrative): none should.
SELF_SCROLLING = """() => [...document.querySelectorAll("[data-testid=stMain] *")].filter((el) => {
  const style = getComputedStyle(el);
  return /(auto|scroll)/.test(style.overflowY) && el.scrollHeight > el.clientHeight + 2
    && el.textContent.trim().length > 0;
}).map((el) => el.className.toString().slice(0, 80))"""

#: The top and left of every paragraph of response A and of B: [[A...], [B...]].
PARAGRAPHS = """() => ["A", "B"].map((side) => [...document.querySelectorAll(
  `.st-key-pane_${side} [data-testid=stMarkdownContainer]`)].slice(1).map((el) => {
    const r = el.getBoundingClientRect();
    const box = el.closest(".stElementContainer");
    return [Math.round(r.top), Math.round(r.left), getComputedStyle(box).visibility];
  }))"""


def phone(chrome: Browser) -> Page:
    page = chrome.new_context(viewport=PHONE).new_page()
    page.set_default_timeout(30_000)
    return page


def test_both_long_responses_grow_with_their_text_paragraph_beside_paragraph(
    live: tuple[str, AppDB], tab: Page
) -> None:
    rating_page(tab, live[0], "ann2")
    assert tab.evaluate(SELF_SCROLLING) == [], "no box scrolls on its own: the page scroll shows every word"
    a, b = tab.evaluate(PARAGRAPHS)
    assert (len(a), len(b)) in ((6, 4), (4, 6)), "every paragraph is there"
    for (a_top, a_left, _), (b_top, b_left, _) in zip(a, b, strict=False):
        assert abs(a_top - b_top) <= 2 and a_left < b_left, "paragraph k of A beside paragraph k of B"
    narrative = tab.get_by_text("Paragraph 3. I cook after work").bounding_box()
    assert narrative is not None and narrative["height"] > 40, "the whole narrative shows"


@pytest.mark.parametrize("width", [VIEWPORT["width"], PHONE["width"]])
def test_every_scale_label_shows_its_number_and_words_in_full(
    live: tuple[str, AppDB], chrome: Browser, width: int
) -> None:
    page = chrome.new_context(viewport={"width": width, "height": 900}).new_page()
    page.set_default_timeout(30_000)
    rating_page(page, live[0], "ann2")
    options = page.evaluate(
        """() => [...document.querySelectorAll(
            ".st-key-q_A_correctness button, .st-key-q_A_helpfulness button")]
          .map((b) => [b.innerText.replace(/\\s+/g, " ").trim(),
                       b.scrollWidth <= b.clientWidth + 1 && b.scrollHeight <= b.clientHeight + 1])"""
    )
    page.context.close()
    texts = [text for text, _ in options]
    assert "2 Mostly wrong: several real errors" in texts and "1 Not helpful at all" in texts
    assert "5 Extremely helpful: clear, complete and actionable" in texts
    assert all(fits for _, fits in options), "no option is cut"
    assert not any("…" in text for text in texts)


def test_an_item_takes_one_digit_per_question_and_ctrl_enter(live: tuple[str, AppDB], tab: Page) -> None:
    """No Tab and no click: the first question has the focus, each digit answers and moves on."""
    base_url, app_db = live
    first = rating_page(tab, base_url, "ann1")
    first_id = app_db.on_screen("ann1")
    assert tab.locator("[data-testid=stTooltipIcon]").count() == 0, "no help button between questions"
    for digit in KEY_ANSWERS.values():
        tab.keyboard.press(digit)
    tab.keyboard.press("Control+Enter")
    wait_next_item(tab, first)
    saved = app_db.judgments(first_id)
    assert len(saved) == 1, f"{len(KEY_ANSWERS) + 1} keystrokes submitted the item"
    scores = app_db.scores(id_of(saved[0]))
    side_a = "chosen" if app_db.assignment(first_id).chosen_side == "A" else "rejected"
    assert scores[(side_a, "correctness")] == int(KEY_ANSWERS["A_correctness"])
    assert saved[0].confidence == int(KEY_ANSWERS["confidence"])
    tab.keyboard.press(KEY_ANSWERS["A_correctness"])  # on the next item, a digit answers its first question
    tab.locator(f".st-key-{FORM}_A_correctness button[aria-checked=true]").wait_for()


def test_a_phone_shows_one_response_and_its_questions_and_switches_in_place(
    live: tuple[str, AppDB], chrome: Browser
) -> None:
    page = phone(chrome)
    rating_page(page, live[0], "ann2")
    a, b = page.evaluate(PARAGRAPHS)
    assert a[0][2] == "visible" and b[0][2] == "hidden"
    assert page.locator(".st-key-questions_B").is_hidden()
    assert page.locator(".st-key-questions_A").is_visible()
    page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTo(0, 1500)")
    switch = page.get_by_role("button", name="Response B", exact=True)
    box = switch.bounding_box()
    assert box is not None and 0 <= box["y"] < PHONE["height"], "the switch stays on screen (sticky)"
    switch.click()
    a_after, b_after = page.evaluate(PARAGRAPHS)
    page.context.close()
    assert b_after[1][2] == "visible" and a_after[1][2] == "hidden"
    assert abs(b_after[1][0] - a[1][0] + (a[0][0] - a_after[0][0])) <= 2, "B's paragraph 2 where A's was"
    assert b_after[1][1] == a[1][1], "at the same place across the screen"


def test_skipping_without_a_reason_asks_for_it(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, app_db = live
    tag = rating_page(tab, base_url, "ann2")
    open_expander(tab, "Skip this item or report it as broken", tab.locator(".st-key-skip button"))
    tab.locator(".st-key-skip button").click()
    wait_idle(tab)
    tab.get_by_text("Please give a reason for skipping").wait_for()
    reason = tab.get_by_role("textbox", name="Why?")
    assert reason.is_visible(), "the reason field stays open"
    tab.wait_for_function("() => document.activeElement?.closest('.st-key-item_reason') !== null")
    assert item_tag(tab) == tag and app_db.assignment(app_db.on_screen("ann2")).skip_count == 0


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
    assert selected(tab, "A_correctness") == ["4 Correct: at most a trivial imprecision"]
    assert selected(tab, "B_rubric0") == ["2"]
    wait_for_draft(app_db, "ann2", {"A:correctness": 4, "B:rubric:0": 2})  # sent once the answers pause


#: Clicks the options of several questions in one task of the page (no timer can run in between):
#: {widget key suffix: index of the option}.
CLICK_OPTIONS = """(choices) => {
  for (const [name, index] of Object.entries(choices)) {
    document.querySelectorAll(`.st-key-q_${name} [data-testid='stButtonGroup'] button`)[index].click();
  }
}"""


#: The page's requests to the draft route so far (the browser's resource timing entries).
DRAFT_POSTS = (
    "() => performance.getEntriesByType('resource').filter((e) => e.name.includes('/_pair/draft')).length"
)


def test_answers_given_in_a_burst_make_one_draft(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, app_db = live
    rating_page(tab, base_url, "ann2")
    before = tab.evaluate(DRAFT_POSTS)
    tab.evaluate(CLICK_OPTIONS, {"A_helpfulness": 1, "B_helpfulness": 2, "confidence": 0})
    wait_for_draft(app_db, "ann2", {"A:helpfulness": 2, "B:helpfulness": 3, "confidence": 1})
    tab.wait_for_function(f"() => ({DRAFT_POSTS})() > {before}")  # the browser has its answer too
    assert tab.evaluate(DRAFT_POSTS) == before + 1


def test_leaving_the_page_sends_the_draft_that_waits_for_a_pause(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, app_db = live
    rating_page(tab, base_url, "ann2")
    tab.evaluate(CLICK_OPTIONS, {"A_relevance": 0})
    tab.goto("about:blank")  # before the pause is over: the page sends it as it goes
    wait_for_draft(app_db, "ann2", {"A:relevance": 1})


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
    tab.wait_for_function("() => document.querySelector('[data-testid=stMain]').scrollTop === 0")
    assert selected(tab, "A_correctness") == [], "the next item's form starts empty"
    heading = tab.get_by_role("heading", name="Question").bounding_box()
    assert heading is not None and 0 <= heading["y"] < VIEWPORT["height"]
    assert len(app_db.judgments(first_id)) == 1


def test_a_reload_keeps_the_login_and_the_draft(live: tuple[str, AppDB], tab: Page) -> None:
    """The time this takes is a figure of benchmarks/bench_submit.py (reload -> draft back), not a test."""
    base_url, app_db = live
    rating_page(tab, base_url, "ann2")
    item = app_db.on_screen("ann2")
    press_answer(tab, "A_relevance", "2")
    wait_idle(tab)
    tab.reload()
    tab.locator(f".st-key-{FORM}_A_relevance button[aria-checked=true]").wait_for()
    assert app_db.on_screen("ann2") == item
    assert selected(tab, "A_relevance")[0].startswith("2 ")
    assert tab.get_by_role("button", name="Log out").is_visible()


def test_the_cookie_holds_a_session_token_only(live: tuple[str, AppDB], tab: Page) -> None:
    rating_page(tab, live[0], "ann2")
    cookies = {c["name"]: c["value"] for c in tab.context.cookies()}
    assert "pair_studio_session" in cookies and PASSWORD not in cookies["pair_studio_session"]
    assert "token" not in tab.url and PASSWORD not in tab.url


def test_logout_ends_the_session_and_a_reload_shows_the_login(live: tuple[str, AppDB], tab: Page) -> None:
    rating_page(tab, live[0], "ann2")
    tab.get_by_role("button", name="Log out").click()
    wait_idle(tab)
    wait_for_session_cookie(tab, present=False)  # the logout's own request to the server removed it
    tab.reload()
    wait_idle(tab)
    tab.get_by_role("textbox", name="Username").wait_for()
    assert tab.get_by_role("button", name="Log out").count() == 0


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
    assert any(n.startswith("Response A · Correctness: ") for n in names)
    assert any(n.startswith("Response B · Correctness: ") for n in names)
    assert len(names) == len(set(names)), "no two questions share a name"


def test_the_profile_says_how_many_posts_are_hidden_and_searches_them_all(
    live: tuple[str, AppDB], tab: Page
) -> None:
    rating_page(tab, live[0], "ann2")
    open_expander(
        tab,
        f"The user's past posts (showing 10 of {N_POSTS})",
        tab.get_by_role("searchbox", name="Search all posts"),
    )
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


#: The page is settled for a contrast check: no element drawn faded as stale (Streamlit dims what a
#: run is about to replace) and no animation or transition still running.


def drawn_with_one_h1(tab: Page) -> None:
    """Wait until the page and its fragments have run, then check it has one h1."""
    wait_idle(tab)
    tab.locator("h1").first.wait_for()
    wait_idle(tab)  # the fragments' runs after the page's own
    assert tab.locator("h1").count() == 1


@pytest.mark.parametrize("width", [1440, 390])
def test_no_serious_accessibility_violation(live: tuple[str, AppDB], chrome: Browser, width: int) -> None:
    """The login page and every annotator page at 1440x900 and 390 px wide, in one walk (the
    researcher's and the adjudicator's pages: test_researcher_browser)."""
    base_url, _ = live
    tab = chrome.new_context(viewport=VIEWPORT if width == 1440 else PHONE).new_page()
    tab.set_default_timeout(30_000)
    tab.goto(base_url)
    drawn_with_one_h1(tab)
    found = {"login": serious(tab)}
    log_in(tab, base_url, "ann2", PASSWORD)
    tab.get_by_role("button", name="Log out").wait_for()
    wait_for_session_cookie(tab)  # each new page load logs in by the cookie
    for path in ("", "my_work", "training", "guidelines"):
        tab.goto(f"{base_url}/{path}")
        drawn_with_one_h1(tab)
        tab.get_by_role("button", name="Log out").wait_for()  # still logged in: the page asked for
        found[f"/{path}"] = serious(tab)
    tab.context.close()
    assert found == {key: [] for key in found}


@pytest.mark.parametrize("width", [1440, 390])
def test_a_chosen_option_keeps_its_contrast_under_the_pointer(
    live: tuple[str, AppDB], chrome: Browser, width: int
) -> None:
    """A chosen scale option stays readable while the pointer rests on it (the hover tint darkens its
    background under the primary-coloured words)."""
    tab = chrome.new_context(viewport=VIEWPORT if width == 1440 else PHONE).new_page()
    tab.set_default_timeout(30_000)
    rating_page(tab, live[0], "ann3")
    press_answer(tab, "A_relevance", "2")
    wait_idle(tab)
    chosen = tab.locator(f".st-key-{FORM}_A_relevance button[aria-checked=true]")
    chosen.hover()
    violations = serious(tab)
    tab.context.close()
    assert violations == []


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
