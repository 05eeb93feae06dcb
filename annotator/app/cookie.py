"""The session cookie, set by the server: HttpOnly (no page script can read it), SameSite=Strict, and
Secure when the app is served over HTTPS.

A Streamlit page talks to the server over a websocket, which cannot set a cookie. So after a login
the page receives a one-time *ticket* (random, valid for :data:`TICKET_SECONDS`, useless once used:
never the session token itself) and sends it to :data:`ROUTE`, an HTTP route of this process (see
annotator/app/serve.py); the route answers with the ``Set-Cookie`` header that holds the token.
Logging out asks the same route to expire the cookie. Tickets live in this process's memory, which
is the process the browser's websocket is on (sticky sessions behind a proxy).
"""

import hashlib
import secrets
import threading
import time

from starlette.requests import Request
from starlette.responses import Response

ROUTE = "/_pair/session"
TICKET_HEADER = "X-Pair-Studio-Ticket"
LOGOUT_HEADER = "X-Pair-Studio-Logout"  # a custom header: a cross-site form cannot send it
TICKET_SECONDS = 60
COOKIE = "pair_studio_session"
MAX_AGE = 12 * 3600  # the app's SESSION_HOURS

_tickets: dict[str, tuple[str, float]] = {}  # sha256(ticket) -> (token, expiry on the monotonic clock)
_lock = threading.Lock()


def _key(ticket: str) -> str:
    return hashlib.sha256(ticket.encode("utf-8", "surrogatepass")).hexdigest()


def issue_ticket(token: str) -> str:
    """A one-time ticket that the cookie route exchanges for `token` within TICKET_SECONDS."""
    ticket = secrets.token_urlsafe(32)
    now = time.monotonic()
    with _lock:
        for key in [k for k, (_, expiry) in _tickets.items() if expiry <= now]:
            del _tickets[key]
        _tickets[_key(ticket)] = (token, now + TICKET_SECONDS)
    return ticket


def redeem_ticket(ticket: str) -> str | None:
    """The token of a live ticket, once (None for an unknown, used or expired one)."""
    with _lock:
        found = _tickets.pop(_key(ticket), None)
    if found is None or found[1] <= time.monotonic():
        return None
    return found[0]


def _secure(request: Request) -> bool:
    """Served over HTTPS: TLS in this server, or a trusted proxy's X-Forwarded-Proto (uvicorn applies
    it for proxies on 127.0.0.1)."""
    return request.url.scheme == "https"


async def session_cookie(request: Request) -> Response:
    """POST with a ticket: set the session cookie; DELETE (with the logout header): expire it."""
    response = Response(status_code=204, headers={"Cache-Control": "no-store"})
    secure = _secure(request)
    if request.method == "DELETE":
        if request.headers.get(LOGOUT_HEADER) != "1":
            return Response(status_code=403)
        response.delete_cookie(COOKIE, path="/", secure=secure, httponly=True, samesite="strict")
        return response
    token = redeem_ticket(request.headers.get(TICKET_HEADER, ""))
    if token is None:
        return Response(status_code=403, headers={"Cache-Control": "no-store"})
    response.set_cookie(
        COOKIE, token, max_age=MAX_AGE, path="/", secure=secure, httponly=True, samesite="strict"
    )
    return response
