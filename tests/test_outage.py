"""A database outage is one page-level message (never Streamlit's error box with its "Ask Google"
links), and the page comes back by itself when the database answers again."""

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from annotator.app import common
from annotator.store import db
from tests.utils.apphelpers import PASSWORD, AppDB, app_for, build_app_db, log_in, running_app
from tests.utils.databases import POSTGRES_ENV, postgres_admin_url
from tests.utils.outage import TcpProxy

if TYPE_CHECKING:
    from playwright.sync_api import Page


@pytest.fixture
def app_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AppDB]:
    built = build_app_db(tmp_path / "db", acknowledged=["ann1", "ann2"])
    monkeypatch.setenv(db.ENV_VAR, built.url)
    yield built
    built.engine.dispose()


class Outage:
    """Every statement of the app's engine fails as a lost connection does while `down` is set."""

    def __init__(self) -> None:
        self.down = False

    def __call__(self, *_args: object, **_kwargs: object) -> None:
        if self.down:
            raise OperationalError("SELECT 1", {}, ConnectionRefusedError("server closed the connection"))


@pytest.mark.parametrize("username", ["ann1", "res1"])
def test_an_outage_is_one_message_and_the_page_recovers(app_db: AppDB, username: str) -> None:
    at = app_for(app_db.account(username))
    assert not at.exception and not at.error
    page_text = [m.value for m in at.markdown]
    outage = Outage()
    engine = common.engine()  # the app's own engine (one per process and URL)
    event.listen(engine, "before_cursor_execute", outage)
    try:
        outage.down = True
        at.run()
        assert not at.exception  # no error box, no traceback
        assert [e.value for e in at.error] == [common.OUTAGE.format(seconds=common.RETRY_SECONDS)]
        assert "server closed the connection" in at.caption[0].value
        outage.down = False
        at.run()
        assert not at.exception and not at.error
        assert [m.value for m in at.markdown] == page_text  # the page is back as it was
    finally:
        event.remove(engine, "before_cursor_execute", outage)


def test_an_outage_during_a_password_login_is_the_same_message(app_db: AppDB) -> None:
    """The password is checked in the login button's callback: a fault there is still the page's one
    message (no traceback), nobody is logged in, and the login form is back when the database is."""
    at = app_for(None)
    outage = Outage()
    engine = common.engine()
    event.listen(engine, "before_cursor_execute", outage)
    try:
        outage.down = True
        at.text_input(key="login_username").input("ann1")
        at.text_input(key="login_password").input(PASSWORD)
        at.button(key="login_submit").click().run()
        assert not at.exception
        assert [e.value for e in at.error] == [common.OUTAGE.format(seconds=common.RETRY_SECONDS)]
        assert "account" not in at.session_state
        outage.down = False
        at.run()
        assert not at.exception and not at.error
        assert at.text_input(key="login_username")
    finally:
        event.remove(engine, "before_cursor_execute", outage)


def test_a_database_that_cannot_be_opened_is_the_same_message(
    app_db: AppDB, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A database file that is not there and may not be created (read-only mode): the outage message."""
    missing = tmp_path / "missing.db"
    monkeypatch.setenv(db.ENV_VAR, f"sqlite:///file:{missing}?mode=ro&uri=true")
    at = app_for(None)
    assert not at.exception
    assert [e.value for e in at.error] == [common.OUTAGE.format(seconds=common.RETRY_SECONDS)]
    assert not missing.exists()


def test_a_database_driver_that_is_not_installed_is_one_line(
    app_db: AppDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(db.ENV_VAR, "mysql+pymysql://nobody:x@127.0.0.1:9/none")
    at = app_for(None)
    assert not at.exception
    assert [e.value for e in at.error] == ["the database driver for mysql+pymysql is not installed: pymysql"]


@pytest.mark.browser
@pytest.mark.postgres
@pytest.mark.skipif(postgres_admin_url() is None, reason=f"needs PostgreSQL: set ${POSTGRES_ENV}")
def test_a_real_postgresql_outage_in_the_browser(tmp_path: Path, tab: "Page") -> None:
    """The app on PostgreSQL through a proxy that is cut: the page shows the one message (no Streamlit
    error box, no "Ask Google" link), and comes back by itself after the proxy is restored."""
    built = build_app_db(tmp_path / "db", acknowledged=["ann1"])
    real = make_url(built.url)
    proxy = TcpProxy((real.host or "127.0.0.1", real.port or 5432))
    url = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    try:
        with running_app(url, tmp_path / "server.log") as base_url:
            log_in(tab, base_url, "ann1", PASSWORD)
            tab.get_by_text("Signed in as").wait_for()
            proxy.cut()
            tab.reload()
            message = tab.get_by_text("The database cannot be reached right now")
            message.wait_for(timeout=30_000)
            tab.screenshot(path=str(tmp_path / "outage.png"))
            tab.set_viewport_size({"width": 390, "height": 844})  # a phone: the message still fits
            tab.screenshot(path=str(tmp_path / "outage-390.png"))
            box = message.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
            assert tab.get_by_text("Ask Google").count() == 0
            assert tab.locator("[data-testid='stException']").count() == 0
            proxy.restore()
            message.wait_for(state="detached", timeout=30_000)  # back by itself: nobody reloads
            tab.get_by_text("Signed in as").wait_for()
    finally:
        proxy.close()
        built.engine.dispose()


def test_a_lock_held_too_long_is_a_busy_moment_not_an_outage(app_db: AppDB) -> None:
    """SQLite's "database is locked" after the busy timeout: a warning that the database is busy (no
    outage message, no cause line about restoring anything), and the page comes back by itself."""
    import sqlite3

    at = app_for(app_db.account("ann1"))
    page_text = [m.value for m in at.markdown]
    engine = common.engine()

    def locked(*_args: object, **_kwargs: object) -> None:
        raise OperationalError("UPDATE study", {}, sqlite3.OperationalError("database is locked"))

    event.listen(engine, "before_cursor_execute", locked)
    try:
        at.run()
    finally:
        event.remove(engine, "before_cursor_execute", locked)
    assert not at.exception and not at.error
    assert [w.value for w in at.warning] == [common.BUSY.format(seconds=common.RETRY_SECONDS)]
    at.run()
    assert not at.exception and not at.error and not at.warning
    assert [m.value for m in at.markdown] == page_text


def test_a_login_that_meets_a_lock_is_tried_again_and_gets_in(app_db: AppDB) -> None:
    """The first write of a password login meets "database is locked": the login runs again by itself
    and the user is signed in, with no error shown."""
    import sqlite3

    at = app_for(None)
    engine = common.engine()
    met: list[str] = []

    def locked_once(_conn: object, _cursor: object, statement: str, *_rest: object) -> None:
        if not met and statement.lstrip().upper().startswith(("INSERT", "UPDATE")):
            met.append(statement)
            raise OperationalError(statement, {}, sqlite3.OperationalError("database is locked"))

    event.listen(engine, "before_cursor_execute", locked_once)
    try:
        at.text_input(key="login_username").input("ann1")
        at.text_input(key="login_password").input(PASSWORD)
        at.button(key="login_submit").click().run()
    finally:
        event.remove(engine, "before_cursor_execute", locked_once)
    assert met and not at.exception and not at.error
    assert any("Signed in as" in c.value for c in at.sidebar.caption)
