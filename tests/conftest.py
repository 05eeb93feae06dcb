"""Shared fixtures: every test gets its own temporary database, never data/annotations.db.

By default that is a SQLite file. When $ANNOTATOR_TEST_POSTGRES holds the admin URL of a PostgreSQL
server (e.g. postgresql+psycopg://annotator:annotator@127.0.0.1:5432/postgres), every test gets a fresh
PostgreSQL database instead, dropped at teardown; tests marked `sqlite_only` are skipped then. The
database makers live in tests/utils/databases.py. Browser tests (marker `browser`) need Debian's chromium:
without it they are skipped on a developer machine and fail under CI (where `CI` is set).
"""

import os
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from sqlalchemy.engine import Engine

from annotator.server import BROWSER_ARGS
from annotator.store import db
from tests.utils.apphelpers import VIEWPORT
from tests.utils.databases import (
    POSTGRES_ENV,
    close_databases,
    drop_test_databases,
    fresh_db_url,
    postgres_admin_url,
)
from tests.utils.passwords import CHEAP_HASHER, PRODUCTION_HASHER, hashing_with

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    close_databases()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("browser") and shutil.which("chromium") is None:
        if os.environ.get("CI"):
            pytest.fail("Debian's chromium is not installed: CI must install it (.ci/run does)")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _browser_files_first(items)
    if postgres_admin_url() is None:
        return
    skip = pytest.mark.skip(reason=f"SQLite-specific test (${POSTGRES_ENV} is set: running on PostgreSQL)")
    for item in items:
        if item.get_closest_marker("sqlite_only"):
            item.add_marker(skip)


def _browser_files_first(items: list[pytest.Item]) -> None:
    """The files with a test that runs for minutes (marker `long`) first, then those that drive a
    browser, most browser tests first, the others after them in their own order. pytest-xdist hands out
    whole files in this order (pyproject turns off its reordering by number of tests): these are the
    suite's longest files, and one started last keeps a worker busy long after the others have
    finished."""
    long_tests = Counter(item.path for item in items if item.get_closest_marker("long"))
    browser_tests = Counter(item.path for item in items if item.get_closest_marker("browser"))
    items.sort(key=lambda item: (-long_tests[item.path], -browser_tests[item.path]))


@pytest.fixture(autouse=True, scope="session")
def _cheap_password_hashing() -> Iterator[None]:
    """Argon2id at its lowest cost in the test process (tests/utils/passwords.py)."""
    with hashing_with(CHEAP_HASHER):
        yield


@pytest.fixture
def production_hashing() -> Iterator[None]:
    """Argon2id at the production cost, for a test about the hashing itself."""
    with hashing_with(PRODUCTION_HASHER):
        yield


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads $ANNOTATOR_DB_URL from the outside or writes the default data/annotations.db or a
    key file in the user's home; PostgreSQL databases made for a test are dropped after it (after the
    other fixtures' teardown)."""
    monkeypatch.delenv(db.ENV_VAR, raising=False)
    monkeypatch.delenv("ANNOTATOR_RESULTS_KEY", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the stored results' key file
    monkeypatch.chdir(tmp_path)
    yield
    drop_test_databases()


@pytest.fixture
def db_url(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The URL of a fresh database (a SQLite file, or on PostgreSQL a new database), already migrated
    when the test also asks for `engine` (copying the session's template is faster than migrating);
    otherwise a SQLite file that does not exist yet, in a folder that does not exist yet."""
    return fresh_db_url(tmp_path, migrated="engine" in request.fixturenames)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """An engine on a fresh database migrated to the head schema."""
    engine = db.make_engine(db_url)
    db.upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def env_db(db_url: str, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> str:
    """A migrated database whose URL is in $ANNOTATOR_DB_URL (for CLI calls without --db)."""
    monkeypatch.setenv(db.ENV_VAR, db_url)
    return db_url


@pytest.fixture(scope="module")
def chrome() -> "Iterator[Browser]":
    """Debian's headless chromium, one per test module (browser tests)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=shutil.which("chromium"), args=list(BROWSER_ARGS)
        )
        yield browser
        browser.close()


@pytest.fixture
def tab(chrome: "Browser") -> "Iterator[Page]":
    """A fresh browser context (no cookies, its own Streamlit session) at 1440x900."""
    context = chrome.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()
