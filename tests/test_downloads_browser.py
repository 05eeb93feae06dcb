"""The Downloads page in headless Debian chromium: "Validated pairs only" keeps
only the pairs an adjudication kept in every file it offers (labels, adjudicated labels, pairs), and
the files hold what their buttons count."""

import io
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import Browser, Page

from annotator.people.authorization import SYSTEM
from annotator.review import adjudicate
from annotator.store import db
from tests.utils.apphelpers import VIEWPORT, log_in, running_app, wait_for_session_cookie, wait_idle
from tests.utils.pagehelpers import serious
from tests.utils.ratings import PASSWORD, STUDY, build_study, rate_all

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/browser3")
#: Rows per file: with "Validated pairs only" (p0 alone is kept), and without it (all three pairs).
VALIDATED = {"Labels": 30, "Adjudicated labels": 1, "Pairs": 1}
EVERY = {"Labels": 90, "Adjudicated labels": 3, "Pairs": 3}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Three pairs rated by three annotators: p0 kept, p1 waiting for a person, p2 resolved and dropped."""
    folder = tmp_path_factory.mktemp("downloads")
    engine = build_study(folder, 3, roles={"res1": "researcher"})
    rate_all(engine, "p0", [1, 2, 1])
    rate_all(engine, "p1", [1, -1, 0])
    rate_all(engine, "p2", [0, 0, -1])
    with db.session_scope(engine) as session:
        adjudicate.auto_resolve(session, study=STUDY, account=SYSTEM)
    url = engine.url.render_as_string(hide_password=False)
    engine.dispose()
    with running_app(url, folder / "server.log") as base_url:
        yield base_url


def offered(page: Page) -> dict[str, int]:
    """Each download button's file and the rows it counts ("Labels (30 rows)" -> {"Labels": 30})."""
    found = {}
    for title in EVERY:
        button = page.get_by_role("button", name=f"{title} (", exact=False).first
        button.wait_for()
        text = button.inner_text().strip().splitlines()[-1]  # after the button's icon
        name, count = text.rsplit(" (", 1)
        found[name] = int(count.split()[0])
    return found


def downloaded(page: Page, title: str) -> pd.DataFrame:
    with page.expect_download() as download:
        page.get_by_role("button", name=f"{title} (", exact=False).first.click()
    wait_idle(page)
    return pd.read_csv(io.BytesIO(Path(download.value.path()).read_bytes()), dtype=str)


def test_validated_pairs_only_filters_every_file(live: str, chrome: Browser) -> None:
    """At 1440x900 (the filter does not depend on the width; test_researcher_browser walks every page
    at both)."""
    page = chrome.new_context(viewport=VIEWPORT, accept_downloads=True).new_page()  # type: ignore[arg-type]
    page.set_default_timeout(120_000)
    log_in(page, live, "res1", PASSWORD)
    wait_for_session_cookie(page)
    page.goto(f"{live}/downloads")
    page.get_by_role("heading", name="Downloads").wait_for()
    wait_idle(page)
    box = page.get_by_role("checkbox", name="Validated pairs only (kept by adjudication)")
    assert box.is_checked()
    assert offered(page) == VALIDATED
    assert set(downloaded(page, "Labels")["pair_id"]) == {"p0"}, "labels of dropped pairs came out"
    assert set(downloaded(page, "Adjudicated labels")["pair_id"]) == {"p0"}
    assert list(downloaded(page, "Pairs")["id"]) == ["p0"]
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SHOTS / f"downloads-validated-{VIEWPORT['width']}.png", full_page=True)
    assert serious(page) == []
    page.get_by_text("Validated pairs only (kept by adjudication)").click()
    wait_idle(page)
    assert not box.is_checked()
    assert offered(page) == EVERY
    assert set(downloaded(page, "Labels")["pair_id"]) == {"p0", "p1", "p2"}
    page.context.close()
