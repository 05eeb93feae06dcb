"""The draft route: the rating form's answers kept without a page run, only for the item on screen,
from the login that sees it, while its session is open, and never after the item is submitted."""

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.requests import Request

from annotator.app import draft_route
from annotator.app.cookie import COOKIE
from annotator.people import accounts, sessions
from annotator.people.authorization import SYSTEM
from annotator.rating import drafts
from annotator.store import db
from tests.utils.apphelpers import AppDB, build_app_db

QUESTIONS = {
    "q_A_correctness": ("A:correctness", (1, 2, 3, 4, 5)),
    "q_preference": ("preference", (0, 1, 2, 3, 4)),
}


@pytest.fixture
def on_screen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[AppDB, int, str, str]]:
    """ann1's first item registered under a tag, as the rating page draws it: (db, assignment, tag, token)."""
    built = build_app_db(tmp_path / "db", acknowledged=["ann1", "ann2"])
    monkeypatch.setenv(db.ENV_VAR, built.url)
    with db.session_scope(built.engine) as session:
        token = sessions.start_session(session, account=built.account("ann1"))
    assignment_id = int(built.queue("ann1")[0].id or 0)
    tag = f"i{tmp_path.name[-12:]}"
    draft_route.show(tag, assignment_id=assignment_id, session_token=token, questions=QUESTIONS)
    yield built, assignment_id, tag, token
    draft_route.close(tag)
    built.engine.dispose()


def draft(built: AppDB, assignment_id: int) -> dict | None:  # type: ignore[type-arg]
    with db.session_scope(built.engine) as session:
        found = drafts.load_draft(session, assignment_id=assignment_id, account=built.account("ann1"))
    return None if found is None else found.answers


def post_chunks(chunks: list[bytes], headers: dict[str, str]) -> tuple[int, int]:
    """The route's answer to one HTTP request whose body arrives in `chunks` (a Starlette request built
    from its ASGI scope), and how many chunks the route read."""
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    scope = {"type": "http", "method": "POST", "path": draft_route.ROUTE, "headers": raw, "query_string": b""}
    read = 0

    async def receive() -> dict:  # type: ignore[type-arg]
        nonlocal read
        if read >= len(chunks):
            return {"type": "http.disconnect"}
        read += 1
        return {"type": "http.request", "body": chunks[read - 1], "more_body": read < len(chunks)}

    status = asyncio.run(draft_route.draft_route(Request(scope, receive))).status_code
    return status, read


def post(body: bytes, headers: dict[str, str]) -> int:
    """The route's answer to one HTTP request with its whole body in one piece."""
    return post_chunks([body], headers)[0]


def test_the_route_keeps_the_answers_of_the_item_on_screen(on_screen: tuple[AppDB, int, str, str]) -> None:
    built, assignment_id, tag, token = on_screen
    body = json.dumps({"item": tag, "answers": {"q_A_correctness": 3, "q_preference": 0}, "comment": "ok"})
    headers = {draft_route.DRAFT_HEADER: "1", "cookie": f"{COOKIE}={token}"}
    assert post(body.encode(), headers) == 204
    assert draft(built, assignment_id) == {"A:correctness": 4, "preference": 0, "comment": "ok"}


def test_a_request_without_the_header_or_with_a_bad_body_is_refused(
    on_screen: tuple[AppDB, int, str, str],
) -> None:
    built, assignment_id, tag, token = on_screen
    cookie = {"cookie": f"{COOKIE}={token}"}
    good = json.dumps({"item": tag, "answers": {"q_preference": 1}}).encode()
    assert post(good, cookie) == 403, "a cross-site form cannot send the custom header"
    assert post(b"{not json", cookie | {draft_route.DRAFT_HEADER: "1"}) == 400
    assert post(b"[1, 2]", cookie | {draft_route.DRAFT_HEADER: "1"}) == 400
    big = json.dumps({"item": tag, "comment": "x" * draft_route.MAX_BODY}).encode()
    assert post(big, cookie | {draft_route.DRAFT_HEADER: "1"}) == 413
    assert draft(built, assignment_id) is None


def test_only_the_login_that_sees_the_item_keeps_its_draft(on_screen: tuple[AppDB, int, str, str]) -> None:
    built, assignment_id, tag, _ = on_screen
    with db.session_scope(built.engine) as session:
        other = sessions.start_session(session, account=built.account("ann2"))
    assert draft_route.keep({"item": tag, "answers": {"q_preference": 1}}, other) == 403
    assert draft_route.keep({"item": tag, "answers": {"q_preference": 1}}, "") == 403
    assert draft_route.keep({"item": "i-not-on-screen", "answers": {}}, other) == 409
    assert draft(built, assignment_id) is None


def test_an_ended_session_or_a_deactivated_account_gets_401(on_screen: tuple[AppDB, int, str, str]) -> None:
    built, assignment_id, tag, token = on_screen
    with db.session_scope(built.engine) as session:
        accounts.set_active(session, username="ann1", active=False, account=SYSTEM)
    assert draft_route.keep({"item": tag, "answers": {"q_preference": 1}}, token) == 401
    with db.session_scope(built.engine) as session:
        accounts.set_active(session, username="ann1", active=True, account=SYSTEM)
        sessions.end_session(session, token)
    assert draft_route.keep({"item": tag, "answers": {"q_preference": 1}}, token) == 401
    assert draft(built, assignment_id) is None


