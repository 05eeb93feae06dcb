"""Scale-out: two Streamlit servers on one PostgreSQL database, two annotators rating at the same time.

This is the deployment the README describes (several `annotator serve` processes behind a proxy with
sticky sessions, one PostgreSQL database): each server keeps only its browsers' session state, and
every judgment goes to the shared database, so both judgments land with the right annotators and the
pair counters stay right when the two submits are interleaved.
"""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, col, select

from annotator import accounts, db, ingest
from annotator.assign import assign
from annotator.models import Assignment, Event, Judgment, Pair, User
from tests.conftest import POSTGRES_ENV, fresh_db_url, postgres_admin_url
from tests.factories import make_records, write_jsonl

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian chromium is not installed"),
    pytest.mark.skipif(
        postgres_admin_url() is None, reason=f"needs PostgreSQL: set ${POSTGRES_ENV} to an admin URL"
    ),
]

ROOT = Path(__file__).resolve().parents[1]
ANNOTATORS = {"ann_one": "first-annotator-pw", "ann_two": "second-annotator-pw"}
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
IDLE = "[data-test-script-state='notRunning']"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(base: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"streamlit exited with {process.returncode}:\n{log.read_text(errors='replace')}"
            )
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"streamlit was not healthy after {timeout} s:\n{log.read_text(errors='replace')}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, 15)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait()


@pytest.fixture
def study_url(tmp_path: Path) -> str:
    """A PostgreSQL database with four pairs, both annotators on every pair."""
    url = fresh_db_url(tmp_path, migrated=True)
    engine = db.make_engine(url)
    ingest.import_file(engine, write_jsonl(tmp_path / "pairs.jsonl", make_records(4)), study="s1")
    with db.session_scope(engine) as session:
        for username, password in ANNOTATORS.items():
            accounts.add_user(session, username=username, role="annotator", password=password)
        assign(session, study="s1", overlap=2, seed=0)
    engine.dispose()
    return url


@pytest.fixture
def servers(study_url: str, tmp_path: Path) -> Iterator[list[str]]:
    """Two app servers on two free ports, both on the one database; their base URLs."""
    env = os.environ | {db.ENV_VAR: study_url, "PYTHONUNBUFFERED": "1"}
    started: list[tuple[subprocess.Popen[bytes], Path, str]] = []
    try:
        for k in range(2):
            port = _free_port()
            log = tmp_path / f"streamlit-{k}.log"
            command = [sys.executable, "-m", "streamlit", "run", "annotator/app/main.py"]
            command += ["--server.port", str(port), "--server.headless", "true"]
            with log.open("wb") as output:
                process = subprocess.Popen(
                    command,
                    cwd=ROOT,
                    env=env,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            started.append((process, log, f"http://127.0.0.1:{port}"))
        for process, log, base in started:
            _wait_healthy(base, process, log)
        yield [base for _, _, base in started]
    finally:
        for process, _, _ in started:
            _stop(process)


def _idle(page: Any) -> None:
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, state="attached")


def _rating_form(page: Any) -> Any:
    form = page.locator("[data-testid='stForm']").filter(has_text="Submit and next")
    groups = form.locator("[role='radiogroup']")
    groups.first.wait_for()
    for i in range(groups.count()):
        options = groups.nth(i).locator("label")
        options.nth(min(1, options.count() - 1)).click()
    return form


def test_two_servers_share_one_postgres_database(study_url: str, servers: list[str]) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        pages = []
        for base, (username, password) in zip(servers, ANNOTATORS.items(), strict=True):
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            page.set_default_timeout(30_000)
            page.goto(base)
            _idle(page)
            page.get_by_role("textbox", name="Username").fill(username)
            page.get_by_role("textbox", name="Password").fill(password)
            page.get_by_role("button", name="Log in").click()
            _idle(page)
            page.get_by_role("button", name="I have read the guidelines: start rating").click()
            _idle(page)
            _rating_form(page)
            pages.append(page)
        for page in pages:  # both submits back to back, one on each server
            page.get_by_role("button", name="Submit and next").click()
        for page in pages:
            _idle(page)
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
