"""What every page shares: the cached engine, the logged-in account, role checks, a session."""

import functools
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import streamlit as st
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DatabaseError
from sqlmodel import Session
from streamlit.delta_generator import DeltaGenerator

from annotator.app.assets import filled
from annotator.app.theme import apply_theme
from annotator.errors import UserError
from annotator.people.authorization import Account
from annotator.store import db
from annotator.study import study_config
from annotator.textguard import MAX_BYTES_DEFAULT

#: How large an upload may be, as the server takes it (annotator.server.FLAGS) and every upload box's
#: label says it (Streamlit's own note counts in powers of 1000 and shows 512 MB as "1GB").
UPLOAD_LIMIT = f"at most {MAX_BYTES_DEFAULT // 2**20} MB"

# Not "pages/": that name would switch on Streamlit's legacy multipage mode, bypassing the router.
PAGES = Path(__file__).parent / "views"
SESSION_HOURS = 12
FAVICON = Path(__file__).parent / "static" / "favicon.png"

# Session-state keys shared between pages (one place; a page never writes another page's raw string).
ACCOUNT_KEY = "account"
LOGIN_AT_KEY = "login_at"
TOKEN_KEY = "session_token"  # the revocable session token of this login (see annotator.people.sessions)
COOKIE_WRITTEN_KEY = "session_cookie_written"
COOKIE_CLEAR_KEY = "session_cookie_clear"
EXPIRED_KEY = "expired"
ITEM_KEY = "annotate_item"  # the ItemView on the rating page
PREFILL_KEY = "annotate_prefill"  # the answers to start from (a revision, a draft)
SUBMISSION_KEY = "submission_id"  # fixed when an item is drawn: a repeated submit is a no-op
REOPEN_KEY = "annotate_reopen"  # an assignment My work asks the rating page to open for revision
REOPEN_STUDY_KEY = "annotate_reopen_study"  # (id, name) of its study: the rating page switches to it
CURRENT_STUDY_KEY = "current_study"  # the study id the annotator works on (the Training page follows it)
#: The cookie that keeps the login across a reload: a revocable, expiring session token only.
SESSION_COOKIE = "pair_studio_session"  # = annotator.app.cookie.COOKIE


@functools.cache  # one per process: the pages' runs and the draft route share it
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


_IMAGE = re.compile(r"!(?=\[)")  # ![alt](url) and ![alt][ref]: images the browser would fetch
_DIRECTIVE = re.compile(r"(?<![\\\w]):(?=[A-Za-z][\w-]*\[)")  # :green-background[...], :red[...]
_ICON = re.compile(r":(?=material/)")  # :material/name: icons
_ATX = re.compile(r"^( {0,3})(#{1,4})(?=[ \t]|$)", re.M)  # a heading the size of the page's own
_SETEXT = re.compile(r"^( {0,3})(=+|-{2,})[ \t]*$", re.M)  # text underlined with === or --- (h1/h2)
_HTML_START = re.compile(r"^( {0,3})<(?=[A-Za-z/!?])", re.M)  # a line that would open an HTML block


def safe_md(text: object) -> str:
    """A user or pair text for st.markdown (and other Markdown labels) shown as typed; the one
    rendering rule of every page.

    Streamlit already shows raw HTML as text (unsafe_allow_html is off). What remains: LaTeX (`$...$`
    would be typeset: every `$` is escaped, the backslashes before it kept literal); images (`![..](..)`
    would be fetched while the annotator reads, leaking their address: shown as text); Streamlit's own
    directives (`:green-background[...]`, `:material/...:`: shown as text); headings, which are kept
    below the page's own (at most level 5; `===`/`---` underlines shown as text); and a line that starts
    with a tag (`<script>`, `<div>`): Markdown would take it as an HTML block, whose text Streamlit shows
    without reading its escapes (a backslash before each dollar on the page): its `<` is escaped, so
    the line is a paragraph.
    """
    out = _DOLLARS.sub(lambda m: m.group(1) * 2 + "\\$", str(text))
    out = _IMAGE.sub(r"!\\", out)
    out = _DIRECTIVE.sub(r"\\:", out)
    out = _ICON.sub(":\u2060", out)
    out = _ATX.sub(lambda m: m.group(1) + "#####", out)
    out = _SETEXT.sub(lambda m: m.group(1) + "\\" + m.group(2), out)
    return _HTML_START.sub(lambda m: m.group(1) + "\\<", out)


