"""Drawing the human sample of a judged study from the browser (Import and assign page) in chromium at
1440x900: the picker offers the draw when a judge rated the pairs, shows what it would do,
writes nothing before the confirm, then records each pair's probability and assigns only the drawn
pairs; axe finds nothing serious or critical."""

from pathlib import Path

import pytest
from playwright.sync_api import Browser
from sqlmodel import Session, col, select

from annotator.people.authorization import SYSTEM
from annotator.review.judges import import_judges
from annotator.store.models import Assignment, Pair
from tests.utils.apphelpers import STUDY, VIEWPORT, build_app_db, running_app, wait_idle
from tests.utils.factories import write_csv
from tests.utils.pagehelpers import click, log_in_as, pick, serious

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/browser")
N_PAIRS = 12


def test_the_picker_draws_the_human_sample_of_a_judged_study(chrome: Browser, tmp_path: Path) -> None:
    viewport = VIEWPORT  # the flow once, at one width (every page is walked at both: test_researcher_browser)
    app_db = build_app_db(tmp_path / "db", n_pairs=N_PAIRS, queues={})
    with Session(app_db.engine) as session:
        ids = list(session.exec(select(Pair.external_id).order_by(col(Pair.id))))
    rows = [
        {"pair_id": pair, "preference": 1.0, "confidence": round(0.1 + 0.8 * i / (N_PAIRS - 1), 3)}
        for i, pair in enumerate(ids)
    ]
    import_judges(
        app_db.engine, write_csv(tmp_path / "judge.csv", rows), study=STUDY, judge="j", account=SYSTEM
    )
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
        pick(page, "Annotators", "ann1")
        pick(page, "Annotators", "ann2")
        overlap = page.get_by_role("spinbutton", name="Annotators per pair")
        overlap.fill("2")
        overlap.press("Enter")
        wait_idle(page, timeout_ms=120_000)
        page.get_by_text("A human sample of the judged pairs").click()
        wait_idle(page, timeout_ms=120_000)
        size = page.get_by_role("spinbutton", name=f"Pairs in the sample (expected; of the {N_PAIRS} judged)")
        assert size.input_value() == str(N_PAIRS // 2)  # offered: half the judged pairs (at most 50)
        assert size.get_attribute("max") == str(N_PAIRS)
        size.fill("5")
        size.press("Enter")
        wait_idle(page, timeout_ms=120_000)
        page.get_by_text("Draw by the judge's uncertainty").click()
        wait_idle(page, timeout_ms=120_000)
        page.get_by_text(
            f"human sample drawn active (by the judge's uncertainty) from the {N_PAIRS} pairs"
        ).wait_for()
        page.screenshot(path=SHOTS / f"sample-preview-{width}.png", full_page=True)
        assert serious(page) == []
        click(page, "Draw and assign…")
        with Session(app_db.engine) as session:  # nothing written before the confirm
            assert session.exec(select(Assignment)).all() == []
            assert all(p is None for p in session.exec(select(Pair.in_sample)))
        confirm = page.get_by_role("button", name="Confirm: draw", exact=False)
        confirm.wait_for()
        page.screenshot(path=SHOTS / f"sample-confirm-{width}.png", full_page=True)
        assert serious(page) == []
        confirm.click()
        wait_idle(page, timeout_ms=120_000)
        page.get_by_text("human sample drawn active").first.wait_for()
        assert (
            page.get_by_role("button", name="Confirm: draw", exact=False).count() == 0
        )  # the question is gone
        with Session(app_db.engine) as session:
            pairs = list(session.exec(select(Pair)))
            assigned = {int(p) for p in session.exec(select(Assignment.pair_id))}
        drawn = {pair.id for pair in pairs if pair.in_sample}
        assert all(pair.sample_probability is not None for pair in pairs)
        assert drawn and assigned == drawn
        page.screenshot(path=SHOTS / f"sample-drawn-{width}.png", full_page=True)
        context.close()
