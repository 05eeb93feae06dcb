"""Progress: per annotator and per pair, stalled and flagged items, and judgments over time."""

import plotly.express as px
import streamlit as st

from annotator import crowd, study_progress, workspace
from annotator.app.common import choose_study, require, session

account = require("researcher")
st.title("Progress")
study = choose_study("progress_study")
if study is not None:
    with session() as active:
        people = study_progress.annotator_progress(active, study=study, account=account)
        pairs = study_progress.pair_completion(active, study=study, account=account)
        stalled = study_progress.stalled_assignments(active, study=study, account=account)
        timeline = study_progress.judgments_over_time(active, study=study, account=account)
        flagged = workspace.flagged_items(active, study=study, account=account)
        workers = crowd.outcomes(active, study=study, account=account)
    summary = study_progress.study_summary(people, pairs, stalled)
    columns = st.columns(5)
    columns[0].metric("Pairs", summary["pairs"])
    columns[1].metric("Judgments done", f"{summary['done']} / {summary['assigned']}")
    columns[2].metric("Pairs complete", summary["complete"])
    columns[3].metric("Stalled items", summary["stalled"])
    columns[4].metric("Flagged as broken", len(flagged))
    if not flagged.empty:
        st.subheader("Flagged by annotators (out of their queues)")
        st.dataframe(flagged, hide_index=True, width="stretch")
    if not workers.empty:
        st.subheader("Crowd workers (completion code, or no credit and why)")
        st.dataframe(workers, hide_index=True, width="stretch")
    st.subheader("Annotators")
    st.dataframe(people, hide_index=True, width="stretch")
    if not timeline.empty:
        st.plotly_chart(
            px.line(
                study_progress.cumulative_judgments(timeline),
                x="submitted_at",
                y="judgments",
                color="annotator",
                title="Judgments over time",
            ),
            width="stretch",
        )
    st.subheader("Pairs")
    st.dataframe(pairs, hide_index=True, width="stretch")
    if not stalled.empty:
        st.subheader("Stalled (shown more than a day ago, not submitted)")
        st.dataframe(stalled, hide_index=True)
