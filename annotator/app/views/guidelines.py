"""The annotator guidelines; annotators acknowledge them once before their first item."""

import streamlit as st

from annotator.app.common import require, safe_md, session
from annotator.people import accounts
from annotator.rating.guidelines import guidelines_text


def split_title(text: str) -> tuple[str, str]:
    """The guidelines' own first-level heading (the page's one h1) and the rest of the text."""
    first, _, rest = text.lstrip().partition("\n")
    if first.startswith("# "):
        return first[2:].strip(), rest
    return "Guidelines", text


def main() -> None:
    account = require("annotator", "adjudicator", "researcher")
    title, body = split_title(guidelines_text())
    st.title(safe_md(title), anchor=False)
    st.markdown(safe_md(body))
    if account.role == "annotator":
        with session() as active:
            done = accounts.has_acknowledged(active, account=account)
        if done:
            st.success("You have acknowledged these guidelines.", icon=":material/check_circle:")
        elif st.button("I have read the guidelines", type="primary", key="ack_guidelines"):
            with session() as active:
                accounts.acknowledge_guidelines(active, account=account)
            st.switch_page("views/annotate.py")


main()
