"""The profile owner's page in chromium on a phone (390 px): after "Save and continue" the next pair
starts from its top with nothing ticked, and the keyboard focus is on its first question (the page
kept the scroll position of the Save button, far down, and the focus fell to the page)."""

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from annotator.people.authorization import SYSTEM
from annotator.rating.owner_links import issue_owner_link
from annotator.store import db
from tests.utils.apphelpers import STUDY, build_app_db, pair_record, running_app, wait_idle

pytestmark = pytest.mark.browser


def test_the_next_pair_starts_at_its_top_unticked_with_its_first_question_focused(
    chrome: Browser, tmp_path: Path
) -> None:
    app_db = build_app_db(tmp_path / "db", records=[pair_record(i, owner="alice") for i in range(2)])
    with db.session_scope(app_db.engine) as session:
        token = issue_owner_link(session, study=STUDY, owner="alice", account=SYSTEM)
    with running_app(app_db.url, tmp_path / "server.log") as base_url:
        page = chrome.new_context(viewport={"width": 390, "height": 844}).new_page()
        page.goto(f"{base_url}/?owner_token={token}")
        wait_idle(page, timeout_ms=120_000)
        page.get_by_text("0 of 2 done").wait_for()
        form = page.locator(".st-key-owner_questions_0")
        groups = form.locator('[class*="st-key-owner_"]:has(input[type=radio])')
        groups.last.wait_for()
        assert groups.count() >= 4  # quality for A and B, which answer, how sure, the rubric's points
        for group in groups.all():  # every question: its first answer
            group.locator("label:has(input[type=radio])").first.click()
        page.get_by_role("button", name="Save and continue").click()
        wait_idle(page, timeout_ms=120_000)
        done = page.get_by_text("1 of 2 done")
        done.wait_for()
        expect(done).to_be_in_viewport()
        nxt = page.locator(".st-key-owner_questions_1")
        expect(nxt.get_by_role("radio").first).to_be_focused()
        assert nxt.get_by_role("radio").count() > 0
        assert nxt.locator("input[type=radio]:checked").count() == 0, "nothing carried from the last pair"
