"""Small things a reader sees, in headless Debian chromium at 1440x900 and 390 px: a page's address
opened before logging in, the upload limit, singular counts, My work's answer names, scale labels that
wrap between words only, and keyboard hints that a phone does not show. One server for the module."""

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from tests.utils.apphelpers import (
    PASSWORD,
    PHONE,
    VIEWPORT,
    build_app_db,
    log_in,
    pair_record,
    running_app,
    wait_for_session_cookie,
    wait_idle,
)
from tests.utils.ratings import rate

pytestmark = pytest.mark.browser
SHOTS = Path(tempfile.gettempdir()) / "annotator-screenshots"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """study1 with one pair: ann1 has rated it (My work has answers), ann2 has it still to rate."""
    folder = tmp_path_factory.mktemp("details")
    app_db = build_app_db(folder / "db", n_pairs=1, acknowledged=["ann1", "ann2"])
    rate(app_db.engine, "ann1", "EXT-00000-zq", chosen={"rubric:0": 2, "rubric:1": 1})
    app_db.engine.dispose()
    with running_app(app_db.url, folder / "server.log") as base_url:
        yield base_url


def new_tab(chrome: Browser, viewport: dict[str, int]) -> Page:
    page = chrome.new_context(viewport=viewport).new_page()  # type: ignore[arg-type]
    page.set_default_timeout(30_000)
    return page


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_a_page_opened_by_its_address_before_login_opens_after_it(live: str, chrome: Browser) -> None:
    """At 1440x900 (an address does not depend on the width)."""
    viewport = VIEWPORT
    page = new_tab(chrome, viewport)
    page.goto(f"{live}/downloads")
    wait_idle(page)
    page.get_by_role("button", name="Log in").wait_for()
    assert page.get_by_text("Page not found").count() == 0
    page.get_by_role("textbox", name="Username").fill("res1")
    page.get_by_role("textbox", name="Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Downloads").wait_for()
    assert page.url.split("?")[0].endswith("/downloads"), page.url
    assert page.get_by_text("Page not found").count() == 0
    shot(page, f"progress_direct_{viewport['width']}")
    page.context.close()


#: Every page of each role by its address, with its heading: the start page too (served at the root).
ROLE_ADDRESSES = {
    "res1": {
        "progress": "Progress",
        "validation": "Validation",
        "annotators": "Annotators",
        "owner_links": "Owner links",
        "adjudicate": "Adjudicate",
        "data": "Import and assign",
        "settings": "Study settings",
        "downloads": "Downloads",
        "guidelines": "Annotator guidelines",
    },
    "ann2": {"annotate": "Rate pairs", "my_work": "My work", "training": "Training"},
    "adj1": {"adjudicate": "Adjudicate", "guidelines": "Annotator guidelines"},
}


def opens_at(page: Page, address: str, heading: str) -> None:
    """The page shows `heading` at `address`, and no "Page not found" dialog came first."""
    page.get_by_role("heading", name=heading, exact=True).first.wait_for()
    wait_idle(page)
    assert page.url.split("?")[0].endswith(f"/{address}"), page.url
    assert page.get_by_text("Page not found").count() == 0, address


def test_every_page_opens_at_its_own_address_after_login_and_on_reload(live: str, chrome: Browser) -> None:
    """At 390 px (an address does not depend on the width; test_researcher_browser walks every page at
    both)."""
    viewport = PHONE
    for username, addresses in ROLE_ADDRESSES.items():
        page = new_tab(chrome, viewport)
        log_in(page, live, username, PASSWORD)
        wait_for_session_cookie(page)
        for address, heading in addresses.items():
            page.goto(f"{live}/{address}")
            opens_at(page, address, heading)
        start, heading = next(iter(addresses.items()))
        page.goto(f"{live}/{start}")
        opens_at(page, start, heading)
        page.reload()
        opens_at(page, start, heading)
        shot(page, f"address_{username}_{viewport['width']}")
        page.context.close()


def test_upload_boxes_state_the_real_limit_and_counts_are_singular(live: str, tab: Page) -> None:
    log_in(tab, live, "res1", PASSWORD)
    wait_for_session_cookie(tab)
    for address, label in (("settings", "Pairs file"), ("settings", "study.toml"), ("data", "Pair file")):
        tab.goto(f"{live}/{address}")
        wait_idle(tab)
        box = tab.locator("[data-testid='stFileUploader']", has_text=label).first
        box.wait_for()
        assert "at most 512 MB" in box.inner_text()
        assert "GB" not in box.inner_text(), "Streamlit's note counts 512 MB as 1GB"
    shot(tab, "data_upload")
    tab.goto(f"{live}/downloads")
    wait_idle(tab)
    tab.get_by_text("Validated pairs only (kept by adjudication)").click()  # the one pair, adjudicated or not
    wait_idle(tab)
    button = tab.get_by_role("button", name="Pairs (")
    button.wait_for()
    assert button.inner_text().strip().endswith("(1 row)"), button.inner_text()
    shot(tab, "downloads")