def test_what_fits_no_question_is_left_out(on_screen: tuple[AppDB, int, str, str]) -> None:
    built, assignment_id, tag, token = on_screen
    chosen = {"q_A_correctness": 9, "q_preference": True, "q_other": 1, "q_B_x": "2"}
    assert draft_route.keep({"item": tag, "answers": chosen, "comment": 5}, token) == 204
    assert draft(built, assignment_id) == {}


def test_no_draft_is_kept_once_the_item_is_closed_even_by_posts_in_flight(
    on_screen: tuple[AppDB, int, str, str],
) -> None:
    """Posts racing a submit: close() waits for a draft being written; after it, every post is refused,
    so the submit's clear leaves no draft behind (on both engines)."""
    built, assignment_id, tag, token = on_screen
    statuses: list[int] = []
    start = threading.Barrier(9)

    def send(k: int) -> None:
        start.wait()
        for _ in range(20):
            statuses.append(draft_route.keep({"item": tag, "answers": {"q_preference": k % 5}}, token))

    threads = [threading.Thread(target=send, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    start.wait()
    draft_route.close(tag)
    with db.session_scope(built.engine) as session:
        drafts.clear_draft(session, assignment_id=assignment_id, account=built.account("ann1"))
    for thread in threads:
        thread.join()
    assert set(statuses) <= {204, 409} and 409 in statuses
    assert draft(built, assignment_id) is None
    assert draft_route.keep({"item": tag, "answers": {"q_preference": 1}}, token) == 409


def test_an_oversized_body_is_refused_without_being_read(on_screen: tuple[AppDB, int, str, str]) -> None:
    """A declared Content-Length over the limit is refused unread; a chunked body stops at the limit."""
    _, _, _, token = on_screen
    headers = {draft_route.DRAFT_HEADER: "1", "cookie": f"{COOKIE}={token}"}
    chunk = b"x" * 8192
    many = [chunk] * 25_000  # 200 MB if it were all read
    status, read = post_chunks(many, headers | {"content-length": str(len(chunk) * len(many))})
    assert (status, read) == (413, 0)
    status, read = post_chunks(many, headers)
    assert status == 413 and read == draft_route.MAX_BODY // len(chunk) + 1
    assert post_chunks([b"{}"], headers | {"content-length": "12abc"})[0] == 413


def test_a_deeply_nested_body_is_a_bad_request(on_screen: tuple[AppDB, int, str, str]) -> None:
    _, _, tag, token = on_screen
    headers = {draft_route.DRAFT_HEADER: "1", "cookie": f"{COOKIE}={token}"}
    deep = b"[" * 30_000 + b"]" * 30_000
    assert len(deep) <= draft_route.MAX_BODY
    assert post(deep, headers) == 400
    nested = ('{"item": "' + tag + '", "answers": ' + '{"a": ' * 9_000 + "1" + "}" * 9_001).encode()
    assert len(nested) <= draft_route.MAX_BODY
    assert post(nested, headers) == 400


def test_a_submit_in_one_tab_closes_the_item_in_every_tab(on_screen: tuple[AppDB, int, str, str]) -> None:
    """A stale tab cannot put a draft on an item submitted from another tab."""
    built, assignment_id, tag, token = on_screen
    questions = draft_route.on_screen(tag).questions  # type: ignore[union-attr]
    draft_route.show("second-tab", assignment_id=assignment_id, session_token=token, questions=questions)
    draft_route.close("second-tab")  # the submit, from the second tab
    assert draft_route.keep({"item": tag, "answers": {"q_preference": 1}}, token) == 409
    assert draft(built, assignment_id) is None


def test_one_login_reloading_many_times_never_evicts_another_logins_item(
    on_screen: tuple[AppDB, int, str, str],
) -> None:
    """Each login keeps at most MAX_PER_LOGIN items on screen: its own oldest go, nobody else's."""
    built, assignment_id, tag, token = on_screen
    with db.session_scope(built.engine) as session:
        other = sessions.start_session(session, account=built.account("ann2"))
    other_item = int(built.queue("ann2")[0].id or 0)
    for k in range(draft_route.MAX_PER_LOGIN * 3):
        draft_route.show(f"reload{k}", assignment_id=other_item, session_token=other, questions=QUESTIONS)
    assert draft_route.on_screen(tag) is not None
    kept = [k for k in range(draft_route.MAX_PER_LOGIN * 3) if draft_route.on_screen(f"reload{k}")]
    assert kept == list(range(draft_route.MAX_PER_LOGIN * 2, draft_route.MAX_PER_LOGIN * 3))
    assert draft_route.keep({"item": tag, "answers": {"q_preference": 1}}, token) == 204
    for k in kept:
        draft_route.close(f"reload{k}")


def test_a_login_posting_drafts_faster_than_anyone_types_is_slowed(
    on_screen: tuple[AppDB, int, str, str],
) -> None:
    built, assignment_id, tag, token = on_screen
    payload = {"item": tag, "answers": {"q_preference": 1}}
    statuses = [draft_route.keep(payload, token) for _ in range(draft_route.DRAFTS_PER_WINDOW + 5)]
    assert statuses == [204] * draft_route.DRAFTS_PER_WINDOW + [429] * 5
    assert draft(built, assignment_id) == {"preference": 1}
