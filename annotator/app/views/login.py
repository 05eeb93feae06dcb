"""Log in with a username and password, or with a one-time link (?token=...) for crowd workers."""

import streamlit as st

from annotator.app.common import SESSION_COOKIE, engine, log_in, session
from annotator.errors import AuthError, UserError
from annotator.people import accounts
from annotator.rating import crowd
from annotator.store import db


def token_login() -> None:
    """Redeem a one-time login token from the URL, once."""
    token = st.query_params.get("token")
    if not token:
        return
    del st.query_params["token"]
    try:
        with session() as active:
            account = accounts.redeem_login_token(active, token)
    except UserError as exc:
        st.error(str(exc))
        return
    log_in(account)
    st.rerun()


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


def password_login() -> None:
    """The login form."""
    st.title("Pair Studio")
    st.markdown("Rate pairs of responses for how well they fit one person.")
    if st.session_state.pop("expired", False):
        st.info("Your session expired; please log in again.")
    with st.form("login", border=True, width=420):
        username = st.text_input("Username", key="login_username", autocomplete="username")
        password = st.text_input(
            "Password", type="password", key="login_password", autocomplete="current-password"
        )
        submitted = st.form_submit_button(
            "Log in", type="primary", icon=":material/login:", key="login_submit"
        )
    if not submitted:
        return
    if not username.strip() or not password:
        st.error("Please enter your username and password.")
        return
    try:
        client, known = _client(), _known_session()
        account = db.with_retries(
            engine(),
            lambda active: accounts.authenticate(
                active, username.strip(), password, client=client, known_session=known
            ),
        )
    except UserError as exc:  # a refused login, or a server still busy after the retries: one line
        st.error(str(exc))
        return
    log_in(account)
    st.rerun()


def crowd_login() -> None:
    """Enter from a crowd platform's study link (?study=S&PROLIFIC_PID=...): no password.

    The link's parameters are removed from the address at once (the worker id never stays on a
    page); the account is created or resumed by annotator.rating.crowd and logged in like any other.
    """
    if "study" not in st.query_params:
        return
    params = {key: st.query_params.get(key) or "" for key in st.query_params.keys()}
    st.query_params.clear()
    try:
        account = db.with_retries(
            engine(), lambda active: crowd.enter(active, study=params["study"], params=params)
        )
    except (AuthError, UserError) as exc:
        st.title("Pair Studio")
        st.error(str(exc))
        st.stop()
    log_in(account)
    st.rerun()


def main() -> None:
    crowd_login()
    token_login()
    password_login()


main()
