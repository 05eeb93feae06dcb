"""The study's theme ([display] theme): "system" leaves Streamlit following the browser's light/dark
setting; "light" or "dark" fix the colours of that study's pages.

Streamlit 1.67 chooses its theme in the browser (the viewer's setting, else the system's) and offers
no per-session theme from Python (`st.context.theme` only reads it; `theme.base` is one setting for
the whole server). So a fixed theme is a small style sheet over Streamlit's colours, drawn on the
pages that belong to a study (the rating page, and every page with a study picker).
"""

import streamlit as st

#: Streamlit's own palette of its light and dark themes: background, secondary background, text,
#: muted text (captions), borders.
PALETTES: dict[str, dict[str, str]] = {
    "light": {"bg": "#ffffff", "bg2": "#f0f2f6", "text": "#31333f", "muted": "#4a5160", "line": "#d5d7de"},
    "dark": {"bg": "#0e1117", "bg2": "#262730", "text": "#fafafa", "muted": "#c3c7d2", "line": "#4a4c57"},
}

_CSS = """<style>
:root { color-scheme: __SCHEME__; }
.stApp, [data-testid="stHeader"], [data-testid="stBottom"] > div {
  background-color: __BG__; color: __TEXT__;
}
[data-testid="stSidebar"], [data-testid="stSidebarContent"] { background-color: __BG2__; color: __TEXT__; }
.stApp h1, .stApp h2, .stApp h3, .stApp h4, .stApp h5, .stApp p, .stApp li, .stApp label,
.stApp span, .stApp summary, .stApp [data-testid="stMarkdownContainer"] { color: __TEXT__; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] * { color: __MUTED__; }
.stApp button:not([kind="primary"]):not([kind$="Active"]), .stApp input, .stApp textarea,
.stApp [data-baseweb="select"] > div, .stApp [data-baseweb="input"], .stApp [data-baseweb="textarea"],
.stApp [data-testid="stExpander"] details, .stApp [data-testid="stVerticalBlockBorderWrapper"] {
  background-color: __BG__; color: __TEXT__; border-color: __LINE__;
}
.stApp [data-testid="stExpander"] summary, .stApp [data-baseweb="popover"] li { background-color: __BG__; }
.stApp [data-testid="stDataFrame"], .stApp code { background-color: __BG2__; color: __TEXT__; }
.stApp [data-testid="stAlertContainer"] { background-color: rgba(28, 131, 225, 0.16); }
.stApp [data-testid="stAlertContainer"]:has([data-testid="stAlertContentSuccess"]) {
  background-color: rgba(33, 195, 84, 0.16);
}
.stApp [data-testid="stAlertContainer"]:has([data-testid="stAlertContentWarning"]) {
  background-color: rgba(255, 189, 69, 0.2);
}
.stApp [data-testid="stAlertContainer"]:has([data-testid="stAlertContentError"]) {
  background-color: rgba(255, 43, 43, 0.16);
}
.stApp [data-testid="stAlertContainer"] * { color: __TEXT__; }
</style>"""


def theme_css(theme: str) -> str:
    """The style sheet that fixes `theme` ("light" or "dark"); empty for "system"."""
    palette = PALETTES.get(theme)
    if palette is None:
        return ""
    css = _CSS.replace("__SCHEME__", theme)
    for name, colour in palette.items():
        css = css.replace(f"__{name.upper()}__", colour)
    return css


def apply_theme(theme: str) -> None:
    """Draw a fixed theme on this page (nothing for "system")."""
    css = theme_css(theme)
    if css:
        st.html(css)