def _cookie_token() -> str | None:
    """The session token the browser sent with this connection (after a reload), if any."""
    try:
        token = st.context.cookies.get(SESSION_COOKIE)
    except Exception:  # no browser connection (AppTest)
        return None
    return token or None


def _resume(token: str) -> Account | None:
    """The account of a live session token, or None when it was ended, expired or the user deactivated."""
    try:
        from annotator.people import sessions
    except ImportError:  # the session service is not there: the login lasts as long as the tab
        return None
    from annotator.errors import AuthError

    try:
        with session() as active:
            return sessions.resume_session(active, token)
    except AuthError:
        return None


def current_account() -> Account | None:
    """The logged-in account, or None.

    A login with a session token is checked against the server on every run, so logging out elsewhere
    or a deactivation ends it at once; after a reload the token comes back from the cookie. A session
    older than SESSION_HOURS is logged out.
    """
    account = st.session_state.get(ACCOUNT_KEY)
    token = st.session_state.get(TOKEN_KEY)
    if account is None:
        cookie = _cookie_token()
        if cookie is None or st.session_state.get(COOKIE_CLEAR_KEY):
            return None
        resumed = _resume(cookie)
        if resumed is None:
            st.session_state[COOKIE_CLEAR_KEY] = True
            return None
        st.session_state[ACCOUNT_KEY] = resumed
        st.session_state[LOGIN_AT_KEY] = datetime.now(UTC)
        st.session_state[TOKEN_KEY] = cookie
        st.session_state[COOKIE_WRITTEN_KEY] = True
        return resumed
    login_at = st.session_state.get(LOGIN_AT_KEY)
    if login_at is None:
        return None
    if datetime.now(UTC) - login_at > timedelta(hours=SESSION_HOURS) or (
        token is not None and _resume(token) is None
    ):
        log_out()
        st.session_state[EXPIRED_KEY] = True
        return None
    return account


def log_in(account: Account) -> None:
    """Start a session for `account`: a revocable session token is issued and kept in a cookie."""
    st.session_state[ACCOUNT_KEY] = account
    st.session_state[LOGIN_AT_KEY] = datetime.now(UTC)
    st.session_state.pop(COOKIE_CLEAR_KEY, None)
    try:
        from annotator.people import sessions
    except ImportError:
        return
    with session() as active:
        st.session_state[TOKEN_KEY] = sessions.start_session(active, account=account)
    st.session_state[COOKIE_WRITTEN_KEY] = False


def log_out() -> None:
    """End the session on the server, forget everything about it, and clear the browser's cookie."""
    token = st.session_state.get(TOKEN_KEY)
    if token is not None:
        try:
            from annotator.people import sessions

            with session() as active:
                sessions.end_session(active, token)
        except Exception:  # already ended; logging out must still work
            pass
    for key in list(st.session_state.keys()):
        del st.session_state[key]
    st.session_state[COOKIE_CLEAR_KEY] = True


def sync_cookie() -> None:
    """Have the server set the browser's session cookie after a login, or expire it after a logout.

    The cookie (the revocable, expiring token only, never a password) is set by an HTTP response of
    this server (annotator.app.cookie): HttpOnly, SameSite=Strict, Secure over HTTPS. The page gets
    only a one-time ticket for it, never the token.
    """
    from annotator.app import cookie

    token = st.session_state.get(TOKEN_KEY)
    if st.session_state.get(COOKIE_CLEAR_KEY):
        if st.session_state.get(COOKIE_WRITTEN_KEY) is False:
            return
        script = filled("cookie_clear.js", route=cookie.ROUTE, header=cookie.LOGOUT_HEADER)
        st.html(f"<script>{script}</script>", unsafe_allow_javascript=True)
        st.session_state[COOKIE_WRITTEN_KEY] = False
    elif token is not None and not st.session_state.get(COOKIE_WRITTEN_KEY):
        ticket = cookie.issue_ticket(token)  # URL-safe base64: nothing to escape in the script
        script = filled("cookie_set.js", route=cookie.ROUTE, header=cookie.TICKET_HEADER, ticket=ticket)
        st.html(f"<script>{script}</script>", unsafe_allow_javascript=True)
        st.session_state[COOKIE_WRITTEN_KEY] = True


