"""What every page shares: the cached engine, the logged-in account, role checks, a session."""

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import streamlit as st
from sqlalchemy.engine import Engine
from sqlmodel import Session

from annotator.accounts import Account
from annotator.store import db

# Not "pages/": that name would switch on Streamlit's legacy multipage mode, bypassing the router.
PAGES = Path(__file__).parent / "views"
SESSION_HOURS = 12
ACCOUNT_KEY = "account"
LOGIN_AT_KEY = "login_at"


@st.cache_resource(show_spinner=False)
def _engine(url: str) -> Engine:
    engine = db.make_engine(url)
    db.check_schema(engine)
    return engine


def engine() -> Engine:
    """The engine for $ANNOTATOR_DB_URL (or the default database), one per server process."""
    return _engine(db.resolve_url())


@contextmanager
def session() -> Iterator[Session]:
    """One short unit of work on the app's database."""
    with db.session_scope(engine()) as active:
        yield active


_DOLLARS = re.compile(r"(\\*)\$")


def safe_md(text: object) -> str:
    """A user or pair text for st.markdown (and other Markdown labels) shown as typed.

    Streamlit already shows raw HTML as text (unsafe_allow_html is off); what remains is LaTeX:
    `$...$` would be typeset, so every `$` is escaped, with the backslashes before it kept literal.
    """
    return _DOLLARS.sub(lambda m: m.group(1) * 2 + "\\$", str(text))


def current_account() -> Account | None:
    """The logged-in account, or None; a session older than SESSION_HOURS is logged out."""
    account = st.session_state.get(ACCOUNT_KEY)
    login_at = st.session_state.get(LOGIN_AT_KEY)
    if account is None or login_at is None:
        return None
    if datetime.now(UTC) - login_at > timedelta(hours=SESSION_HOURS):
        log_out()
        st.session_state["expired"] = True
        return None
    return account


def log_in(account: Account) -> None:
    """Start a session for `account`."""
    st.session_state[ACCOUNT_KEY] = account
    st.session_state[LOGIN_AT_KEY] = datetime.now(UTC)


def log_out() -> None:
    """Forget everything about the current session."""
    for key in list(st.session_state.keys()):
        del st.session_state[key]


def require(*roles: str) -> Account:
    """The logged-in account if it has one of `roles`; otherwise a refusal and the page stops."""
    account = current_account()
    if account is None:
        st.error("Please log in first.")
        st.stop()
    if account.role not in roles:
        st.error(f"This page is not available to the {account.role} role.")
        st.stop()
    return account


def choose_study(key: str = "study") -> str | None:
    """A study picker for researchers and adjudicators (None, with a hint, when there is no study)."""
    from annotator.dashboard import study_names

    with session() as active:
        names = study_names(active)
    if not names:
        st.info("No study yet: import pairs on the Data page (or with `annotator import`).")
        return None
    return st.selectbox("Study", names, key=key)
