"""The annotator guidelines; annotators acknowledge them once before their first item."""

import streamlit as st

from annotator import accounts
from annotator.app.common import require, safe_md, session
from annotator.guidelines import guidelines_text

account = require("annotator", "adjudicator", "researcher")
st.markdown(safe_md(guidelines_text()))
if account.role == "annotator":
    with session() as active:
        done = accounts.has_acknowledged(active, user_id=account.id)
    if done:
        st.success("You have acknowledged these guidelines.", icon=":material/check_circle:")
    elif st.button("I have read the guidelines", type="primary", key="ack_guidelines"):
        with session() as active:
            accounts.acknowledge_guidelines(active, user_id=account.id)
        st.switch_page("views/annotate.py")
