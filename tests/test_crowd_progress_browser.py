"""A crowd study's Progress page in chromium at 390 px: a pair counts as complete only
with the study's overlap of judgments (never while nobody has it), and the judgments-over-time chart's
y axis shows whole numbers only; axe finds nothing serious or critical."""

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from annotator.store import db
from annotator.store.models import Study
from tests.utils.apphelpers import PHONE, build_app_db, running_app, wait_drawn, wait_idle
from tests.utils.pagehelpers import log_in_as, serious
from tests.utils.qchelpers import answer_all

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/browser2")


def _metric(page: Page, label: str) -> str:
    box = page.locator("[data-testid=stMetric]", has_text=label).first
    return box.locator("[data-testid=stMetricValue]").inner_text().strip()


def _y_ticks(page: Page) -> list[str]:
    """The y-axis tick labels of the judgments-over-time chart (drawn as SVG: right-aligned texts), once
    its expander is opened (the page draws no chart before)."""
    assert page.locator("[data-testid=stEChartsChart]").count() == 0
    page.get_by_text("Judgments over time", exact=True).first.click()
    chart = page.locator("[data-testid=stEChartsChart]", has_text="Judgments over time").first
    chart.scroll_into_view_if_needed()
    ticks = chart.locator("svg text[text-anchor=end]")
    ticks.first.wait_for()
    return [t.strip() for t in ticks.all_text_contents()]


def _open_progress(page: Page, base_url: str) -> None:
    """Open the researcher's first page, Progress (at the root address)."""
    page.goto(base_url)
    page.get_by_role("heading", name="Progress", exact=True).wait_for()
    wait_idle(page, timeout_ms=120_000)
    wait_drawn(page, timeout_ms=120_000)


def test_crowd_progress_counts_pairs_by_the_overlap_with_whole_number_axes(
    chrome: Browser, tmp_path: Path
) -> None:
    viewport = PHONE  # the flow once, at one width (every page is walked at both: test_researcher_browser)
    # 30 pairs; the first is queued for three crowd workers, the rest for nobody yet
    app_db = build_app_db(tmp_path / "db", n_pairs=30, queues={"ann1": "A", "ann2": "B", "crowd3": "A"})
    with db.session_scope(app_db.engine) as session:
        row = session.get(Study, app_db.study_id)
        assert row is not None
        analysis = {**row.config.get("analysis", {}), "overlap": 3}
        row.config = {**row.config, "analysis": analysis, "crowd": {"platform": "prolific", "places": 10}}
        session.add(row)
    for name in ("ann1", "ann2"):
        assert answer_all(app_db.engine, name, study_id=app_db.study_id) == 1
    width = viewport["width"]
    SHOTS.mkdir(exist_ok=True)
    with running_app(app_db.url, tmp_path / "server.log") as base_url:
        context = chrome.new_context(viewport=viewport)
        page = context.new_page()
        page.set_default_timeout(120_000)
        log_in_as(page, base_url, "res1")
        _open_progress(page, base_url)
        assert _metric(page, "Pairs complete") == "0"  # 2 judgments of an overlap of 3
        assert _metric(page, "Judgments done (of 3)") == "2"
        ticks = _y_ticks(page)
        assert ticks and all(t.isdigit() for t in ticks), ticks
        assert [int(t) for t in ticks] == list(range(int(ticks[0]), int(ticks[-1]) + 1))  # step 1
        page.screenshot(path=SHOTS / f"crowd-progress-2-{width}.png", full_page=True)
        assert serious(page) == []

        assert answer_all(app_db.engine, "crowd3", study_id=app_db.study_id) == 1
        _open_progress(page, base_url)
        assert _metric(page, "Pairs complete") == "1"  # the third judgment completes the first pair
        ticks = _y_ticks(page)
        assert ticks and all(t.isdigit() for t in ticks), ticks
        page.screenshot(path=SHOTS / f"crowd-progress-3-{width}.png", full_page=True)
        assert serious(page) == []
        assert page.get_by_text("Page not found").count() == 0
        context.close()