def test_my_work_names_each_rubric_answer_by_its_aspect_number_and_name(live: str, tab: Page) -> None:
    log_in(tab, live, "ann1", PASSWORD)
    wait_for_session_cookie(tab)
    tab.goto(f"{live}/my_work")
    wait_idle(tab)
    line = tab.get_by_text("Response A:").first
    line.wait_for()
    text = tab.locator("[data-testid='stMarkdownContainer']", has_text="Response A:").first.inner_text()
    assert "rubric aspect 0" not in text
    assert "rubric aspect 1 (Quick recipes):" in text and "rubric aspect 2 (Vegetarian):" in text
    shot(tab, "my_work")


#: For every scale option's label: the words drawn on more than one line (a word broken inside).
BROKEN_WORDS = """() => {
  const broken = [];
  for (const p of document.querySelectorAll('[class*="st-key-q_"] [data-testid="stButtonGroup"] button p')) {
    const node = p.firstChild;
    if (!node || node.nodeType !== Node.TEXT_NODE) continue;
    const text = node.textContent;
    for (const match of text.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (tops.size > 1) broken.push(match[0]);
    }
  }
  return broken;
}"""


@pytest.mark.parametrize("viewport", [VIEWPORT, PHONE], ids=["1440", "390"])
def test_scale_labels_wrap_between_words_and_key_hints_need_a_keyboard(
    live: str, chrome: Browser, viewport: dict[str, int]
) -> None:
    page = new_tab(chrome, viewport)
    log_in(page, live, "ann2", PASSWORD)
    page.locator("[class*='_confidence'] [data-testid='stButtonGroup'] button").first.wait_for()
    wait_idle(page)
    shot(page, f"rating_{viewport['width']}")
    assert page.evaluate(BROKEN_WORDS) == []
    hint = page.get_by_text("a digit answers the question in focus")
    assert hint.is_visible() == (viewport["width"] > 640), "keyboard hints show with a keyboard only"
    page.get_by_text("Skip this item or report it as broken").click()
    skip = page.locator(".st-key-skip kbd")
    skip.wait_for(state="attached")
    assert skip.is_visible() == (viewport["width"] > 640), "the Skip button's shortcut, with a keyboard only"
    page.context.close()


#: The rating form's question labels in page order (a question's label is its accessible name).
QUESTION_LABELS = """() => [...document.querySelectorAll('[class*="st-key-q_"]')]
  .filter((box) => box.querySelector('[data-testid="stButtonGroup"]'))
  .map((box) => box.querySelector('[data-testid="stWidgetLabel"]').innerText.trim())"""


def test_the_new_study_preview_counts_posts_and_asks_what_the_rating_page_asks(
    live: str, chrome: Browser, tmp_path: Path
) -> None:
    rating = new_tab(chrome, VIEWPORT)
    log_in(rating, live, "ann2", PASSWORD)  # study1's one pair, unrated: the default study's questions
    rating.locator("[class*='_confidence'] [data-testid='stButtonGroup'] button").first.wait_for()
    asked = rating.evaluate(QUESTION_LABELS)
    rating.context.close()
    record = pair_record(0)
    pairs = tmp_path / "preview.jsonl"
    pairs.write_text(json.dumps(record) + "\n", encoding="utf-8")
    for viewport in (VIEWPORT, PHONE):
        page = new_tab(chrome, viewport)
        log_in(page, live, "res1", PASSWORD)
        wait_for_session_cookie(page)
        page.goto(f"{live}/settings")
        wait_idle(page)
        box = page.locator("[data-testid='stFileUploader']", has_text="Pairs file").first
        box.locator("input[type=file]").set_input_files(str(pairs))
        page.get_by_text("Preview: the first items").wait_for()
        wait_idle(page)
        item = page.locator("[data-testid='stVerticalBlock']", has=page.get_by_text("Item 1 ·")).last
        text = item.inner_text()
        assert f"{len(record['profile'])} posts" in text, text
        listed = item.locator("li").evaluate_all(
            "(items) => items.map((li) => li.innerText.split('\\n')[0].trim())"
        )
        assert listed == asked, "the preview asks the rating page's questions, in its order"
        assert any("Quick recipes" in q for q in listed), "the rubric's aspects are asked"
        shot(page, f"preview_{viewport['width']}")
        page.context.close()
