"""Helpers for the app tests: a temporary database with a study, users and queues; a live server.

Used by tests/test_app.py (AppTest), the browser tests (Playwright: test_browser, test_demo,
test_scaleout, test_hostile_render, test_dashboard_pages) and benchmarks/bench_submit.py,
benchmarks/bench_dashboard.py.
"""

import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select
from streamlit.testing.v1 import AppTest

from annotator.app import common, draft_route
from annotator.app.common import engine as app_engine
from annotator.intake import assign, ingest
from annotator.people import accounts, authorization, sessions
from annotator.people.authorization import SYSTEM, Account
from annotator.server import BROWSER_ARGS, IDLE_SELECTOR, background
from annotator.store import db
from annotator.store.models import Assignment, Draft, Judgment, Pair, Score, Study, User, id_of
from annotator.study import StudyConfig
from tests.utils.databases import fresh_db_url

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "annotator" / "app" / "main.py"


def last_line_in_fresh_interpreter(script: str, *args: str, db_url: str, cwd: Path) -> str:
    """The last line `script` prints when run with `args` in a fresh interpreter on the app's database
    `db_url` (nothing another test imported counts); a failing script fails the test with its error."""
    env = os.environ | {db.ENV_VAR: db_url, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=240, env=env, cwd=cwd
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]


PASSWORD = "app-test-password"
STUDY = "study1"
#: Every user a test database holds: name -> (role, active).
USERS: dict[str, tuple[str, bool]] = {
    "ann1": ("annotator", True),
    "ann2": ("annotator", True),
    "adj1": ("adjudicator", True),
    "res1": ("researcher", True),
    "gone1": ("annotator", False),
}
CHROMIUM_ARGS = list(BROWSER_ARGS)
VIEWPORT = {"width": 1440, "height": 900}  # the window browser tests and benchmarks look at
PHONE = {"width": 390, "height": 844}  # a phone's window, for the checks at 390 px
IDLE = IDLE_SELECTOR
BUSY = "[data-testid=stApp]:not([data-test-script-state='notRunning'])"  # a run requested or running
PENDING_HANDLED = "() => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)))"
running_app = background  # run the app on a database and a free port (annotator.server)


@functools.cache
def password_hash() -> str:
    """One scrypt hash of PASSWORD, computed once (scrypt is slow on purpose)."""
    return accounts.hash_password(PASSWORD)


def pair_record(i: int, **overrides: Any) -> dict[str, Any]:
    """One native pair record whose texts never contain the words the browser must not see."""
    record: dict[str, Any] = {
        "id": f"EXT-{i:05d}-zq",
        "question": f"Question {i}: how do I plan a week of dinners for two?",
        "profile": [
            {
                "id": f"p{i}-{k}",
                "category": "cooking",
                "text": f"Past post {k}: I like quick vegetarian food.",
            }
            for k in range(3)
        ],
        "rubric_aspects": [
            {"aspect": "Quick recipes", "reason": "The user has little time", "evidence": "post 0"},
            {"aspect": "Vegetarian", "reason": "The user eats no meat", "evidence": "post 1"},
        ],
        "narrative": "I cook for two people after work and want simple plans.",
        "category": "cooking",
        "chosen": f"Plan {i} alpha: five quick vegetarian dinners for two, each under 30 minutes.",
        "rejected": f"Plan {i} omega: a family roast menu with long cooking times.",
    }
    record.update(overrides)
    return record


