"""Making control pairs from the browser (Import and assign page, what `annotator controls make` does)
in chromium at 1440x900: the counts are shown before anything is written, only the confirm
writes them, a kind that would add nothing cannot be made; a hostile study name renders as text; axe
finds nothing serious or critical."""

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from analysis.vocabulary import SWAP
from annotator.intake.controls import MAKE_KINDS
from annotator.store import db
from annotator.store.models import Event, Pair, Study
from tests.utils.apphelpers import VIEWPORT, add_study, build_app_db, running_app, wait_idle
from tests.utils.pagehelpers import HOSTILE_STUDY, choose, choose_study, click, inert, log_in_as, serious

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/browser2")


def _controls(engine: Engine) -> list[str]:
    with Session(engine) as session:
        return list(session.exec(select(Pair.control).where(Pair.control != "").order_by(Pair.id)))


def _pairs(engine: Engine) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(Pair)).one())


def _set_number(page: Page, label: str, value: int) -> None:
    box = page.get_by_role("spinbutton", name=label)
    box.fill(str(value))
    box.press("Enter")
    wait_idle(page, timeout_ms=120_000)


def _actions(engine: Engine) -> list[str]:
    """The audit log's actions, oldest first."""
    with Session(engine) as session:
        return list(session.exec(select(Event.action).order_by(Event.id)))


def test_make_control_pairs_in_the_browser(chrome: Browser, tmp_path: Path) -> None:
    viewport = VIEWPORT  # the flow once, at one width (every page is walked at both: test_researcher_browser)
    app_db = build_app_db(tmp_path / "db", n_pairs=3)
    add_study(app_db, tmp_path / "other", HOSTILE_STUDY, "ann1", n_pairs=3)
    with db.session_scope(app_db.engine) as session:  # a quarter of each queue is controls
        row = session.exec(select(Study).where(Study.name == HOSTILE_STUDY)).one()
        row.config = {**row.config, "controls": {**row.config.get("controls", {}), "rate": 0.25}}
        session.add(row)
    before = _pairs(app_db.engine)
    width = viewport["width"]
    SHOTS.mkdir(exist_ok=True)
    with running_app(app_db.url, tmp_path / "server.log") as base_url:
        context = chrome.new_context(viewport=viewport)
        page = context.new_page()
        page.set_default_timeout(120_000)
        log_in_as(page, base_url, "res1")
        page.goto(f"{base_url}/data")
        page.get_by_role("heading", name="Control pairs").wait_for()
        wait_idle(page, timeout_ms=120_000)
        choose_study(page, HOSTILE_STUDY)
        _set_number(page, "How many", 2)
        preview = page.get_by_text(
            "Would add 2 new positive control pairs and mix 1 control item into the annotators' queues "
            "(queues are topped up to the study's control rate, 25%"
        )
        preview.wait_for()
        preview.scroll_into_view_if_needed()
        page.screenshot(path=SHOTS / f"controls-preview-{width}.png", full_page=True)
        assert serious(page) == []

        click(page, "Make controls…")
        assert _pairs(app_db.engine) == before  # nothing written before the confirm
        question = page.get_by_text("Add 2 control pairs and 1 queue item?")
        question.wait_for()
        click(page, "Confirm: make 2")
        made = "2 new positive control pairs, 1 control item mixed"
        done = page.get_by_text(f"study '{HOSTILE_STUDY}': {made}")
        done.wait_for()
        done.scroll_into_view_if_needed()
        page.screenshot(path=SHOTS / f"controls-made-{width}.png", full_page=True)
        inert(page)
        assert _controls(app_db.engine) == ["positive", "positive"]
        assert _pairs(app_db.engine) == before + 2

        # swapped repeats need items already rated: none yet, so nothing to make
        choose(page, "Kind", MAKE_KINDS[SWAP])
        page.get_by_text("Would add 0 new swap control pairs and mix 0 control items").wait_for()
        assert page.get_by_role("button", name="Make controls…").is_disabled()
        assert serious(page) == []
        context.close()
    assert _actions(app_db.engine)[-1] == "controls_make"
