"""The HTML report as a reader opens it, in headless Debian chromium at 1440x900 and 390 px: the
summary (overall result and verdicts with their numbers) first, every other part collapsed, at most
8 screens for a 30-pair study, and no table cut at the right edge once every part is open."""

import tempfile
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Browser

from analysis.render.as_html import to_html
from analysis.report import Report, ReportSettings, build_report
from analysis.simulation import SimDesign, SimEffects, simulate_frame
from tests.utils.apphelpers import FIGURES_DRAWN, PHONE, VIEWPORT

pytestmark = pytest.mark.browser
SHOTS = Path(tempfile.gettempdir()) / "annotator-screenshots"
MAX_SCREENS = 8

#: Every table box whose table is wider than the box (cut at its right edge): its heading, widths.
CUT_TABLES = """() => [...document.querySelectorAll('.table')]
  .filter((box) => box.scrollWidth > box.clientWidth + 1)
  .map((box) => [box.closest('details') ? box.closest('details').querySelector('summary').innerText : '',
                 box.scrollWidth, box.clientWidth])"""


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Report]:
    """A 30-pair study (three annotators per pair, a fifth of the pairs broken) as an HTML report."""
    frame = simulate_frame(
        np.random.default_rng(1),
        SimDesign(n_pairs=30, per_pair=3, pool=3),
        SimEffects(noise=0.5, broken_share=0.2),
    )
    report = build_report(frame, study="thirty", settings=ReportSettings(n_boot=200))
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(to_html(report), encoding="utf-8")
    return path, report


@pytest.mark.parametrize("viewport", [VIEWPORT, PHONE], ids=["1440", "390"])
def test_the_report_opens_on_its_summary_and_fits_a_reader(
    report_file: tuple[Path, Report], chrome: Browser, viewport: dict[str, int]
) -> None:
    path, report = report_file
    page = chrome.new_context(viewport=viewport).new_page()  # type: ignore[arg-type]
    page.goto(path.as_uri())
    page.wait_for_function(FIGURES_DRAWN)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"report_{viewport['width']}.png"))
    order = page.evaluate(
        "() => [...document.body.children].map((e) => e.tagName + (e.className ? '.' + e.className : ''))"
    )
    assert order.index("UL.verdicts") < order.index("DETAILS"), "the verdicts come before every part"
    for verdict in report.verdicts:
        assert page.get_by_text(verdict.detail[:60]).first.is_visible()
    height = page.evaluate("document.documentElement.scrollHeight")
    if viewport["width"] == VIEWPORT["width"]:
        assert height <= MAX_SCREENS * viewport["height"], f"{height / viewport['height']:.1f} screens"
    page.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    page.wait_for_function(FIGURES_DRAWN)
    widths = page.evaluate("() => [...document.querySelectorAll('figure img')].map((i) => i.clientWidth)")
    assert widths and max(widths) <= viewport["width"], "every figure fits the screen"
    assert page.evaluate(CUT_TABLES) == []
    page.screenshot(path=str(SHOTS / f"report_open_{viewport['width']}.png"), full_page=True)
    page.context.close()
