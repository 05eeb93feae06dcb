"""The session cookie is set by the server (HttpOnly, SameSite=Strict, Secure over HTTPS), no page
script can read it, and the token never appears in the page; the one-time ticket the page carries
is useless once used. Browser tests in Debian's chromium, and the cookie route on its own."""

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pytest
from starlette.requests import Request
from starlette.responses import Response

from annotator.app import cookie
from tests.utils.apphelpers import (
    PASSWORD,
    AppDB,
    build_app_db,
    log_in,
    running_app,
    wait_for_session_cookie,
    wait_idle,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, AppDB]]:
    folder = tmp_path_factory.mktemp("cookie-app")
    built = build_app_db(folder / "db", acknowledged=["ann1", "ann2"])
    with running_app(built.url, folder / "server.log") as base_url:
        yield base_url, built
    built.engine.dispose()


def _session_cookie(tab: "Page") -> dict[str, object]:
    found = [c for c in tab.context.cookies() if c["name"] == cookie.COOKIE]
    assert len(found) == 1, tab.context.cookies()
    return dict(found[0])


@pytest.mark.browser
def test_the_server_sets_an_httponly_strict_cookie_that_scripts_cannot_read(
    tab: "Page", app_url: tuple[str, AppDB]
) -> None:
    base_url, _ = app_url
    log_in(tab, base_url, "ann1", PASSWORD)
    wait_for_session_cookie(tab)  # the page's own request to the cookie route has been answered
    set_cookie = _session_cookie(tab)
    assert set_cookie["httpOnly"] is True and set_cookie["sameSite"] == "Strict"
    assert set_cookie["secure"] is False  # plain http on 127.0.0.1; over https the route sets Secure
    token = str(set_cookie["value"])
    assert cookie.COOKIE not in tab.evaluate("document.cookie")
    assert token not in tab.content()  # nor is the token anywhere in the page
    tab.reload()
    wait_idle(tab)
    tab.get_by_text("Signed in as").wait_for()  # the cookie brings the login back
    tab.get_by_role("button", name="Log out").click()
    wait_idle(tab)
    tab.get_by_role("button", name="Log in").wait_for()
    wait_for_session_cookie(tab, present=False)  # the logout's request removed it


def _request(method: str, headers: dict[str, str], scheme: str = "http") -> Request:
    scope = {
        "type": "http",
        "method": method,
        "scheme": scheme,
        "path": cookie.ROUTE,
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "server": ("example.org", 443 if scheme == "https" else 80),
        "query_string": b"",
    }
    return Request(scope)


def _answer(request: Request) -> Response:
    """The route's response (in a thread of its own: the browser tests' event loop may be running)."""
    with ThreadPoolExecutor(max_workers=1) as worker:
        return worker.submit(asyncio.run, cookie.session_cookie(request)).result()


def test_a_ticket_sets_the_cookie_once_and_secure_over_https() -> None:
    ticket = cookie.issue_ticket("the-token")
    response = _answer(_request("POST", {cookie.TICKET_HEADER: ticket}, "https"))
    header = response.headers["set-cookie"]
    assert response.status_code == 204 and header.startswith(f"{cookie.COOKIE}=the-token;")
    assert "HttpOnly" in header and "SameSite=strict" in header and "Secure" in header
    again = _answer(_request("POST", {cookie.TICKET_HEADER: ticket}))
    assert again.status_code == 403 and "set-cookie" not in again.headers  # a used ticket is worthless
    plain = _answer(_request("POST", {cookie.TICKET_HEADER: cookie.issue_ticket("t2")}))
    assert "Secure" not in plain.headers["set-cookie"]


def test_logout_needs_the_custom_header() -> None:
    refused = _answer(_request("DELETE", {}))
    assert refused.status_code == 403 and "set-cookie" not in refused.headers
    cleared = _answer(_request("DELETE", {cookie.LOGOUT_HEADER: "1"}))
    assert cleared.status_code == 204 and "Max-Age=0" in cleared.headers["set-cookie"]
