"""Logins by link, taken by the router before it chooses the pages: a one-time login link
(?token=...) and a crowd platform's study link (?study=S&PROLIFIC_PID=...). Taken before the routing,
the same run draws the annotator's pages (no second run to leave the login page). A refusal is kept
for the login page to show (:data:`LINK_ERROR_KEY`)."""

import streamlit as st

from annotator.app.common import engine, log_in, session
from annotator.errors import AuthError, UserError
from annotator.people import accounts
from annotator.rating import crowd
from annotator.store import db

#: A refused link: (the link's kind, "token" or "crowd"; its one line) for the login page.
LINK_ERROR_KEY = "link_login_error"
#: The parameter that makes an address a crowd platform's study link.
CROWD_LINK = "study"


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
        st.session_state[LINK_ERROR_KEY] = ("token", str(exc))
        return
    log_in(account)


def crowd_login() -> None:
    """Enter from a crowd platform's study link (?study=S&PROLIFIC_PID=...): no password.

    The link's parameters are removed from the address at once (the worker id never stays on a
    page), also when the worker comes back already signed in; the account is created or resumed by
    annotator.rating.crowd and logged in like any other.
    """
    if CROWD_LINK not in st.query_params:
        return
    params = {key: st.query_params.get(key) or "" for key in st.query_params.keys()}
    st.query_params.clear()
    try:
        account = db.with_retries(
            engine(), lambda active: crowd.enter(active, study=params[CROWD_LINK], params=params)
        )
    except (AuthError, UserError) as exc:
        st.session_state[LINK_ERROR_KEY] = ("crowd", str(exc))
        return
    log_in(account)


def link_login() -> None:
    """A login link in the address, if any: the crowd's study link first, then a one-time token."""
    crowd_login()
    token_login()
