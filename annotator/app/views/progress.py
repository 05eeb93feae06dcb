"""Progress: per annotator and per pair, stalled items, and judgments over time."""

import plotly.express as px
import streamlit as st

from annotator import dashboard
from annotator.app.common import choose_study, require, session

account = require("researcher")
st.title("Progress")
study = choose_study("progress_study")
if study is not None:
    with session() as active:
        people = dashboard.annotator_progress(active, study=study, account=account)
        pairs = dashboard.pair_completion(active, study=study, account=account)
        stalled = dashboard.stalled_assignments(active, study=study, account=account)
        timeline = dashboard.judgments_over_time(active, study=study, account=account)
    done, assigned = int(people["done"].sum()), int(people["assigned"].sum())
    columns = st.columns(4)
    columns[0].metric("Pairs", len(pairs))
    columns[1].metric("Judgments done", f"{done} / {assigned}")
    columns[2].metric("Pairs complete", int((pairs["done"] >= pairs["assigned"]).sum()) if len(pairs) else 0)
    columns[3].metric("Stalled items", len(stalled))
    st.subheader("Annotators")
    st.dataframe(people, hide_index=True, width="stretch")
    if not timeline.empty:
        timeline = timeline.sort_values("submitted_at").assign(judgments=1)
        timeline["judgments"] = timeline.groupby("annotator")["judgments"].cumsum()
        st.plotly_chart(
            px.line(
                timeline, x="submitted_at", y="judgments", color="annotator", title="Judgments over time"
            ),
            width="stretch",
        )
    st.subheader("Pairs")
    st.dataframe(pairs, hide_index=True, width="stretch")
    if not stalled.empty:
        st.subheader("Stalled (shown more than a day ago, not submitted)")
        st.dataframe(stalled, hide_index=True)
