"""The Training page in chromium: by keyboard alone (a digit picks the answer, Ctrl+Enter checks it
and goes on: 3 keys per item, the answer focused when an item is drawn), and on a phone (390 px) the
feedback of an answer given below a long item is in view (the page kept the scroll position)."""

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlmodel import select

from annotator.store import db
from annotator.store.models import Study
from tests.utils.apphelpers import build_app_db, running_app, wait_idle
from tests.utils.pagehelpers import log_in_as

pytestmark = pytest.mark.browser

LONG_ITEM = {
    "question": "\n\n".join(
        f"Paragraph {k} of a long practice item: read it all before you answer." for k in range(40)
    ),
    "options": ["A", "B"],
    "answer": 1,
    "explanation": "B follows the rubric.",
}


ANSWER_FOCUSED = "() => document.activeElement?.type === 'radio'"


def _press(page: Page, key: str) -> None:
    page.keyboard.press(key)
    wait_idle(page, timeout_ms=120_000)


@pytest.mark.parametrize(
    "viewport", [{"width": 1440, "height": 900}, {"width": 390, "height": 844}], ids=["1440", "390"]
)
def test_training_by_keyboard_with_its_feedback_in_view(
    chrome: Browser, tmp_path: Path, viewport: dict[str, int]
) -> None:
    app_db = build_app_db(tmp_path / "db", n_pairs=2, acknowledged=["ann1"])
    with db.session_scope(app_db.engine) as session:
        study = session.exec(select(Study)).one()
        study.config = {**study.config, "training": {"items": [LONG_ITEM, LONG_ITEM], "pass_threshold": 1.0}}
        session.add(study)
    with running_app(app_db.url, tmp_path / "server.log") as base_url:
        page = chrome.new_context(viewport=viewport).new_page()
        log_in_as(page, base_url, "ann1")
        page.get_by_role("link", name="Go to training").click()
        wait_idle(page, timeout_ms=120_000)
        page.get_by_text("Practice item 1 of 2").wait_for()
        page.wait_for_function(ANSWER_FOCUSED, timeout=5_000)  # the answer
        expect(page.get_by_text("Paragraph 0 of a long")).to_be_in_viewport()  # the item from its top
        _press(page, "1")
        expect(page.get_by_role("radio", name="A")).to_be_checked()
        _press(page, "Control+Enter")
        feedback = page.get_by_text("Not quite. Your answer: A. The expected answer: B.")
        feedback.wait_for()
        expect(feedback).to_be_in_viewport()
        _press(page, "Control+Enter")
        page.get_by_text("Practice item 2 of 2").wait_for()
        page.wait_for_function(ANSWER_FOCUSED, timeout=30_000)  # drawn down to its answer: a digit lands
        _press(page, "2")
        expect(page.get_by_role("radio", name="B")).to_be_checked()
        _press(page, "Control+Enter")
        page.get_by_text("Not passed yet: 1 of 2 right, 2 needed.").wait_for()
        expect(page.get_by_text("Right: B.")).to_be_in_viewport()
        hint = page.get_by_text("Keys: a digit picks an answer")
        _press(page, "Control+Enter")
        page.get_by_text("Practice item 1 of 2 · attempt 2").wait_for()
        assert hint.is_visible() == (viewport["width"] > 640), "key hints with a keyboard only"
