"""Scale-out: two Streamlit servers on one PostgreSQL database, two annotators rating at the same time.

This is the deployment the README describes (several `annotator serve` processes behind a proxy with
sticky sessions, one PostgreSQL database): each server keeps only its browsers' session state, and
every judgment goes to the shared database, so both judgments land with the right annotators and the
pair counters stay right when the two submits are interleaved.
"""

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select

from annotator.intake import ingest
from annotator.intake.assign import assign
from annotator.people import accounts
from annotator.people.authorization import SYSTEM
from annotator.store import db
from annotator.store.models import Assignment, Event, Judgment, Pair, User
from tests.utils.apphelpers import CHROMIUM_ARGS, log_in, running_app, wait_idle
from tests.utils.databases import POSTGRES_ENV, fresh_db_url, postgres_admin_url
from tests.utils.factories import make_records, write_jsonl

pytestmark = [
    pytest.mark.browser,
    pytest.mark.postgres,
    pytest.mark.skipif(
        postgres_admin_url() is None, reason=f"needs PostgreSQL: set ${POSTGRES_ENV} to an admin URL"
    ),
]

ANNOTATORS = {"ann_one": "first-annotator-pw", "ann_two": "second-annotator-pw"}


@pytest.fixture
def study_url(tmp_path: Path) -> str:
    """A PostgreSQL database with four pairs, both annotators on every pair."""
    url = fresh_db_url(tmp_path, migrated=True)
    engine = db.make_engine(url)
    ingest.import_file(
        engine, write_jsonl(tmp_path / "pairs.jsonl", make_records(4)), study="s1", account=SYSTEM
    )
    with db.session_scope(engine) as session:
        for username, password in ANNOTATORS.items():
            accounts.add_user(session, username=username, role="annotator", password=password, account=SYSTEM)
        assign(session, study="s1", overlap=2, seed=0, account=SYSTEM)
    engine.dispose()
    return url


@pytest.fixture
def servers(study_url: str, tmp_path: Path) -> Iterator[list[str]]:
    """Two app servers on two free ports, both on the one database; their base URLs."""
    with (
        running_app(study_url, tmp_path / "streamlit-0.log") as first,
        running_app(study_url, tmp_path / "streamlit-1.log") as second,
    ):
        yield [first, second]


def _rating_form(page: Any) -> Any:
    groups = page.locator("[data-testid='stButtonGroup']")
    groups.first.wait_for()
    for i in range(groups.count()):
        options = groups.nth(i).locator("button[aria-checked]")
        options.nth(min(1, options.count() - 1)).click()
        wait_idle(page)
    return page


def test_two_servers_share_one_postgres_database(study_url: str, servers: list[str]) -> None:
    from playwright import sync_api as playwright

    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        pages = []
        for base, (username, password) in zip(servers, ANNOTATORS.items(), strict=True):
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            page.set_default_timeout(30_000)
            log_in(page, base, username, password)
            page.get_by_role("button", name="I have read the guidelines: start rating").click()
            wait_idle(page)
            _rating_form(page)
            pages.append(page)
        for page in pages:  # both submits back to back, one on each server
            page.get_by_role("button", name="Submit and next").click()
        for page in pages:
            wait_idle(page)
        engine = db.make_engine(study_url)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with Session(engine) as session:
                if len(session.exec(select(Judgment)).all()) >= 2:
                    break
            time.sleep(0.2)
        browser.close()

    with Session(engine) as session:
        rows = session.exec(
            select(
                User.username, Assignment.pair_id, Assignment.status, Assignment.revisions, Judgment.revision
            )
            .join(Assignment, col(Assignment.id) == col(Judgment.assignment_id))
            .join(User, col(User.id) == col(Assignment.annotator_id))
        ).all()
        n_done = {pair.id: pair.n_done for pair in session.exec(select(Pair))}
        submits = session.exec(select(Event.user_id).where(Event.action == "submit")).all()
    engine.dispose()
    assert sorted(row[0] for row in rows) == sorted(ANNOTATORS), rows
    assert all(
        status == "done" and revisions == 1 and revision == 1 for _, _, status, revisions, revision in rows
    )
    expected: dict[int | None, int] = dict.fromkeys(n_done, 0)
    for _, pair_id, *_ in rows:
        expected[pair_id] += 1
    assert n_done == expected  # the pair counters saw both submits, whichever server made them
    assert len(submits) == 2
