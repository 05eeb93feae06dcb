"""Answers kept as a server-side draft without a page run.

The rating form is one ``st.form``: an answer changes nothing on the server until the submit, so it
costs the server no Streamlit run. The page script (static/annotate.js) instead posts the form's
state to :data:`ROUTE`, an HTTP route of this process (annotator/app/serve.py), once the answers
pause (a burst of keys makes one draft) and a moment after the comment's typing stops; leaving the
page sends a waiting draft at once. The route keeps it with ``drafts.save_draft``.

The page knows the item on screen only by its random tag (labels.ItemView.token): the rating page
registers each item it draws (:func:`show`) with its assignment, the login's session token (by its
hash) and its questions, and the route accepts a draft only for a registered tag, from a browser
whose session cookie holds that login's token, for a session still open (checked in the database:
a login ended elsewhere or a deactivated account gets 401, and the page reloads to the login). A
submit, skip or flag first closes the item (:func:`close`): a draft still on its way is refused,
never written after the item is saved. As with the cookie route's tickets, the registry lives in
this process's memory, the process the browser's websocket is on.
"""

import hashlib
import hmac
import json
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from annotator.app.common import session
from annotator.app.cookie import COOKIE
from annotator.errors import AuthError, UserError
from annotator.people import sessions
from annotator.rating import drafts

ROUTE = "/_pair/draft"
DRAFT_HEADER = "X-Pair-Studio-Draft"  # a custom header: a cross-site form cannot send it
MAX_BODY = 64 * 1024  # bytes: the answers and a comment (drafts.MAX_TEXT characters)
KEPT_SECONDS = 12 * 3600  # an item on screen is forgotten after the app's SESSION_HOURS
MAX_ITEMS = 20_000  # items on screen kept at once (the oldest go first)
DRAFTS_PER_WINDOW, WINDOW_SECONDS = 120, 10.0  # drafts per login in a window (a key press posts one)
MAX_PER_LOGIN = 50  # items on screen kept per login (its oldest go first: one login never evicts another's)

_LOG = logging.getLogger(__name__)


@dataclass
class OnScreen:
    """One item as drawn: its assignment, the login that sees it and its questions as the page names
    them ({widget key: (draft key, the values of its options in page order)})."""

    assignment_id: int
    token_hash: str
    questions: dict[str, tuple[str, tuple[int, ...]]]
    expires: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False


_items: dict[str, OnScreen] = {}
_lock = threading.Lock()
_recent: dict[str, deque[float]] = {}  # per login: when its latest drafts came


def _within_rate(token_hash: str) -> bool:
    """Count one draft for the login; False when it has posted DRAFTS_PER_WINDOW in WINDOW_SECONDS."""
    now = time.monotonic()
    with _lock:
        for gone in [k for k, times in _recent.items() if times[-1] <= now - WINDOW_SECONDS]:
            del _recent[gone]
        times = _recent.setdefault(token_hash, deque())
        while times and times[0] <= now - WINDOW_SECONDS:
            times.popleft()
        if len(times) >= DRAFTS_PER_WINDOW:
            return False
        times.append(now)
        return True


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def show(
    tag: str,
    *,
    assignment_id: int,
    session_token: str,
    questions: dict[str, tuple[str, tuple[int, ...]]],
) -> None:
    """Register the item drawn under `tag` (again on every run of the page: the same entry)."""
    now = time.monotonic()
    with _lock:
        found = _items.get(tag)
        if found is not None and found.assignment_id == assignment_id:
            found.expires = now + KEPT_SECONDS
            return
        token_hash = _hash(session_token)
        mine = [k for k, v in _items.items() if v.token_hash == token_hash]
        for old in mine[: max(0, len(mine) - MAX_PER_LOGIN + 1)]:
            del _items[old]
        if len(_items) >= MAX_ITEMS:
            for old in [k for k, v in _items.items() if v.expires <= now] or list(_items)[:1]:
                del _items[old]
        _items[tag] = OnScreen(assignment_id, token_hash, questions, now + KEPT_SECONDS)


def on_screen(tag: str) -> OnScreen | None:
    """The registered item drawn under `tag`, if any."""
    with _lock:
        return _items.get(tag)


def close(tag: str) -> None:
    """The item leaves the screen (submitted, skipped or flagged): no draft is kept for it after this
    returns, from this tab or any other tab showing the same assignment (a draft being written now
    finishes first). Opening it again for revision draws it under a new tag."""
    with _lock:
        found = _items.get(tag)
        gone = (
            [] if found is None else [k for k, v in _items.items() if v.assignment_id == found.assignment_id]
        )
        closed = [_items.pop(k) for k in gone]
    for item in closed:
        with item.lock:
            item.closed = True


def answers(item: OnScreen, payload: dict[str, Any]) -> dict[str, Any]:
    """The draft answers of a posted form state: {widget key: index of the selected option} and the
    comment, turned into the draft's keys and values; whatever does not fit a question is left out."""
    kept: dict[str, Any] = {}
    selected = payload.get("answers")
    for widget, index in selected.items() if isinstance(selected, dict) else ():
        question = item.questions.get(widget)
        if question is None or isinstance(index, bool) or not isinstance(index, int):
            continue
        name, options = question
        if 0 <= index < len(options):
            kept[name] = options[index]
    comment = payload.get("comment")
    if isinstance(comment, str) and comment:
        kept[drafts.COMMENT] = comment
    return kept


def keep(payload: Any, token: str) -> int:
    """Keep a posted form state as the item's draft; the HTTP status to answer with."""
    if not isinstance(payload, dict) or not isinstance(payload.get("item"), str):
        return 400
    item = on_screen(payload["item"])
    if item is None or item.expires <= time.monotonic():
        return 409  # not on screen (any more): the page's next run draws what is
    if not token or not hmac.compare_digest(item.token_hash, _hash(token)):
        return 403
    if not _within_rate(item.token_hash):
        return 429  # the page keeps the answers and sends the next draft later
    kept = answers(item, payload)
    with item.lock:
        if item.closed:
            return 409
        try:
            with session() as active:
                account = sessions.resume_session(active, token)
                drafts.save_draft(active, assignment_id=item.assignment_id, account=account, answers=kept)
        except AuthError:
            return 401
        except UserError:
            return 409
        except (SQLAlchemyError, OSError) as exc:  # a broken database: one line in the log, no draft
            _LOG.warning("draft not kept: %s", type(exc).__name__)
            return 503
    return 204


async def capped_body(request: Request, limit: int) -> bytes | None:
    """The request's body, or None once it is over `limit` bytes: a declared Content-Length over the
    limit is refused before anything is read, and a chunked body stops being read at the limit."""
    declared = request.headers.get("content-length", "")
    if not declared.isdigit() and declared:
        return None
    if declared and int(declared) > limit:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


async def draft_route(request: Request) -> Response:
    """POST the form's state (JSON: item tag, answers, comment) with the draft header."""
    headers = {"Cache-Control": "no-store"}
    if request.headers.get(DRAFT_HEADER) != "1":
        return Response(status_code=403, headers=headers)
    body = await capped_body(request, MAX_BODY)
    if body is None:
        return Response(status_code=413, headers=headers)
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return Response(status_code=400, headers=headers)
    status = await run_in_threadpool(keep, payload, request.cookies.get(COOKIE, ""))
    return Response(status_code=status, headers=headers)
