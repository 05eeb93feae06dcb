"""Log in with a username and password, or with a one-time link (?token=...) for crowd workers."""

import streamlit as st

from annotator import accounts
from annotator.app.common import log_in, session
from annotator.errors import AuthError


def token_login() -> None:
    """Redeem a one-time login token from the URL, once."""
    token = st.query_params.get("token")
    if not token:
        return
    del st.query_params["token"]
    try:
        with session() as active:
            account = accounts.redeem_login_token(active, token)
    except AuthError as exc:
        st.error(str(exc))
        return
    log_in(account)
    st.rerun()


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
        with session() as active:
            account = accounts.authenticate(active, username.strip(), password)
    except AuthError as exc:
        st.error(str(exc))
        return
    log_in(account)
    st.rerun()


token_login()
password_login()
