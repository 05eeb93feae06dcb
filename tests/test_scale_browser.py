"""The rating page of a study whose dimensions have their own scales (1-5, 1-7 and yes/no as 0/1), in
headless Debian chromium at 1440x900 and 390 px: each question offers its own points with their labels,
and a digit answers on the question's own scale. One server for the module."""

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from tests.utils.apphelpers import (
    PHONE,
    VIEWPORT,
    log_in,
    one_pair_app,
    pair_record,
    press_answer,
    selected,
    wait_idle,
)
from tests.utils.scales import POINTS, two_scale_config

pytestmark = pytest.mark.browser
SHOTS = Path(tempfile.gettempdir()) / "annotator-screenshots"
PASSWORD = "scales-test-password"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("scales")
    with one_pair_app(folder, pair_record(0), password=PASSWORD, config=two_scale_config()) as base_url:
        yield base_url


def _options(page: Page, side: str, name: str) -> list[str]:
    """The option texts of one quality question, in order."""
    return page.locator(f".st-key-q_{side}_{name} [data-testid='stButtonGroup'] button").all_inner_texts()


@pytest.mark.parametrize("viewport", [VIEWPORT, PHONE], ids=["1440", "390"])
def test_each_question_offers_its_own_scale(live: str, chrome: Browser, viewport: dict[str, int]) -> None:
    page = chrome.new_context(viewport=viewport).new_page()  # type: ignore[arg-type]
    page.set_default_timeout(30_000)
    log_in(page, live, "ann1", PASSWORD)
    page.locator(".st-key-q_A_safe [data-testid='stButtonGroup'] button").first.wait_for()
    wait_idle(page)
    for name, points in POINTS.items():
        texts = _options(page, "A", name)
        assert [int(t.split()[0]) for t in texts] == points, (name, texts)
        assert [b.is_visible() for b in page.locator(f".st-key-q_A_{name} button").all()] == [True] * len(
            points
        )
    assert " ".join(_options(page, "A", "safe")[0].split()) == "0 No: the advice could cause harm"
    assert " ".join(_options(page, "A", "helpfulness")[-1].split()) == "7 Could not be better"
    if viewport is VIEWPORT:  # both responses side by side; a phone shows B after its A/B switch
        assert [int(t.split()[0]) for t in _options(page, "B", "safe")] == POINTS["safe"]
        assert "(1-5, 1-7 and 0-1 scales, 0-2 rubric)" in page.inner_text("body")
    press_answer(page, "A_helpfulness", "7")
    wait_idle(page)
    press_answer(page, "A_safe", "0")
    wait_idle(page)
    assert [" ".join(t.split()) for t in selected(page, "A_helpfulness")] == ["7 Could not be better"]
    assert [" ".join(t.split()) for t in selected(page, "A_safe")] == ["0 No: the advice could cause harm"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(".st-key-q_A_helpfulness").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"scales_{viewport['width']}.png"), full_page=False)
    page.context.close()
