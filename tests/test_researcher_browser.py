"""The researcher's and adjudicator's pages in chromium: axe finds no serious or critical violation at
1440x900 or at 390 px, the adjudication panes take the keyboard focus, a study is created from the
Study settings page, and the HTML report fits a phone."""

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page
from sqlmodel import Session

from annotator.people.authorization import SYSTEM
from annotator.review.study_report import study_report
from annotator.store import db
from annotator.study import get_study
from annotator.synthetic import SimulationSpec, simulate
from tests.utils.apphelpers import (
    FIGURES_DRAWN,
    PHONE,
    STUDY,
    VIEWPORT,
    AppDB,
    build_app_db,
    pair_record,
    running_app,
    wait_drawn,
    wait_idle,
)
from tests.utils.pagehelpers import log_in_as, serious

pytestmark = pytest.mark.browser
SHOTS = Path(tempfile.gettempdir()) / "annotator-screenshots"
#: (account, address, title) of every researcher and adjudicator page.
PAGES = [
    ("res1", "progress", "Progress"),
    ("res1", "validation", "Validation"),
    ("res1", "annotators", "Annotators"),
    ("res1", "adjudicate", "Adjudicate"),
    ("res1", "data", "Import and assign"),
    ("res1", "settings", "Study settings"),
    ("res1", "downloads", "Downloads"),
    ("adj1", "", "Adjudicate"),
]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, AppDB]]:
    """A server over a study of eight pairs in two categories rated by three simulated annotators."""
    folder = tmp_path_factory.mktemp("researcher")
    long_text = "Cook a batch of lentils on Sunday and keep them for three dinners. " * 40
    records = [
        pair_record(
            i, category=("cooking", "travel")[i % 2], chosen=f"Plan {i}. {long_text}", rejected=long_text
        )
        for i in range(8)
    ]
    app_db = build_app_db(folder / "db", records=records, queues={})
    simulate(app_db.engine, study=STUDY, spec=SimulationSpec(seed=3, quality_gap=0.8))
    app_db.engine.dispose()
    with running_app(app_db.url, folder / "server.log") as base_url:
        yield base_url, app_db


def open_page(page: Page, base_url: str, path: str, title: str) -> None:
    page.goto(f"{base_url}/{path}")
    page.get_by_role("heading", name=title, exact=True).first.wait_for(timeout=120_000)
    wait_drawn(page, timeout_ms=120_000)


#: Every table or grid wider than its box: cut ("clipped") unless the box scrolls sideways and the note
#: under it says so; and the page itself never scrolls sideways.
CUT_TABLES = """() => {
  const found = [];
  for (const table of document.querySelectorAll('[data-testid=stTable], [data-testid=stDataFrame]')) {
    const holder = table.closest('[data-testid=stElementContainer]') || table;
    const said = getComputedStyle(holder, '::after').content.includes('scroll sideways');
    const head = table.innerText.slice(0, 40).replace(/\\s+/g, ' ');
    for (const box of table.querySelectorAll('div')) {
      if (box.clientWidth === 0 || box.scrollWidth <= box.clientWidth + 1) continue;
      const overflow = getComputedStyle(box).overflowX;
      if (overflow === 'visible') continue;
      if (!/(auto|scroll)/.test(overflow)) found.push('clipped: ' + head);
      else if (!said) found.push('scrolls without saying so: ' + head);
    }
  }
  if (document.documentElement.scrollWidth > window.innerWidth) found.push('the page scrolls sideways');
  return found;
}"""


@pytest.mark.parametrize("viewport", [VIEWPORT, PHONE], ids=["1440x900", "390px"])
def test_every_page_has_no_serious_accessibility_violation_and_no_cut_table(
    live: tuple[str, AppDB], chrome: Browser, viewport: dict[str, int]
) -> None:
    """One walk over every page of the researcher and the adjudicator: axe-core finds nothing serious
    or critical, each page has one h1, and no table is cut at the right edge."""
    base_url, _ = live
    violations: dict[str, list[str]] = {}
    cut: dict[str, list[str]] = {}
    for user in ("res1", "adj1"):
        context = chrome.new_context(viewport=viewport)
        page = context.new_page()
        page.set_default_timeout(60_000)
        log_in_as(page, base_url, user)
        for name, path, title in PAGES:
            if name == user:
                open_page(page, base_url, path, title)
                assert page.locator("h1").count() == 1, path
                violations[f"{user} /{path}"] = serious(page)
                cut[f"{user} /{path}"] = page.evaluate(CUT_TABLES)
        if user == "res1":  # the Annotators table of Progress, as a reader sees it
            open_page(page, base_url, "progress", "Progress")
            grid = page.locator("[data-testid=stTable]")
            table = page.locator("[data-testid=stElementContainer]", has=grid)
            table.first.scroll_into_view_if_needed()
            SHOTS.mkdir(parents=True, exist_ok=True)
            table.first.screenshot(path=SHOTS / f"progress-table-{viewport['width']}.png")
        context.close()
    assert violations == {key: [] for key in violations}
    assert cut == {key: [] for key in cut}


