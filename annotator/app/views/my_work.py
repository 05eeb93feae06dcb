"""My work: the annotator's finished items; reopening one and submitting again adds a revision."""

import streamlit as st

from annotator import labels
from annotator.app.common import ITEM_KEY, REOPEN_KEY, require, safe_md, session


def revisions(n: int) -> str:
    """ "submitted once", "revised once", "revised 2 times" (revisions counts every submission)."""
    if n <= 1:
        return "submitted once"
    return "revised once" if n == 2 else f"revised {n - 1} times"


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
            f"{safe_md(study_name)} · finished {row['completed_at']:%Y-%m-%d %H:%M} · "
            + revisions(int(row["revisions"]))
        )
        if right.button("Reopen", key=f"reopen_{number}", icon=":material/edit:"):
            st.session_state.pop(ITEM_KEY, None)
            st.session_state[REOPEN_KEY] = int(row["assignment_id"])
            st.switch_page("views/annotate.py")
