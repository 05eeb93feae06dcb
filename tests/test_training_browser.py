"""Training for a second study, in headless chromium: an annotator with items in two studies picks the
one that asks for training, is sent to its practice item, passes it, and then rates that study's items
(at 1440x900 and on a 390 px phone)."""

import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from annotator.intake import ingest
from annotator.intake.assign import assign
from annotator.people.authorization import SYSTEM
from annotator.store import db
from tests.utils.apphelpers import PASSWORD, AppDB, build_app_db, log_in, pair_record, running_app, wait_idle
from tests.utils.pagehelpers import choose_study
from tests.utils.qchelpers import qc_config

pytestmark = pytest.mark.browser
TRAINED = "trained"
PRACTICE = {"question": "Practice: which response fits the user better?", "options": ["A", "B"], "answer": 1}
SCREENSHOTS = Path(tempfile.gettempdir()) / "annotator-screenshots"
WIDTHS = {"ann1": {"width": 1440, "height": 900}, "ann2": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, AppDB]]:
    """The app's first study (no training) plus a second one whose training has one practice item;
    ann1 and ann2 have items in both."""
    folder = tmp_path_factory.mktemp("training")
    app_db = build_app_db(folder / "db", acknowledged=list(WIDTHS))
    path = folder / f"{TRAINED}.jsonl"
    records = [pair_record(200 + i, question=f"Trained study question {i}") for i in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    config = qc_config(training={"items": [PRACTICE], "pass_threshold": 1.0})
    ingest.import_file(app_db.engine, path, study=TRAINED, config=config, account=SYSTEM)
    with db.session_scope(app_db.engine) as session:
        assign(session, study=TRAINED, overlap=2, annotators=list(WIDTHS), account=SYSTEM)
    app_db.engine.dispose()
    with running_app(app_db.url, folder / "server.log") as base_url:
        yield base_url, app_db


def pick_study(page: Page, name: str) -> None:
    """Choose `name` in the rating page's study picker; the page's address then keeps the study."""
    wait_idle(page)
    choose_study(page, name)
    expect(page).to_have_url(re.compile(f"study_name={name}"))  # the page's address keeps the study


@pytest.mark.parametrize("username", list(WIDTHS))
def test_training_for_a_second_study_then_its_items(
    live: tuple[str, AppDB], chrome: Browser, username: str
) -> None:
    base_url, _ = live
    context = chrome.new_context(viewport=WIDTHS[username])
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        log_in(page, base_url, username, PASSWORD)
        pick_study(page, TRAINED)
        expect(page.get_by_text("Please complete the training first")).to_be_visible()
        page.get_by_role("link", name="Go to training").click()
        wait_idle(page)
        expect(page.get_by_text("Practice item 1 of 1")).to_be_visible()
        expect(page.get_by_text(PRACTICE["question"])).to_be_visible()  # the second study's item
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"training-{WIDTHS[username]['width']}.png"), full_page=True)
        page.get_by_role("radiogroup", name="Your answer").get_by_text("B", exact=True).click()
        wait_idle(page)
        page.get_by_role("button", name="Check my answer").click()
        wait_idle(page)
        expect(page.get_by_text("You are qualified")).to_be_visible()
        page.get_by_role("link", name="Start rating").click()
        wait_idle(page)
        pick_study(page, TRAINED)
        expect(page.get_by_text("Please complete the training first")).to_have_count(0)
        expect(page.get_by_text("Trained study question")).to_be_visible()  # an item of the second study
        expect(page.locator(".st-key-annotate_submit")).to_be_visible()
    finally:
        context.close()
