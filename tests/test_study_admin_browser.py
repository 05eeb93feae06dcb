"""Assigning, unassigning, archiving and deleting a study from the browser (Import and assign page) in
chromium at 390 px: nobody is picked at first, the count is confirmed before anything is
written, and every undo is there; axe finds nothing serious or critical on the page."""

from pathlib import Path

import pytest
from playwright.sync_api import Browser
from sqlmodel import Session, func, select

from annotator.store.models import Assignment, Event, Study
from tests.utils.apphelpers import PHONE, STUDY, AppDB, build_app_db, running_app, wait_idle
from tests.utils.pagehelpers import click, log_in_as, pick, serious

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/browser")


def _count(app_db: AppDB, table: type) -> int:
    with Session(app_db.engine) as session:
        return int(session.exec(select(func.count()).select_from(table)).one())


def _actions(app_db: AppDB) -> list[str]:
    with Session(app_db.engine) as session:
        return list(session.exec(select(Event.action).order_by(Event.id)))


def test_assign_confirm_unassign_archive_restore_delete_in_the_browser(
    chrome: Browser, tmp_path: Path
) -> None:
    viewport = PHONE  # the flow once, at one width (every page is walked at both: test_researcher_browser)
    app_db = build_app_db(tmp_path / "db", n_pairs=3, queues={})
    width = viewport["width"]
    SHOTS.mkdir(exist_ok=True)
    with running_app(app_db.url, tmp_path / "server.log") as base_url:
        context = chrome.new_context(viewport=viewport)
        page = context.new_page()
        page.set_default_timeout(120_000)
        log_in_as(page, base_url, "res1")
        page.goto(f"{base_url}/data")
        page.get_by_role("heading", name="Import and assign").wait_for()
        wait_idle(page, timeout_ms=120_000)
        page.get_by_text("Choose the annotators to assign.").wait_for()  # nobody picked at first
        assert serious(page) == []

        pick(page, "Annotators", "ann1")
        overlap = page.get_by_role("spinbutton", name="Annotators per pair")
        overlap.fill("1")
        overlap.press("Enter")
        wait_idle(page, timeout_ms=120_000)
        page.get_by_text("Would add 3 assignments (3 pairs, 1 annotator).").wait_for()
        click(page, "Assign…")
        assert _count(app_db, Assignment) == 0  # nothing written before the confirm
        page.get_by_role("button", name="Confirm: add 3").wait_for()
        page.screenshot(path=SHOTS / f"assign-confirm-{width}.png", full_page=True)
        assert serious(page) == []
        click(page, "Confirm: add 3")
        page.get_by_text("3 new assignments").first.wait_for()
        assert _count(app_db, Assignment) == 3

        page.screenshot(path=SHOTS / f"assigned-{width}.png", full_page=True)
        pick(page, "Annotators to unassign", "ann1")
        page.get_by_text("Would remove 3 items not yet started; 0 started items").wait_for()
        page.screenshot(path=SHOTS / f"unassign-{width}.png", full_page=True)
        click(page, "Unassign 3 items")
        page.get_by_text("3 assignments not yet started removed").wait_for()
        assert _count(app_db, Assignment) == 0

        click(page, "Archive this study")
        page.get_by_text("archived: hidden from every picker").wait_for()
        page.get_by_text("No study yet").first.wait_for()  # the only study left the picker
        page.screenshot(path=SHOTS / f"archived-{width}.png", full_page=True)
        with Session(app_db.engine) as session:
            assert session.exec(select(Study.archived_at)).one() is not None

        click(page, "Restore")
        page.get_by_text(f"study '{STUDY}' restored").wait_for()
        page.get_by_role("button", name="Archive this study").wait_for()  # back in the picker

        name = page.get_by_role("textbox", name="Type the study's name to delete it")
        assert page.get_by_role("button", name="Delete this study").is_disabled()
        name.fill(STUDY)
        name.press("Enter")
        wait_idle(page, timeout_ms=120_000)
        page.screenshot(path=SHOTS / f"delete-{width}.png", full_page=True)
        assert serious(page) == []
        click(page, "Delete this study")
        page.get_by_text(f"study '{STUDY}' deleted").wait_for()
        assert _count(app_db, Study) == 0
        context.close()
    assert _actions(app_db)[-5:] == ["assign", "unassign", "study_archive", "study_restore", "study_delete"]