#: How often the outage message checks whether the database is back.
RETRY_SECONDS = 5
OUTAGE = (
    "The database cannot be reached right now, so this page cannot be shown. Everything you submitted "
    "is saved. This page checks again every {seconds} seconds and comes back by itself."
)
FAULT = "The database refused this page's request, so it cannot be shown. Please tell the study's researcher."
BUSY = (
    "The database is busy with other people's work right now, so this page waited too long. Everything "
    "you submitted is saved. This page tries again in {seconds} seconds by itself."
)
_OUTAGE_SHOWN = "outage_message_shown"


def database_down(exc: BaseException) -> bool:
    """Whether `exc` is a database fault; if so, one page-level message says so (with the fault in one
    line). A lost or refused connection (PostgreSQL down) also starts a timer that runs the app again
    as soon as the database answers; so does a lock held too long, which is said to be a busy moment,
    never an outage."""
    from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

    if not isinstance(exc, DBAPIError):
        return False
    busy = db.is_locked(exc)
    outage = not busy and (
        isinstance(exc, OperationalError | InterfaceError)
        or (isinstance(exc, DBAPIError) and exc.connection_invalidated)
    )
    if busy:
        st.warning(BUSY.format(seconds=RETRY_SECONDS), icon=":material/hourglass_top:")
    else:
        st.error(OUTAGE.format(seconds=RETRY_SECONDS) if outage else FAULT, icon=":material/cloud_off:")
        fault = exc if isinstance(exc, DatabaseError) else DatabaseError(None, None, exc.orig or exc)
        st.caption(f"Cause: {db.describe_error(fault)}")
    if outage or busy:
        st.session_state[_OUTAGE_SHOWN] = True
        _retry_when_back()
    return True


@st.fragment(run_every=RETRY_SECONDS)
def _retry_when_back() -> None:
    """Every few seconds (not in the run that drew the message): one `SELECT 1`; when it answers,
    the whole app runs again."""
    if st.session_state.pop(_OUTAGE_SHOWN, False):
        return
    try:
        with engine().connect() as connection:
            connection.exec_driver_sql("SELECT 1")
    except Exception:  # still down (or the engine cannot be made yet)
        return
    st.rerun(scope="app")


def require(*roles: str) -> Account:
    """The logged-in account if it has one of `roles`; otherwise a refusal and the page stops."""
    account = current_account()
    if account is None:
        st.error("Please log in first.")
        st.stop()
    if account.role not in roles or account.role == "system":  # SYSTEM is for the CLI, never a page
        st.error(f"This page is not available to the {account.role} role.")
        st.stop()
    return account


def opened(label: str, key: str, icon: str | None = None, *, kept: bool = False) -> DeltaGenerator | None:
    """A collapsed expander whose contents are drawn only while it is open (opening it runs the page
    again): the expander to draw into, or None while it is closed. For what a visit need not pay for:
    a chart's browser module, a long table, a computation. With `kept`, one left open is open again on
    the page's next visit (Streamlit forgets a widget's state when a run does not draw it)."""
    remembered = f"{key}_kept"
    expanded = kept and bool(st.session_state.get(remembered, False))
    box = st.expander(label, expanded=expanded, key=key, icon=icon, on_change="rerun")
    if kept:
        st.session_state[remembered] = box.open
    return box if box.open else None


def scroll_to_top(count: int) -> None:
    """Bring the page back to its top once drawn (Streamlit keeps the scroll position across runs, so a
    result drawn at the top of a long page stays out of view). `count` differs between two runs that ask
    for it (the browser runs a script only when it is new)."""
    script = filled("to_top.js")
    st.html(f"<script>/* {int(count)} */{script}</script>", unsafe_allow_javascript=True)


