"""Result tables and plots on the researcher's pages: labelled columns, units, rounded numbers, empty
cells (never None or NaN), and every plot with a title, axis labels and a caption under it."""

import re
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import pandas as pd
import streamlit as st

from analysis.readable import cell, whole
from analysis.readable import labels as column_labels

_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character


def plain_md(text: str) -> str:
    """Text that Markdown shows exactly as typed: every ASCII punctuation character backslash-escaped
    (CommonMark), line breaks as spaces. st.table renders Markdown in its cells; pair, judge and
    annotator texts must stay text there (no link, image, emphasis, LaTeX or directive)."""
    return _PUNCTUATION.sub(r"\\\1", text.replace("\r", " ").replace("\n", " "))


def _shown(value: Any, *, column: str, digits: int, integers: bool) -> str:
    return plain_md(cell(value, column, digits=digits, integers=integers))


def _as_text(value: Any, *, column: str, digits: int, integers: bool) -> str:
    return cell(value, column, digits=digits, integers=integers)


#: Tables longer than this are drawn as a grid (sortable, scrolls inside itself) instead of a static table.
STATIC_ROWS = 25

#: A static table's text column whose longest cell is longer than this many characters keeps a width
#: that reads as lines of words (the table scrolls sideways), instead of a word per line.
LONG_TEXT = 40


def _text_widths(frame: pd.DataFrame, texts: Mapping[Any, Any]) -> dict[Any, str]:
    """Each long text column's CSS min-width: about a third of its longest cell (as `texts` writes it,
    Markdown escapes included) in em, 14 to 30 em, and never wider than most of a phone's screen."""
    widths = {}
    for name in frame.columns:
        longest = max((len(texts[name](value)) for value in frame[name]), default=0)
        if longest > LONG_TEXT and not pd.api.types.is_numeric_dtype(frame[name]):
            widths[name] = f"min({min(max(longest // 3, 14), 30)}em, 80vw)"
    return widths


def labelled(df: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The chosen columns (those that exist, in order) under the reader's labels; values unchanged."""
    shown = [c for c in (columns or list(df.columns)) if c in df.columns]
    out = df[shown].reset_index(drop=True)
    out.columns = column_labels(shown)
    return out


def show_table(
    df: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    digits: int = 2,
    key: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> None:
    """A table a person reads: labelled columns, rounded numbers, empty cells for missing values.

    Short tables are static (they wrap to the page's width: no column is cut off); long ones are a
    sortable grid whose numbers stay numbers. `labels` overrides a column's label on this table.
    """
    shown = [c for c in (columns or list(df.columns)) if c in df.columns]
    frame = labelled(df, shown)
    if labels:
        frame.columns = [labels.get(c, name) for c, name in zip(shown, frame.columns, strict=True)]
    static = len(frame) <= STATIC_ROWS
    show = _shown if static else _as_text  # st.table renders Markdown in cells; st.dataframe does not
    formats: dict[Any, Any] = {
        name: partial(show, column=column, digits=digits, integers=whole(df[column]))
        for column, name in zip(shown, frame.columns, strict=True)
    }
    styled = frame.style.format(formats, na_rep="").hide(axis="index")
    if static:
        for name, width in _text_widths(frame, formats).items():
            styled = styled.set_properties(subset=[name], **{"min-width": width})
        st.table(styled)
    else:
        st.dataframe(styled, hide_index=True, width="stretch", key=key)


def show_plot(svg: str, caption: str) -> None:
    """A figure as an SVG image (it carries its own title and axis labels; the caption is its text
    alternative) and the caption saying what it shows."""
    st.image(svg, alt=caption)
    st.caption(caption)
