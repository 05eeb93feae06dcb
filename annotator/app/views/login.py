"""Log in with a username and password; a refused login link (annotator.app.link_login: a one-time
token, a crowd study link) is said here."""

import streamlit as st

from annotator.app.common import ACCOUNT_KEY, LOGIN_AT_KEY, SESSION_COOKIE, engine, log_in
from annotator.app.link_login import LINK_ERROR_KEY
from annotator.errors import UserError
from annotator.people import accounts
from annotator.store import db


def _client() -> str | None:
    """The browser's address for the per-client login throttle; None behind a local proxy (where every
    browser would share the proxy's address) or in tests."""
    try:
        address = st.context.ip_address
    except Exception:
        return None
    if not address or address in ("127.0.0.1", "::1", "localhost"):
        return None
    return str(address)


def _known_session() -> str | None:
    """This browser's earlier session token (cookie), which lets its user past a name's lockout."""
    try:
        token = st.context.cookies.get(SESSION_COOKIE)
    except Exception:
        return None
    return str(token) if token else None


LOGIN_ERROR_KEY = "login_error"  # a refused login's one line, shown under the form
LOGIN_FAULT_KEY = "login_fault"  # a fault in the login's callback (the database down), raised by the page


def check_password() -> None:
    """The login button's callback: check the password before the page runs again, so that this one
    run draws the role's start page (no second run to leave the login page); a refusal is one line
    kept for the form to show, any other fault is raised again by the page's run (where the router
    says a database fault in one message, as on every page)."""
    state = st.session_state
    username = str(state.get("login_username") or "").strip()
    password = str(state.get("login_password") or "")
    if not username or not password:
        state[LOGIN_ERROR_KEY] = "Please enter your username and password."
        return
    try:
        client, known = _client(), _known_session()
        account = db.with_retries(
            engine(),
            lambda active: accounts.authenticate(
                active, username, password, client=client, known_session=known
            ),
        )
        log_in(account)
    except UserError as exc:  # a refused login, or a server still busy after the retries: one line
        state[LOGIN_ERROR_KEY] = str(exc)
    except Exception as exc:
        for key in (ACCOUNT_KEY, LOGIN_AT_KEY):  # a login half made is none: the login page shows the fault
            state.pop(key, None)
        state[LOGIN_FAULT_KEY] = exc


def password_login() -> None:
    """The login form (its button's callback, :func:`check_password`, logs in)."""
    fault = st.session_state.pop(LOGIN_FAULT_KEY, None)
    if fault is not None:
        raise fault
    st.title("Pair Studio")
    st.markdown("Rate pairs of responses for how well they fit one person.")
    if st.session_state.pop("expired", False):
        st.info("Your session expired; please log in again.")
    with st.form("login", border=True, width=420):
        st.text_input("Username", key="login_username", autocomplete="username")
        st.text_input("Password", type="password", key="login_password", autocomplete="current-password")
        st.form_submit_button(
            "Log in", type="primary", icon=":material/login:", key="login_submit", on_click=check_password
        )
    error = st.session_state.pop(LOGIN_ERROR_KEY, None)
    if error:
        st.error(error)


def main() -> None:
    refused = st.session_state.pop(LINK_ERROR_KEY, None)
    if refused is not None and refused[0] == "crowd":  # a study link that cannot be used: no form
        st.title("Pair Studio")
        st.error(refused[1])
        return
    if refused is not None:
        st.error(refused[1])
    password_login()


main()
