"""Adjudication queue."""

import streamlit as st

from annotator.app.common import require

require("adjudicator")
st.title("Adjudicate")
st.info("The adjudication queue arrives with the adjudication pages.")
