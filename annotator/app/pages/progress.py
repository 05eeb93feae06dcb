"""Researcher home: studies and their progress."""

import streamlit as st

from annotator.app.common import require

require("researcher")
st.title("Progress")
st.info("Study dashboards arrive with the researcher pages.")
