"""The Training page in chromium on a phone (390 px): the answer is given below a long item, and its
feedback, drawn at the top, is in view after "Check my answer" (the page kept the scroll position)."""

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect
from sqlmodel import select

from annotator.store import db
from annotator.store.models import Study
from tests.utils.apphelpers import build_app_db, running_app, wait_idle
from tests.utils.pagehelpers import click, log_in_as

pytestmark = pytest.mark.browser

LONG_ITEM = {
    "question": "\n\n".join(
        f"Paragraph {k} of a long practice item: read it all before you answer." for k in range(40)
    ),
    "options": ["A", "B"],
    "answer": 1,
    "explanation": "B follows the rubric.",
}


def test_training_feedback_is_in_view_after_a_long_item(chrome: Browser, tmp_path: Path) -> None:
    app_db = build_app_db(tmp_path / "db", n_pairs=2, acknowledged=["ann1"])
    with db.session_scope(app_db.engine) as session:
        study = session.exec(select(Study)).one()
        study.config = {**study.config, "training": {"items": [LONG_ITEM, LONG_ITEM], "pass_threshold": 1.0}}
        session.add(study)
    with running_app(app_db.url, tmp_path / "server.log") as base_url:
        page = chrome.new_context(viewport={"width": 390, "height": 844}).new_page()
        log_in_as(page, base_url, "ann1")
        page.get_by_role("link", name="Go to training").click()
        wait_idle(page, timeout_ms=120_000)
        page.get_by_role("radio", name="A").check(force=True)
        wait_idle(page, timeout_ms=120_000)
        click(page, "Check my answer")
        feedback = page.get_by_text("Not quite. Your answer: A. The expected answer: B.")
        feedback.wait_for()
        expect(feedback).to_be_in_viewport()
        click(page, "Next")
        page.get_by_text("Practice item 2 of 2").wait_for()
        page.get_by_role("radio", name="B").check(force=True)
        wait_idle(page, timeout_ms=120_000)
        click(page, "Check my answer")
        score = page.get_by_text("Not passed yet: 1 of 2 right, 2 needed.")
        score.wait_for()
        expect(page.get_by_text("Right: B.")).to_be_in_viewport()