def long_text(words: int, paragraphs: int, sentence: str = "") -> str:
    """A text of about `words` words in `paragraphs` paragraphs (blank lines between them), each
    paragraph numbered ("Paragraph 2. ...") so that a test can find it."""
    sentence = sentence or "Cook a batch of lentils on Sunday and keep them for three quick dinners."
    per = max(1, words // paragraphs // len(sentence.split()))
    return "\n\n".join(f"Paragraph {k + 1}. " + " ".join([sentence] * per) for k in range(paragraphs))


@dataclass
class AppDB:
    """A migrated test database: one study, the USERS, and the queues given to `build_app_db`."""

    url: str
    engine: Engine
    study_id: int
    users: dict[str, int] = field(default_factory=dict)

    def account(self, username: str) -> Account:
        """The logged-in account of `username`, as the login page would keep it."""
        role, _ = USERS[username]
        return Account(id=self.users[username], username=username, role=role)

    def session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    def queue(self, username: str) -> list[Assignment]:
        """`username`'s assignments in queue order."""
        with self.session() as session:
            query = (
                select(Assignment)
                .where(Assignment.annotator_id == self.users[username])
                .order_by(Assignment.position)
            )
            return list(session.exec(query))

    def assignment(self, assignment_id: int) -> Assignment:
        with self.session() as session:
            found = session.get(Assignment, assignment_id)
            assert found is not None
            return found

    def pair(self, pair_id: int) -> Pair:
        with self.session() as session:
            found = session.get(Pair, pair_id)
            assert found is not None
            return found

    def on_screen(self, username: str) -> int:
        """The id of the item `username` was shown last (the page itself names no id)."""
        with self.session() as session:
            found = session.exec(
                select(Assignment.id)
                .where(Assignment.annotator_id == self.users[username], col(Assignment.shown_at).is_not(None))
                .order_by(col(Assignment.shown_at).desc())
                .limit(1)
            ).first()
            assert found is not None
            return int(found)

    def judgments(self, assignment_id: int) -> list[Judgment]:
        """Every judgment of an assignment, oldest revision first."""
        with self.session() as session:
            query = (
                select(Judgment).where(Judgment.assignment_id == assignment_id).order_by(Judgment.revision)
            )
            return list(session.exec(query))

    def scores(self, judgment_id: int) -> dict[tuple[str, str], float]:
        """{(response, item): value} of one judgment."""
        with self.session() as session:
            rows = session.exec(select(Score).where(Score.judgment_id == judgment_id))
            return {(s.response, s.item): s.value for s in rows}

    def user(self, username: str) -> User:
        with self.session() as session:
            found = session.get(User, self.users[username])
            assert found is not None
            return found


def build_app_db(
    folder: Path,
    *,
    records: Sequence[dict[str, Any]] | None = None,
    n_pairs: int = 3,
    queues: dict[str, str] | None = None,
    acknowledged: Sequence[str] = (),
) -> AppDB:
    """A fresh database (see conftest.fresh_db_url) with one study, the USERS, and their queues.

    `queues` maps an annotator to the sides of `chosen` for the pairs in import order ("AB" gives
    pair 0 with chosen on A at position 1 and pair 1 with chosen on B at position 2; "-B" skips
    pair 0); by default ann1 and ann2 get every pair, alternating sides. A queue's annotator not among
    the USERS is added as an active annotator. `acknowledged` users have read the guidelines.
    """
    folder.mkdir(parents=True, exist_ok=True)
    url = fresh_db_url(folder, "app", migrated=True, keep=True)  # SQLite file, or PostgreSQL database
    engine = db.make_engine(url)
    db.upgrade(engine)
    records = list(records) if records is not None else [pair_record(i) for i in range(n_pairs)]
    path = folder / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    ingest.import_file(engine, path, study=STUDY, account=SYSTEM)
    sides = "AB" * len(records)
    queues = (
        queues if queues is not None else {"ann1": sides[: len(records)], "ann2": sides[1 : len(records) + 1]}
    )
    with db.session_scope(engine) as session:
        study_id = int(session.exec(select(Pair.study_id)).first() or 0)
        pair_ids = list(session.exec(select(Pair.id).order_by(Pair.id)))
        users: dict[str, int] = {}
        extra = {name: ("annotator", True) for name in queues if name not in USERS}
        for name, (role, active) in (USERS | extra).items():
            user = User(username=name, role=role, password_hash=password_hash(), active=active)
            if name in acknowledged:
                user.guidelines_ack_at = user.created_at
            session.add(user)
            session.flush()
            users[name] = id_of(user)
        rows = [
            {
                "study_id": study_id,
                "pair_id": pair_id,
                "annotator_id": users[name],
                "chosen_side": side,
                "position": position,
            }
            for name, queue in queues.items()
            for position, (pair_id, side) in enumerate(
                ((pair_id, side) for pair_id, side in zip(pair_ids, queue, strict=False) if side in "AB"),
                start=1,
            )
        ]
        if rows:
            session.execute(insert(Assignment), rows)
    return AppDB(url=url, engine=engine, study_id=study_id, users=users)


# ------------------------------------------------------------------------------------------ browser


def wait_idle(page: Any, *, timeout_ms: float | None = None) -> None:
    """Wait until the app has finished the run the last action started (a Playwright page; the
    timeout is the page's default unless given). The browser first handles what is pending (the
    last action's events and the page's state change: the page marks a run as requested when it
    sends the request, before the server answers), then the run's start is awaited for up to 300 ms
    (an action may start none, or one so short that it is over already), then the idle state. On a
    loaded machine the browser can take longer than the 300 ms to handle a click."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.evaluate(PENDING_HANDLED)
    except PlaywrightError:  # the page navigated meanwhile: its new document is awaited below
        pass
    try:
        page.wait_for_selector(BUSY, state="attached", timeout=300)
    except PlaywrightTimeout:
        pass
    page.wait_for_selector(IDLE, state="attached", timeout=timeout_ms)


def open_expander(page: Any, label: str, shows: Any) -> None:
    """Open the expander whose summary says `label`, and wait until `shows` (a locator of what it holds)
    is visible and the app is idle. Streamlit marks a run as running only when the server has started
    it, which on a loaded machine can be later than wait_idle's grace; waiting for the contents the run
    draws (or the opening reveals) makes the next action wait for that run. A click that lands while
    the page redraws the expander can be lost: when the contents do not show, the expander is clicked
    again if it is still closed."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    summary = page.locator("[data-testid='stExpander'] summary", has_text=label).first
    summary.click()
    try:
        shows.first.wait_for(timeout=5_000)
    except PlaywrightTimeout:
        if summary.locator("xpath=..").get_attribute("open") is None:
            summary.click()
        shows.first.wait_for()
    wait_idle(page)


#: True once the page's lazily loaded elements are drawn: no loading skeleton, every image (the
#: report's figures) decoded, every ECharts chart with its SVG or canvas and every data grid its canvas.
DRAWN = """() => !document.querySelector('[data-testid="stSkeleton"]')
  && [...document.querySelectorAll('[data-testid="stImage"] img')].every(i => i.complete && i.naturalWidth)
  && [...document.querySelectorAll('[data-testid=stEChartsChart]')].every(c => c.querySelector('svg, canvas'))
  && [...document.querySelectorAll('[data-testid="stDataFrame"]')].every(d => d.querySelector('canvas'))"""

#: True once every figure of an HTML report (an SVG image) is decoded.
FIGURES_DRAWN = "() => [...document.querySelectorAll('figure img')].every(i => i.complete && i.naturalWidth)"


def wait_drawn(page: Any, *, timeout_ms: float | None = None) -> None:
    """Wait until the app is idle and the charts and grids of its page are drawn (they load after the run)."""
    wait_idle(page, timeout_ms=timeout_ms)
    page.wait_for_function(DRAWN, timeout=timeout_ms)


def log_in(
    page: Any, base_url: str, username: str, password: str, *, timeout_ms: float | None = None
) -> None:
    """Open the app at `base_url`, log in with `username`/`password` and wait until the app is idle."""
    page.goto(base_url)
    wait_idle(page, timeout_ms=timeout_ms)
    page.get_by_role("textbox", name="Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    wait_idle(page, timeout_ms=timeout_ms)


def wait_for_session_cookie(page: Any, *, present: bool = True, timeout_s: float = 30) -> None:
    """Wait until the browser holds the session cookie (after a login: the page asks the server for
    it with a request of its own, so a new page load of the same browser is logged in), or with
    `present=False` until the server has removed it (after a logout)."""
    from annotator.app.cookie import COOKIE

    deadline = time.monotonic() + timeout_s
    while any(c["name"] == COOKIE for c in page.context.cookies()) != present:
        assert time.monotonic() < deadline, f"the session cookie is {'not ' if present else ''}there"
        page.wait_for_timeout(50)


def add_study(app_db: AppDB, folder: Path, name: str, username: str, n_pairs: int = 2) -> list[int]:
    """A second study called `name` whose pairs are all queued for `username`; returns the assignment ids."""
    folder.mkdir(parents=True, exist_ok=True)
    records = [
        pair_record(100 + i, question=f"Other study question {i}: which bike should I buy?")
        for i in range(n_pairs)
    ]
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    ingest.import_file(app_db.engine, path, study=name, account=SYSTEM)
    with db.session_scope(app_db.engine) as session:
        study_id = int(session.exec(select(Study.id).where(Study.name == name)).one() or 0)
        pair_ids = list(session.exec(select(Pair.id).where(Pair.study_id == study_id).order_by(Pair.id)))
        rows = [
            Assignment(
                study_id=study_id,
                pair_id=pair_id,
                annotator_id=app_db.users[username],
                chosen_side="AB"[k % 2],
                position=k + 1,
            )
            for k, pair_id in enumerate(pair_ids)
        ]
        session.add_all(rows)
        session.flush()
        return [id_of(r) for r in rows]


def count_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one per run of the app's entry file (the router calls
    common.sync_cookie once per run)."""
    runs: list[int] = []
    original = common.sync_cookie

    def counted() -> None:
        runs.append(1)
        original()

    monkeypatch.setattr(common, "sync_cookie", counted)
    return runs


def app_for(account: Account | None, *, timeout: float = 120) -> AppTest:
    """The app from its entry file (AppTest), logged in as `account` (None: logged out), after one run."""
    at = AppTest.from_file(str(MAIN), default_timeout=timeout)
    if account is not None:
        at.session_state["account"] = account
        at.session_state["login_at"] = datetime.now(UTC)
    return at.run()


def app_with_session(account: Account, *, timeout: float = 120) -> tuple[AppTest, str]:
    """The app logged in as `account` with a session token (as a password login leaves it), after one
    run; returns the app and the token (the browser's session cookie)."""
    with db.session_scope(app_engine()) as session:  # the app's own database ($ANNOTATOR_DB_URL)
        token = sessions.start_session(session, account=account)
    at = AppTest.from_file(str(MAIN), default_timeout=timeout)
    at.session_state["account"] = account
    at.session_state["login_at"] = datetime.now(UTC)
    at.session_state["session_token"] = token
    return at.run(), token


def post_draft(at: AppTest, token: str, answers: dict[str, int], comment: str = "") -> int:
    """What the page script sends after an answer: the form's state ({question's widget key suffix:
    value}, the comment) for the item on screen, to the draft route; returns the HTTP status."""
    tag = at.session_state["annotate_item"].token
    item = draft_route.on_screen(tag)
    assert item is not None, "the rating page registers the item it draws"
    chosen = {f"q_{name}": item.questions[f"q_{name}"][1].index(value) for name, value in answers.items()}
    return draft_route.keep({"item": tag, "answers": chosen, "comment": comment}, token)


def shown_tables(at: AppTest) -> list[Any]:
    """Every table a page shows (static tables and grids alike), as DataFrames under their labels."""
    return [element.value for element in [*at.table, *at.dataframe]]


def open_item_actions(at: AppTest) -> None:
    """Open the rating page's "Skip this item or report it as broken" expander (its content is drawn
    only while it is open), as a click on it would."""
    at.session_state["item_actions"] = True
    at.run()


def annotators_page(page: Any, base_url: str, name: str) -> None:
    """The researcher's Annotators page in the browser, as res1, with account `name` chosen."""
    log_in(page, base_url, "res1", PASSWORD)
    page.get_by_role("heading", name="Progress").wait_for()
    wait_for_session_cookie(page)  # the new page load logs in by the cookie
    page.goto(f"{base_url}/annotators")
    wait_idle(page)
    page.get_by_role("heading", name="Annotators").wait_for()
    page.get_by_role("combobox", name="Account").click()
    page.get_by_role("option", name=name).click()
    wait_idle(page)


# ------------------------------------------------------------------------------------------ rating page

#: Answers on the rating page by key press: widget key suffix -> the digit pressed on it.
KEY_ANSWERS: dict[str, str] = {
    "A_correctness": "5",
    "A_relevance": "4",
    "A_helpfulness": "4",
    "A_rubric0": "2",
    "A_rubric1": "1",
    "B_correctness": "2",
    "B_relevance": "3",
    "B_helpfulness": "1",
    "B_rubric0": "0",
    "B_rubric1": "1",
    "preference": "2",
    "confidence": "3",
}


#: The rating form's widget-key prefix (annotate.FORM_PREFIX): the keys are the same on every item.
FORM = "q"


def item_tag(page: Any) -> str:
    """The item on the rating page (a random token per display), as its page script marks it."""
    return str(page.locator("body[data-ps-item]").get_attribute("data-ps-item"))


def wait_next_item(page: Any, old: str) -> str:
    """Wait until the rating page shows another item than `old` and is idle; returns its tag."""
    page.wait_for_function("(old) => document.body.dataset.psItem !== old", arg=old)
    wait_idle(page)
    return item_tag(page)


def wait_for_draft(app_db: AppDB, username: str, answers: dict[str, int], timeout_s: float = 30) -> None:
    """Wait until the server keeps a draft of `username` holding `answers` (the page sends it itself)."""
    deadline = time.monotonic() + timeout_s
    while True:
        with app_db.session() as session:
            kept = session.exec(select(Draft.answers).where(Draft.user_id == app_db.users[username])).all()
        if any(all(draft.get(k) == v for k, v in answers.items()) for draft in kept):
            return
        assert time.monotonic() < deadline, f"no draft with {answers}: {kept}"
        time.sleep(0.1)


def press_answer(page: Any, name: str, digit: str) -> None:
    """Focus the first button of one question and press a number key (as an annotator would)."""
    page.locator(f".st-key-{FORM}_{name} [data-testid='stButtonGroup'] button").first.focus()
    page.keyboard.press(digit)


def selected(page: Any, name: str) -> list[str]:
    """The texts of the selected options of one question."""
    return list(
        page.evaluate(
            f"() => [...document.querySelectorAll('.st-key-{FORM}_{name} button[aria-checked=true]')]"
            ".map(b => b.innerText.trim())"
        )
    )


def answer_by_keys(page: Any, answers: dict[str, str] | None = None) -> str:
    """Answer every question of the item on screen with number keys; returns the item's tag."""
    tag = item_tag(page)
    for name, digit in (answers or KEY_ANSWERS).items():
        press_answer(page, name, digit)
        wait_idle(page)
    return tag


@contextmanager
def one_pair_app(
    folder: Path, record: dict[str, Any], *, password: str, config: StudyConfig | None = None
) -> Iterator[str]:
    """The app on a fresh database holding one pair (study "render", with `config` or the default study)
    assigned to annotator "ann1" (guidelines acknowledged, `password`); yields its base URL."""
    url = fresh_db_url(folder, "db", keep=True)
    engine = db.make_engine(url)
    db.upgrade(engine)
    path = folder / "pairs.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    ingest.import_file(engine, path, study="render", config=config, account=SYSTEM)
    with db.session_scope(engine) as session:
        user = accounts.add_user(
            session, username="ann1", role="annotator", password=password, account=SYSTEM
        )
        accounts.acknowledge_guidelines(session, account=authorization.account_of(user))
    with db.session_scope(engine) as session:
        assign.assign(session, study="render", overlap=1, account=SYSTEM)
    engine.dispose()
    with running_app(url, folder / "server.log") as base_url:
        yield base_url


def add_annotator(app_db: AppDB, username: str, studies: Sequence[str]) -> None:
    """A new annotator (password PASSWORD, guidelines read) with every pair of `studies` in their queue,
    study by study in the order given, chosen on A and B in turn."""
    with db.session_scope(app_db.engine) as session:
        user = User(username=username, role="annotator", password_hash=password_hash(), active=True)
        user.guidelines_ack_at = user.created_at
        session.add(user)
        session.flush()
        app_db.users[username] = id_of(user)
        position = 0
        for name in studies:
            study_id = int(session.exec(select(Study.id).where(Study.name == name)).one() or 0)
            for pair_id in session.exec(select(Pair.id).where(Pair.study_id == study_id).order_by(Pair.id)):
                position += 1
                session.add(
                    Assignment(
                        study_id=study_id,
                        pair_id=pair_id,
                        annotator_id=id_of(user),
                        chosen_side="AB"[position % 2],
                        position=position,
                    )
                )