def test_adjudication_panes_take_the_keyboard_focus(live: tuple[str, AppDB], tab: Page) -> None:
    base_url, _ = live
    log_in_as(tab, base_url, "adj1")
    open_page(tab, base_url, "", "Adjudicate")
    reached = []
    for _ in range(120):
        tab.keyboard.press("Tab")
        label = tab.evaluate("() => document.activeElement.getAttribute('aria-label')")
        if label in ("Chosen response", "Rejected response") and label not in reached:
            reached.append(label)
            before = tab.evaluate("() => document.activeElement.scrollTop")
            tab.keyboard.press("PageDown")
            tab.wait_for_function("(b) => document.activeElement.scrollTop > b", arg=before)
        if len(reached) == 2:
            break
    assert reached == ["Chosen response", "Rejected response"]


def test_a_study_is_created_from_the_settings_page(
    live: tuple[str, AppDB], tab: Page, tmp_path: Path
) -> None:
    base_url, app_db = live
    pairs = tmp_path / "new.jsonl"
    pairs.write_text("".join(json.dumps(pair_record(50 + i)) + "\n" for i in range(3)), encoding="utf-8")
    bad = tmp_path / "mine.toml"
    bad.write_text("[analysis]\nmargin = -1\n", encoding="utf-8")
    log_in_as(tab, base_url, "res1")
    open_page(tab, base_url, "settings", "Study settings")
    tab.locator(".st-key-settings_toml input[type=file]").set_input_files(str(bad))
    wait_idle(tab)
    tab.get_by_text("mine.toml: analysis.margin: Input should be greater than 0").wait_for()
    tab.locator(".st-key-settings_toml").get_by_role("button", name="Remove").first.click()
    wait_idle(tab)
    tab.get_by_role("textbox", name="Study name").fill("fresh")
    tab.get_by_role("textbox", name="Study name").press("Enter")
    wait_idle(tab)
    tab.locator(".st-key-settings_pairs input[type=file]").set_input_files(str(pairs))
    tab.locator(".st-key-settings_pairs").get_by_text("new.jsonl").wait_for()  # uploaded
    wait_idle(tab)
    margin = tab.get_by_role("spinbutton", name="Equivalence margin (scale points)")
    margin.fill("0.75")
    margin.press("Enter")
    wait_idle(tab)
    tab.get_by_text("Preview: the first items as an annotator sees them").wait_for()
    tab.get_by_text("Plan 50 alpha").first.wait_for()
    tab.get_by_role("button", name="Create the study").click()
    wait_idle(tab)
    tab.get_by_text("The settings are now fixed for this study.").first.wait_for()
    assert tab.get_by_role("textbox", name="Study name").input_value() == ""  # an empty form for the next
    assert tab.get_by_text("new.jsonl").count() == 0
    assert tab.get_by_role("button", name="Create the study").is_disabled()
    with Session(app_db.engine) as session:
        study = get_study(session, "fresh")
        assert study.config["analysis"]["margin"] == 0.75


def test_html_report_fits_a_390px_phone(live: tuple[str, AppDB], chrome: Browser) -> None:
    from analysis.render import to_html

    _, app_db = live
    with db.session_scope(app_db.engine) as session:
        report = study_report(session, study=STUDY, n_boot=50, account=SYSTEM)
    context = chrome.new_context(viewport=PHONE)
    page = context.new_page()
    page.set_content(to_html(report))
    page.wait_for_function(FIGURES_DRAWN)
    assert page.locator("figure img").count() == 5
    width = page.evaluate("() => document.documentElement.scrollWidth")
    problems = serious(page)
    context.close()
    assert width <= PHONE["width"]
    assert problems == []
