"""Entry router: the page list depends on the logged-in role (a page a role may not see is not registered)."""

from pathlib import Path

import streamlit as st

from annotator.app import prefetch
from annotator.app.assets import filled
from annotator.app.common import FAVICON, PAGES, current_account, database_down, log_out, sync_cookie
from annotator.app.link_login import CROWD_LINK, link_login
from annotator.app.panes import focusable_panes
from annotator.errors import UserError

# A local icon: a Material or emoji icon would be fetched from an external font host on every page.
st.set_page_config(page_title="Pair Studio", page_icon=str(FAVICON), layout="wide")


#: Every role's pages in menu order (file in views/, title, Material icon); the first is the role's
#: start page. A page a role may not open is not registered for it.
GUIDELINES = ("guidelines.py", "Guidelines", "menu_book")
ROLE_PAGES: dict[str, list[tuple[str, str, str]]] = {
    "annotator": [
        ("annotate.py", "Rate pairs", "rate_review"),
        ("my_work.py", "My work", "history"),
        ("training.py", "Training", "school"),
        GUIDELINES,
    ],
    "adjudicator": [("adjudicate.py", "Adjudicate", "gavel"), GUIDELINES],
    "researcher": [
        ("progress.py", "Progress", "monitoring"),
        ("validation.py", "Validation", "verified"),
        ("annotators.py", "Annotators", "group"),
        ("owner_links.py", "Owner links", "person"),
        ("adjudicate.py", "Adjudicate", "gavel"),
        ("data.py", "Import and assign", "database"),
        ("settings.py", "Study settings", "tune"),
        ("downloads.py", "Downloads", "download"),
        GUIDELINES,
    ],
}


def page(file: str, title: str, icon: str, *, default: bool = False) -> st.Page:
    """A page from a file in views/ (AppTest's switch_page needs file pages). The default page is
    served at the root address; its own name is left to the hidden copy at the page's address."""
    path = str(PAGES / file)
    if default:
        return st.Page(path, title=title, icon=f":material/{icon}:", url_path="start", default=True)
    return st.Page(path, title=title, icon=f":material/{icon}:")


def role_pages(role: str) -> list[st.Page]:
    """The pages a role may open, its start page first; nothing else is registered for it.

    The start page is served at the root address; it is also registered, hidden, at its own address
    (e.g. /progress), so that a link to it or a reload there opens it, never "Page not found"."""
    start, *others = ROLE_PAGES[role]
    file, title, _ = start
    alias = st.Page(str(PAGES / file), title=title, url_path=Path(file).stem, visibility="hidden")
    return [page(*start, default=True), *(page(*spec) for spec in others), alias]


def login_pages() -> list[st.Page]:
    """The login page, also (hidden) at every other page's address: a link to a page opens the login,
    and after it the page, never "Page not found"."""
    addresses = sorted({Path(file).stem for specs in ROLE_PAGES.values() for file, _, _ in specs})
    hidden = [
        st.Page(str(PAGES / "login.py"), title="Log in", url_path=address, visibility="hidden")
        for address in addresses
    ]
    return [page("login.py", "Log in", "login", default=True), *hidden]


def run_pages() -> None:
    """Take a login link, if any; route by role and run the chosen page."""
    if current_account() is None or CROWD_LINK in st.query_params:  # a signed-in worker back by the link too
        link_login()
    account = current_account()
    owner_page = any(key in st.query_params for key in ("owner_token", "owner_session"))
    logging_in = False
    if account is None and (owner_page or "owner_session" in st.session_state):
        navigation = st.navigation(
            [page("owner.py", "Your pairs", "person", default=True)]
        )  # a profile owner
    elif account is None:
        navigation = st.navigation(login_pages())
        logging_in = True
    else:
        # One flat list: Streamlit draws section headers inside the nav's <ul>, which screen readers reject.
        navigation = st.navigation(role_pages(account.role))
        with st.sidebar:
            st.caption(f"Signed in as **{account.username}** · {account.role}")
            if st.button("Log out", key="logout", icon=":material/logout:"):
                log_out()
                st.rerun()
    sync_cookie()
    st.html(f"<style>\n{filled('accessible.css')}\n</style>")  # captions with contrast (WCAG AA)
    prefetch.settled()  # a page never imports beside a prefetch
    navigation.run()
    if account is not None and account.role in ("researcher", "adjudicator"):
        focusable_panes({})  # tables that scroll sideways on a phone take the keyboard focus
        # the role's other pages open without paying for their imports on their first visit
        prefetch.start(account.role, [PAGES / file for file, _, _ in ROLE_PAGES[account.role]])
    elif logging_in:
        # while someone types a password, the start pages that draw tables get their imports (pandas):
        # a researcher's landing does not wait for them (an idle server and a crowd by link never import)
        prefetch.start("login", [PAGES / ROLE_PAGES[role][0][0] for role in ("researcher", "adjudicator")])


# A database fault (PostgreSQL down, a lost connection) or a mistake no page caught is one clear
# message in place of the page, never Streamlit's error box; after an outage the page comes back by
# itself (database_down polls the database).
body = st.empty()
try:
    with body.container():
        run_pages()
except Exception as exc:
    body.empty()
    cause = exc.__cause__ if isinstance(exc, UserError) else exc  # e.g. "cannot open the database"
    if not database_down(cause or exc):
        if not isinstance(exc, UserError):
            raise
        st.error(str(exc), icon=":material/error:")
