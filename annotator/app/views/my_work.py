"""My work: the annotator's finished items; reopening one and submitting again adds a revision."""

import uuid

import streamlit as st

from annotator import labels
from annotator.app.common import require, safe_md, session

account = require("annotator")
st.title("My work")
with session() as active:
    studies = labels.annotator_studies(active, user_id=account.id)
    items = [
        (name, row)
        for study_id, name in studies
        for row in labels.finished_items(active, user_id=account.id, study_id=study_id)
    ]
if not items:
    st.info("You have not finished any item yet.")
for number, (study_name, row) in enumerate(items, start=1):
    with st.container(border=True):
        left, right = st.columns([5, 1], vertical_alignment="center")
        question = row["question"] if len(row["question"]) < 160 else row["question"][:157] + "..."
        left.markdown(f"**{number}.** {safe_md(question)}")
        left.caption(
            f"{study_name} · finished {row['completed_at']:%Y-%m-%d %H:%M} · {row['revisions']} revision(s)"
        )
        if right.button("Reopen", key=f"reopen_{row['assignment_id']}", icon=":material/edit:"):
            with session() as active:
                st.session_state["annotate_item"] = labels.show(
                    active, assignment_id=row["assignment_id"], user_id=account.id
                )
                st.session_state["annotate_prefill"] = labels.current_answers(
                    active, assignment_id=row["assignment_id"], user_id=account.id
                )
            st.session_state["submission_id"] = uuid.uuid4().hex
            st.switch_page("views/annotate.py")