def show_rubric(rubric: list[dict[str, Any]]) -> None:
    """The user's rubric, numbered: each aspect with its reason and evidence quote (as text)."""
    for number, aspect in enumerate(rubric, start=1):
        line = f"{number}. **{safe_md(aspect.get('aspect', ''))}**"
        if aspect.get("reason"):
            line += f": {safe_md(aspect['reason'])}"
        if aspect.get("evidence"):
            line += f"  \n*Evidence:* “{safe_md(aspect['evidence'])}”"
        st.markdown(line)


def two_texts(noun: str, text_a: str, text_b: str) -> None:
    """Two texts side by side under the headings "`noun` A" and "`noun` B" (each rendered as text)."""
    for column, side, text in zip(st.columns(2), "AB", (text_a, text_b), strict=True):
        with column:
            st.markdown(f"**{noun} {side}**")
            st.markdown(safe_md(text))


def requested(
    pending_key: str,
    request: object,
    label: str,
    *,
    key: str,
    check: Callable[[], object] | None = None,
    **button: Any,
) -> bool:
    """The first step of an action that asks for a confirm: True when `request` waits in session state
    `pending_key` (the caller then asks with :func:`confirmed`). A waiting request that differs from
    `request` (the settings changed since) is dropped; with none waiting, the button (`label`, `key`,
    `button`'s options) sets it and draws the page again, after `check` (a UserError from it is shown
    and nothing is set)."""
    if st.session_state.get(pending_key) not in (None, request):
        st.session_state.pop(pending_key, None)
    if st.session_state.get(pending_key) is not None:
        return True
    if st.button(label, key=key, **button):
        if check is not None:
            try:
                check()
            except UserError as exc:
                st.error(safe_md(exc), icon=":material/error:")
                return False
        st.session_state[pending_key] = request
        st.rerun()
    return False


def confirmed(question: str, label: str, *, pending_key: str, key: str) -> bool:
    """Ask `question` with a Confirm button (`label`) and a Cancel button under it, for the request
    waiting in session state `pending_key`. True when Confirm was pressed (the request is then dropped
    and the caller carries it out, in the question's place: it is cleared); Cancel drops it and draws the
    page again."""
    box = st.empty()
    with box.container():
        st.warning(question, icon=":material/help:")
        yes, no = st.columns(2)
        pressed = yes.button(label, type="primary", key=f"{key}_confirm")
        cancelled = no.button("Cancel", key=f"{key}_cancel")
    if pressed:
        st.session_state.pop(pending_key, None)
        box.empty()
    elif cancelled:
        st.session_state.pop(pending_key, None)
        st.rerun()
    return pressed


#: The study a researcher works on, shared by every page's picker.
CURRENT_STUDY_KEY = "researcher_study"
#: A page address's study, so that a reload opens the same one (not "study": a crowd link's parameter).
STUDY_PARAM = "study_name"


def choose_study(key: str = "study") -> str | None:
    """A study picker for researchers and adjudicators (None, with a hint, when there is no study). It
    opens on the study chosen last on any page (then the one in the address, which a reload keeps), so
    moving between pages or reloading never switches the study."""
    from annotator.review.study_progress import study_names

    with session() as active:
        names = study_names(active)
    if not names:
        st.info("No study yet: import pairs on the Data page (or with `annotator import`).")
        return None
    current = st.session_state.get(CURRENT_STUDY_KEY) or st.query_params.get(STUDY_PARAM)
    if key not in st.session_state and current in names:
        st.session_state[key] = current
    name = st.selectbox("Study", names, key=key)
    st.session_state[CURRENT_STUDY_KEY] = name
    if st.query_params.get(STUDY_PARAM) != name:
        st.query_params[STUDY_PARAM] = name
    apply_study_theme(name)
    return name


def study_page(title: str, key: str) -> tuple[Account, str | None]:
    """The start of a researcher's study page: the role check, the title and the study picker (`key`).
    Returns the account and the chosen study (None when there is no study yet)."""
    account = require("researcher")
    st.title(title)
    return account, choose_study(key)


def apply_study_theme(study: str | int) -> None:
    """Draw the theme the study's [display] section sets ("system": nothing; unknown study: nothing)."""
    try:
        with session() as active:
            theme = study_config(active, study).display.theme
    except UserError:
        return
    apply_theme(theme)
