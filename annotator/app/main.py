"""Entry router: the page list depends on the logged-in role (a page a role may not see is not registered)."""

import streamlit as st

from annotator.app.common import FAVICON, PAGES, current_account, log_out, sync_cookie

# A local icon: a Material or emoji icon would be fetched from an external font host on every page.
st.set_page_config(page_title="Pair Studio", page_icon=str(FAVICON), layout="wide")


def page(file: str, title: str, icon: str, *, default: bool = False) -> st.Page:
    """A page from a file in views/ (AppTest's switch_page needs file pages)."""
    return st.Page(str(PAGES / file), title=title, icon=f":material/{icon}:", default=default)


def role_pages(role: str) -> dict[str, list[st.Page]]:
    """The pages a role may open; nothing else is registered for it."""
    guidelines = page("guidelines.py", "Guidelines", "menu_book")
    if role == "annotator":
        return {
            "Annotate": [
                page("annotate.py", "Rate pairs", "rate_review", default=True),
                page("my_work.py", "My work", "history"),
                guidelines,
            ]
        }
    if role == "adjudicator":
        return {"Adjudicate": [page("adjudicate.py", "Adjudicate", "gavel", default=True), guidelines]}
    return {
        "Study": [
            page("progress.py", "Progress", "monitoring", default=True),
            page("validation.py", "Validation", "verified"),
            page("annotators.py", "Annotators", "group"),
            page("adjudicate.py", "Adjudicate", "gavel"),
        ],
        "Data": [
            page("data.py", "Import and assign", "database"),
            page("downloads.py", "Downloads", "download"),
            guidelines,
        ],
    }


account = current_account()
if account is None:
    navigation = st.navigation([page("login.py", "Log in", "login", default=True)])
else:
    navigation = st.navigation(role_pages(account.role))
    with st.sidebar:
        st.caption(f"Signed in as **{account.username}** · {account.role}")
        if st.button("Log out", key="logout", icon=":material/logout:"):
            log_out()
            st.rerun()
sync_cookie()
navigation.run()
