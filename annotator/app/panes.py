"""Scrolling panes a keyboard can reach: each takes the focus (Tab), scrolls with the arrow keys and
says what it holds (a named region), as axe's scrollable-region-focusable rule asks. Static tables
that scroll sideways on a narrow screen get the same, and every table or grid wider than its box gets a
note under it saying that it scrolls sideways (static/panes.js, static/accessible.css)."""

import json
from collections.abc import Mapping

import streamlit as st

from annotator.app.assets import filled


def focusable_panes(panes: Mapping[str, str]) -> None:
    """Make the containers with these keys (key -> what the pane holds) keyboard-focusable regions."""
    for key in panes:
        if not key.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"not a widget key: {key!r}")
    script = filled("panes.js", panes=json.dumps(dict(panes)))
    st.html(f"<script>\n{script}\n</script>", unsafe_allow_javascript=True)
