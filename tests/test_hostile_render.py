"""Hostile texts in a real browser: HTML in a pair, a profile post, the rubric, a comment or a flag
reason is shown as text (never run), and `$...$` is shown as typed (never typeset as LaTeX), on the
annotator's page and on the adjudicator's view. Also: the server's output never holds the password
or the pair's texts."""

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import expect
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from annotator.intake import assign, ingest
from annotator.people import accounts, authorization
from annotator.people.authorization import SYSTEM
from annotator.rating import labels
from annotator.review import adjudicate, adjudication_queue
from annotator.store import db
from annotator.store.models import Assignment, Event, User, id_of
from tests.utils import apphelpers
from tests.utils.apphelpers import open_expander, running_app, wait_idle
from tests.utils.databases import fresh_db_url
from tests.utils.factories import account_for

pytestmark = pytest.mark.browser

PASSWORD = "hostile-test-password-8472"
STUDY = "hostile"
SCRIPT = "<script>window.__xss=1</script>"
IMG = '<img src=x onerror="window.__xss=2">'
LINK = '<a href="javascript:window.__xss=3">click</a>'
DOLLARS = "Costs $5 and $10"
MATH = "Math $x^2$ here"  # what Markdown would typeset (a `$` before a digit never closes math)
TAGGED = "<div>Price $7</div> opens its line"  # an HTML block to Markdown, shown as typed all the same
PAYLOADS = (SCRIPT, IMG, LINK, DOLLARS, MATH, TAGGED)
MD_LINK = "[a Markdown link](javascript:window.__xss=4)"  # rendered as a link, but never to javascript:


def hostile(name: str) -> str:
    """A text of field `name` holding every payload, each on its own line (paragraph)."""
    return f"{name} marker.\n\n" + "\n\n".join((*PAYLOADS, MD_LINK))


RECORD = {
    "id": "hostile-1",
    "question": hostile("Question"),
    "profile": [{"id": "post-1", "category": "x", "text": hostile("Post")}],
    "rubric_aspects": [{"aspect": f"Aspect {MATH} {IMG}", "reason": hostile("Reason"), "evidence": "e"}],
    "narrative": hostile("Narrative"),
    "category": "cooking",
    "chosen": hostile("Chosen"),
    "rejected": hostile("Rejected"),
}
COMMENT = f"Comment {SCRIPT} {IMG} {DOLLARS} {MATH}"
FLAG_REASON = f"Flag {LINK} {DOLLARS}"


@dataclass
class Server:
    url: str
    engine: Engine
    log: Path
    users: dict[str, int]


def _build(folder: Path) -> tuple[str, Engine, dict[str, int]]:
    url = fresh_db_url(folder, "hostile", migrated=True, keep=True)  # SQLite file, or PostgreSQL database
    engine = db.make_engine(url)
    path = folder / "pairs.jsonl"
    path.write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    ingest.import_file(engine, path, study=STUDY, account=SYSTEM)
    users = {}
    with db.session_scope(engine) as session:
        for name, role in (("ann1", "annotator"), ("ann2", "annotator"), ("boss", "researcher")):
            user = accounts.add_user(session, username=name, role=role, password=PASSWORD, account=SYSTEM)
            users[name] = id_of(user)
            if role == "annotator":
                accounts.acknowledge_guidelines(session, account=authorization.account_of(user))
    with db.session_scope(engine) as session:
        assign.assign(session, study=STUDY, overlap=2, account=SYSTEM)
    return url, engine, users


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("hostile")
    url, engine, users = _build(folder)
    log = folder / "server.log"
    try:
        with running_app(url, log) as base_url:
            yield Server(base_url, engine, log, users)
    finally:
        engine.dispose()


