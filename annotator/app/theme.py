"""The study's theme ([display] theme): "system" leaves Streamlit following the browser's light/dark
setting; "light" or "dark" fix the colours of that study's pages.

Streamlit 1.67 chooses its theme in the browser (the viewer's setting, else the system's) and offers
no per-session theme from Python (`st.context.theme` only reads it; `theme.base` is one setting for
the whole server). So a fixed theme is a small style sheet over Streamlit's colours (static/theme.css),
drawn on the pages that belong to a study (the rating page, and every page with a study picker).
"""

import streamlit as st

from annotator.app.assets import filled

#: Streamlit's own palette of its light and dark themes: background, secondary background, text,
#: muted text (captions), borders.
PALETTES: dict[str, dict[str, str]] = {
    "light": {"bg": "#ffffff", "bg2": "#f0f2f6", "text": "#31333f", "muted": "#4a5160", "line": "#d5d7de"},
    "dark": {"bg": "#0e1117", "bg2": "#262730", "text": "#fafafa", "muted": "#c3c7d2", "line": "#4a4c57"},
}


def theme_css(theme: str) -> str:
    """The style sheet that fixes `theme` ("light" or "dark"); empty for "system"."""
    palette = PALETTES.get(theme)
    if palette is None:
        return ""
    return f"<style>\n{filled('theme.css', scheme=theme, **palette)}\n</style>"


def apply_theme(theme: str) -> None:
    """Draw a fixed theme on this page (nothing for "system")."""
    css = theme_css(theme)
    if css:
        st.html(css)
