"""The researcher pages' tables: a static table's long text column keeps a width that reads as lines
of words, not a word per line."""

import pandas as pd
import pytest

from annotator.app.tables import LONG_TEXT, _text_widths

pytestmark = pytest.mark.nodb


def test_only_long_text_columns_get_a_width_that_grows_with_their_longest_cell() -> None:
    frame = pd.DataFrame(
        {
            "pair": ["p1", "p2"],
            "note": ["short", "x" * 60],
            "evidence": ["y" * 200, "z"],
            "score": [0.123456789012345678901234567890123456789012345, 1.0],
        }
    )
    widths = _text_widths(frame, dict.fromkeys(frame.columns, str))
    assert set(widths) == {"note", "evidence"}  # numbers keep their own width, however long printed
    assert widths["note"] == "min(20em, 80vw)"
    assert widths["evidence"] == "min(30em, 80vw)"  # at most 30 em
    just = pd.DataFrame({"t": ["w" * (LONG_TEXT + 1)]})
    assert _text_widths(just, {"t": str}) == {"t": "min(14em, 80vw)"}  # at least 14 em
    assert _text_widths(pd.DataFrame({"t": ["w" * LONG_TEXT]}), {"t": str}) == {}
