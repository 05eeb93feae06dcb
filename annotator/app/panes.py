"""Scrolling panes a keyboard can reach: each takes the focus (Tab), scrolls with the arrow keys and
says what it holds (a named region), as axe's scrollable-region-focusable rule asks. Static tables
that scroll sideways on a narrow screen get the same."""

import json
from collections.abc import Mapping

import streamlit as st

_SCRIPT = """<script>
(() => {
  window.__psPanes = Object.assign(window.__psPanes || {}, __PANES__);
  const name = (box, label) => {
    box.setAttribute('tabindex', '0');
    box.setAttribute('role', 'region');
    box.setAttribute('aria-label', label);
  };
  const mark = () => {
    for (const [key, label] of Object.entries(window.__psPanes)) {
      for (const pane of document.querySelectorAll('.st-key-' + key)) {
        if (pane.getAttribute('aria-label') !== label) name(pane, label);
      }
    }
    for (const box of document.querySelectorAll('[data-testid="stTable"] div')) {
      const style = getComputedStyle(box);
      const scrolls = box.scrollWidth > box.clientWidth + 1 || box.scrollHeight > box.clientHeight + 1;
      const scrollable = /(auto|scroll)/.test(style.overflowX + style.overflowY);
      if (scrolls && scrollable && !box.hasAttribute('tabindex')) {
        name(box, 'table (scrolls sideways)');
      }
    }
  };
  mark();
  if (window.__psPanesWatch) return;
  window.addEventListener('resize', mark);
  window.__psPanesWatch = new MutationObserver(mark);
  window.__psPanesWatch.observe(document.body, { childList: true, subtree: true });
})();
</script>"""


def focusable_panes(panes: Mapping[str, str]) -> None:
    """Make the containers with these keys (key -> what the pane holds) keyboard-focusable regions."""
    for key in panes:
        if not key.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"not a widget key: {key!r}")
    st.html(_SCRIPT.replace("__PANES__", json.dumps(dict(panes))), unsafe_allow_javascript=True)