def log_in(chrome: object, server: Server, username: str) -> object:
    page = chrome.new_page(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    apphelpers.log_in(page, server.url, username, PASSWORD)
    page.get_by_text(f"Signed in as {username}").wait_for(timeout=30_000)
    wait_idle(page)
    return page


def assert_inert(page: object, texts: list[str]) -> None:
    """No payload ran or became an element; every literal text is on the page as typed."""
    assert page.evaluate("typeof window.__xss") == "undefined"  # type: ignore[attr-defined]
    assert page.evaluate("document.querySelectorAll('[onerror]').length") == 0  # type: ignore[attr-defined]
    assert page.evaluate("document.querySelectorAll('img[src=\"x\"]').length") == 0  # type: ignore[attr-defined]
    assert page.evaluate("document.querySelectorAll('a[href^=\"javascript:\"]').length") == 0  # type: ignore[attr-defined]
    scripts = page.evaluate(  # type: ignore[attr-defined]
        "[...document.scripts].filter(s => s.textContent.includes('__xss')).length"
    )
    assert scripts == 0
    assert page.evaluate("document.querySelectorAll('.katex').length") == 0  # type: ignore[attr-defined]
    body = page.inner_text("body")  # type: ignore[attr-defined]
    for text in texts:
        assert text in body, f"not shown as typed: {text!r}"


def test_the_annotator_page_shows_hostile_texts_as_text(chrome: object, server: Server) -> None:
    page = log_in(chrome, server, "ann1")
    page.get_by_text("Question marker.").wait_for()  # type: ignore[attr-defined]
    open_expander(page, "The user's past posts", page.get_by_text("Post 1"))  # type: ignore[attr-defined]
    open_expander(page, "Post 1", page.get_by_text("Post marker."))  # type: ignore[attr-defined]
    markers = ["Question marker.", "Narrative marker.", "Post marker.", "Reason marker.", "Chosen marker."]
    assert_inert(page, [*PAYLOADS, *markers, "Rejected marker.", f"Aspect {MATH}"])

    groups = page.locator("[data-testid='stButtonGroup']").all()  # type: ignore[attr-defined]
    assert len(groups) == 10  # 3 dimensions and 1 rubric aspect per response, preference, confidence
    for group in groups:
        group.locator("button[aria-checked]").first.click()
        wait_idle(page)
    page.get_by_label("Comment (optional)").fill(COMMENT)  # type: ignore[attr-defined]
    page.get_by_label("Comment (optional)").blur()  # type: ignore[attr-defined]
    wait_idle(page)
    page.get_by_role("button", name="Submit and next").click()  # type: ignore[attr-defined]
    page.get_by_text("All done").wait_for(timeout=30_000)  # type: ignore[attr-defined]
    assert_inert(page, [])
    with Session(server.engine) as session:
        done = session.exec(select(Assignment).where(Assignment.annotator_id == server.users["ann1"])).one()
        judgment = labels.current_answers(
            session, assignment_id=id_of(done), account=account_for(session, server.users["ann1"])
        )
    assert judgment is not None
    assert judgment.comment == COMMENT
    page.close()  # type: ignore[attr-defined]


def test_the_adjudication_view_shows_hostile_texts_as_text(chrome: object, server: Server) -> None:
    for name in ("ann1", "ann2"):  # flagged judgments (ann1's only if the test above did not save it)
        with db.session_scope(server.engine) as session:
            mine = session.exec(select(Assignment).where(Assignment.annotator_id == server.users[name])).one()
            if mine.status == "done":
                continue
            annotator = account_for(session, server.users[name])
            labels.show(session, assignment_id=id_of(mine), account=annotator)
            scores = {"correctness": 3, "relevance": 3, "helpfulness": 3, "rubric:0": 1}
            labels.submit(
                session,
                assignment_id=id_of(mine),
                account=annotator,
                submission=labels.Submission(
                    submission_id=f"{name}-hostile",
                    preference=4,
                    scores={"A": dict(scores), "B": dict(scores)},
                    confidence=1,
                    comment=COMMENT,
                    flag=True,
                    flag_reason=FLAG_REASON,
                ),
            )
    with db.session_scope(server.engine) as session:
        adjudicate.auto_resolve(session, study=STUDY, account=SYSTEM)
        assert len(adjudication_queue.queue(session, study=STUDY, account=SYSTEM)) == 1
    page = log_in(chrome, server, "boss")
    page.get_by_role("link", name="Adjudicate").click()  # type: ignore[attr-defined]
    page.get_by_text("Chosen marker.").wait_for(timeout=30_000)  # type: ignore[attr-defined]
    wait_idle(page)
    assert_inert(page, [*PAYLOADS, "Question marker.", "Chosen marker.", "Rejected marker."])

    # A browser download is an export like any other: it is in the audit log.
    page.get_by_role("link", name="Downloads").click()  # type: ignore[attr-defined]
    page.get_by_text("Validated pairs only (kept by adjudication)").click()  # type: ignore[attr-defined]
    button = page.get_by_role("button", name=re.compile(r"^Labels \(")).first  # type: ignore[attr-defined]
    expect(button).to_be_enabled()  # every pair's labels (a file of 0 rows is not offered): the run drew it
    wait_idle(page)  # and ended: a click during the run could fetch a file the run's end discards
    with page.expect_download() as download:  # type: ignore[attr-defined]
        button.click()
    assert download.value.suggested_filename == f"{STUDY}-labels.csv"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with Session(server.engine) as session:
            logged = session.exec(select(Event).where(Event.action == "export")).all()
        if logged:
            break
        time.sleep(0.2)
    assert [(e.user_id, e.detail["kind"], e.detail["target"]) for e in logged] == [
        (server.users["boss"], "labels", "browser download")
    ]
    page.close()  # type: ignore[attr-defined]


def test_the_server_output_has_no_password_or_pair_text(chrome: object, server: Server) -> None:
    """A login of its own (the password crosses the server) and the pair's texts on the page, then the
    server's output holds neither (whatever the other tests did before)."""
    with db.session_scope(server.engine) as session:
        if session.exec(select(User).where(User.username == "ann3")).first() is None:
            user = accounts.add_user(
                session, username="ann3", role="annotator", password=PASSWORD, account=SYSTEM
            )
            accounts.acknowledge_guidelines(session, account=authorization.account_of(user))
    with db.session_scope(server.engine) as session:
        assign.assign(session, study=STUDY, overlap=3, account=SYSTEM)
    page = log_in(chrome, server, "ann3")
    page.get_by_text("Question marker.").wait_for(timeout=30_000)  # type: ignore[attr-defined]
    page.close()  # type: ignore[attr-defined]
    output = server.log.read_text(errors="replace")
    assert output.strip(), "the server wrote nothing: the check would be empty"
    for secret in (PASSWORD, "Chosen marker", "Rejected marker", "Question marker", "Comment ", "Flag "):
        assert secret not in output
