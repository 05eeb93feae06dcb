"""Annotators: diagnostics (agreement with the others, straight-lining, speed), deactivate, reassign."""

import streamlit as st

from analysis.diagnostics import annotator_diagnostics
from annotator import accounts, dashboard
from annotator.app.common import choose_study, require, session
from annotator.errors import UserError
from annotator.readers import label_frame

account = require("researcher")
st.title("Annotators")
study = choose_study("annotators_study")
if study is not None:
    with session() as active:
        frame = label_frame(active, study=study, account=account)
        progress = dashboard.annotator_progress(active, study=study, account=account)
    if frame.empty:
        st.info("No judgments yet.")
    else:
        st.dataframe(annotator_diagnostics(frame), hide_index=True, width="stretch")
        st.caption(
            "loo_spearman: agreement with the mean of the other annotators; straightlining: share of "
            "judgments with one value on every quality scale; share_fast: judgments under 10 s."
        )
    st.subheader("Manage")
    names = list(progress["annotator"]) if not progress.empty else []
    if names:
        name = st.selectbox("Annotator", names, key="annotators_name")
        left, right = st.columns(2)
        if left.button("Deactivate account", key="annotators_deactivate"):
            try:
                with session() as active:
                    accounts.set_active(active, username=name, active=False, account=account)
                st.success(f"{name} can no longer log in; their labels are kept.")
            except UserError as exc:
                st.error(str(exc))
        if right.button("Reassign open items", key="annotators_reassign"):
            try:
                with session() as active:
                    moved = dashboard.reassign_open(active, account=account, study=study, username=name)
                st.success(f"moved {moved} open item(s) from {name}")
            except UserError as exc:
                st.error(str(exc))
