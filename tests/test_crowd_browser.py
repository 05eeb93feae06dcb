"""A crowd worker's study in headless chromium, watched at the level of the websocket frames: no
assignment, pair, user or control id (nor a pair's external id) ever reaches the browser."""

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, WebSocket, expect
from sqlmodel import Session, select

from annotator.intake import controls
from annotator.people.authorization import SYSTEM
from annotator.store import db
from annotator.store.models import Assignment, Pair, User
from tests.utils.apphelpers import IDLE, answer_by_keys, running_app, wait_next_item
from tests.utils.crowdhelpers import OFFSET, PROLIFIC, link, offset_ids
from tests.utils.databases import fresh_db_url
from tests.utils.qchelpers import qc_study

ITEMS = 2  # main items per worker; with the control rate below, one duplicate control joins them


@pytest.fixture(scope="module")
def crowd_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A live server over a Prolific study whose ids are all above OFFSET: its URL and database URL."""
    folder = tmp_path_factory.mktemp("crowd-frames")
    url = fresh_db_url(folder, "frames", migrated=True, keep=True)
    engine = db.make_engine(url)
    offset_ids(engine)
    qc_study(engine, folder, 4, crowd=PROLIFIC | {"items": ITEMS}, controls={"rate": 0.34})
    with db.session_scope(engine) as session:
        controls.make_controls(session, study="s1", kind="duplicate", n=2, account=SYSTEM)
    engine.dispose()
    with running_app(url, folder / "server.log") as base_url:
        yield base_url, url


def _ids(url: str) -> set[str]:
    """Every id of the database the browser must not learn (assignments, pairs, users, external ids)."""
    engine = db.make_engine(url)
    with Session(engine) as session:
        found = {str(i) for i in session.exec(select(Assignment.id)) if i and i > OFFSET}
        found |= {str(i) for i in session.exec(select(Pair.id)) if i and i > OFFSET}
        found |= {str(i) for i in session.exec(select(User.id)) if i and i > OFFSET}
        found |= {e for e in session.exec(select(Pair.external_id)) if e != "zz"}
    engine.dispose()
    return found


def _leaks(traffic: list[str], ids: set[str]) -> list[str]:
    """The ids found in the traffic: a number not inside a longer number, an external id not inside a
    longer name (so "a1973000005r0" is a leak of 1973000005)."""
    numbers = sorted(i for i in ids if i.isdigit())
    names = sorted(i for i in ids if not i.isdigit())
    patterns = [re.compile(r"(?<![0-9])(" + "|".join(numbers) + r")(?![0-9])")]
    if names:
        patterns.append(re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, names)) + r")(?![\w-])"))
    return sorted({m.group(1) for text in traffic for p in patterns for m in p.finditer(text)})


def test_the_leak_check_finds_an_id_in_an_old_style_item_tag() -> None:
    assert _leaks(['{"psItem": "a1973000005r0"}', "pair-3 shown"], {"1973000005", "pair-3", "pair-30"}) == [
        "1973000005",
        "pair-3",
    ]


@pytest.mark.browser
def test_no_assignment_pair_or_control_id_reaches_the_browser(crowd_app: tuple[str, str], tab: Page) -> None:
    base_url, url = crowd_app
    traffic: list[str] = []

    def watch(socket: WebSocket) -> None:
        for kind in ("framereceived", "framesent"):
            socket.on(
                kind,
                lambda payload: traffic.append(
                    payload.decode("latin-1") if isinstance(payload, bytes) else payload
                ),
            )

    tab.on("websocket", watch)
    tab.set_viewport_size({"width": 1400, "height": 2600})
    query = "&".join(f"{k}={v}" for k, v in link("frameworker").items())
    tab.goto(f"{base_url}/?{query}")
    tab.locator(IDLE).wait_for(state="attached")
    tab.locator(".st-key-ack_guidelines button").click()
    tab.locator(IDLE).wait_for(state="attached")
    expect(tab.locator("[class*='st-key-q_A_correctness']").first).to_be_visible()
    tags = []
    for _ in range(ITEMS + 1):  # the main items and the control, in the order the queue serves them
        tag = answer_by_keys(tab)
        tags.append(tag)
        tab.locator(".st-key-annotate_submit button").click()
        if len(tags) <= ITEMS:
            wait_next_item(tab, tag)
    expect(tab.get_by_text("C1A2B3")).to_be_visible(timeout=30_000)  # the code block loads lazily
    traffic.append(tab.content())
    ids = _ids(url)
    assert len(ids) > 10 and traffic
    assert _leaks(traffic, ids) == []
    assert all(re.fullmatch(r"i[0-9a-f]{16}", tag) for tag in tags) and len(set(tags)) == len(tags)
