"""The tidy long label frame and its per-pair aggregates.

One row per score. The database export (``annotator/export.py``) produces this frame, and
:func:`read_labels` reads it back from an exported file. Every statistic in ``analysis`` starts here.

Columns
-------
pair_id : str
    The pair's external id.
annotator : str
    The annotator's user name.
response : {"chosen", "rejected"}
    Which response the score is about (resolved from the A/B side on the server).
item : str
    A quality dimension (default ``correctness``, ``relevance``, ``helpfulness``, scale 1-5) or
    ``rubric:<k>`` for rubric aspect ``k`` (0-based, value 0/1/2).
value : float
    The score.
preference : int
    Judgment level, repeated on every row of the judgment: -2..2, positive = chosen preferred, 0 = tie.
confidence : int or NaN
    Judgment level: 1..3, may be missing.
time_s : float
    Judgment level: seconds on task (server-measured).
category, judgment_id : optional
    Kept when present.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "ANNOTATOR",
    "CATEGORY",
    "CHOSEN",
    "CONFIDENCE",
    "ITEM",
    "JUDGMENT_COLUMNS",
    "JUDGMENT_ID",
    "PAIR_ID",
    "PREFERENCE",
    "QUALITY_ITEMS",
    "REJECTED",
    "REQUIRED_COLUMNS",
    "RESPONSE",
    "RUBRIC_ITEM",
    "RUBRIC_PREFIX",
    "TIME_S",
    "VALUE",
    "add_rubric_means",
    "judgments",
    "pair_means",
    "read_labels",
    "validate_frame",
]

PAIR_ID = "pair_id"
ANNOTATOR = "annotator"
RESPONSE = "response"
ITEM = "item"
VALUE = "value"
PREFERENCE = "preference"
CONFIDENCE = "confidence"
TIME_S = "time_s"
CATEGORY = "category"
JUDGMENT_ID = "judgment_id"

CHOSEN = "chosen"
REJECTED = "rejected"
RESPONSES = (CHOSEN, REJECTED)

#: The general-quality dimensions of the default study (scale 1-5).
QUALITY_ITEMS: tuple[str, ...] = ("correctness", "relevance", "helpfulness")
#: The item holding the per-response rubric score (mean over the ``rubric:<k>`` aspects).
RUBRIC_ITEM = "rubric"
#: Prefix of a rubric-aspect item: ``rubric:0``, ``rubric:1``, ...
RUBRIC_PREFIX = "rubric:"

REQUIRED_COLUMNS: tuple[str, ...] = (
    PAIR_ID,
    ANNOTATOR,
    RESPONSE,
    ITEM,
    VALUE,
    PREFERENCE,
    CONFIDENCE,
    TIME_S,
)
#: Columns that describe a whole judgment (one per pair and annotator).
JUDGMENT_COLUMNS: tuple[str, ...] = (PREFERENCE, CONFIDENCE, TIME_S)
_OPTIONAL_JUDGMENT_COLUMNS = (CATEGORY, JUDGMENT_ID)
_KEY = [PAIR_ID, ANNOTATOR, RESPONSE, ITEM]


def _show(values: pd.Series | np.ndarray, limit: int = 5) -> str:
    """Render the first distinct offending values for an error message."""
    uniq = list(dict.fromkeys(np.asarray(values, dtype=object).tolist()))
    shown = ", ".join(repr(v) for v in uniq[:limit])
    return shown + (", ..." if len(uniq) > limit else "")


def _numeric(df: pd.DataFrame, column: str, *, allow_missing: bool) -> pd.Series:
    """Convert ``column`` to float, raising a clear error for non-numeric or missing entries."""
    raw = df[column]
    num = pd.to_numeric(raw, errors="coerce").astype(float)
    bad = num.isna() & raw.notna()
    if bad.any():
        raise ValueError(f"column '{column}' has non-numeric values: {_show(raw[bad])}")
    if not allow_missing and num.isna().any():
        raise ValueError(f"column '{column}' has {int(num.isna().sum())} missing value(s)")
    return num


def _integers_in(num: pd.Series, column: str, lo: int, hi: int) -> None:
    """Raise if the non-missing values of ``num`` are not integers in ``lo..hi``."""
    present = num.dropna()
    bad = present[(present != np.round(present)) | (present < lo) | (present > hi)]
    if len(bad):
        raise ValueError(f"column '{column}' must hold integers in {lo}..{hi}, got: {_show(bad)}")


def validate_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Check a tidy label frame and return a clean copy with the contract's dtypes.

    Parameters
    ----------
    df : pandas.DataFrame
        The long label frame (one row per score), see the module docstring.

    Returns
    -------
    pandas.DataFrame
        A copy: ids and items as ``str``, ``value``/``confidence``/``time_s`` as float,
        ``preference`` as int. Extra columns are kept.

    Raises
    ------
    TypeError
        If ``df`` is not a DataFrame.
    ValueError
        Missing columns (all named), a response other than chosen/rejected, a non-numeric or
        missing value, a preference outside -2..2, a confidence outside 1..3, a negative time,
        a rubric-aspect value outside 0..2, or a duplicated (pair_id, annotator, response, item).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"pair_id": ["p1", "p1"], "annotator": ["ann", "ann"],
    ...     "response": ["chosen", "rejected"], "item": ["correctness"] * 2, "value": [4, 5],
    ...     "preference": [1, 1], "confidence": [2, 2], "time_s": [30.0, 30.0]})
    >>> validate_frame(df)["value"].tolist()
    [4.0, 5.0]
    >>> validate_frame(df.drop(columns=["time_s", "item"]))
    Traceback (most recent call last):
    ...
    ValueError: label frame is missing column(s): item, time_s
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"label frame is missing column(s): {', '.join(missing)}")
    out = df.copy()
    for col in (PAIR_ID, ANNOTATOR, RESPONSE, ITEM):
        if out[col].isna().any():
            raise ValueError(f"column '{col}' has {int(out[col].isna().sum())} missing value(s)")
        out[col] = out[col].astype(str)
    bad_resp = ~out[RESPONSE].isin(RESPONSES)
    if bad_resp.any():
        raise ValueError(
            f"column 'response' must be 'chosen' or 'rejected', got: {_show(out.loc[bad_resp, RESPONSE])}"
        )
    out[VALUE] = _numeric(out, VALUE, allow_missing=False)
    out[PREFERENCE] = _numeric(out, PREFERENCE, allow_missing=False)
    _integers_in(out[PREFERENCE], PREFERENCE, -2, 2)
    out[PREFERENCE] = out[PREFERENCE].astype(int)
    out[CONFIDENCE] = _numeric(out, CONFIDENCE, allow_missing=True)
    _integers_in(out[CONFIDENCE], CONFIDENCE, 1, 3)
    out[TIME_S] = _numeric(out, TIME_S, allow_missing=True)
    if (out[TIME_S] < 0).any():
        raise ValueError(f"column 'time_s' must be >= 0, got: {_show(out.loc[out[TIME_S] < 0, TIME_S])}")
    aspect = out[ITEM].str.startswith(RUBRIC_PREFIX)
    if aspect.any():
        _integers_in(out.loc[aspect, VALUE], "value (rubric aspects)", 0, 2)
    dup = out.duplicated(_KEY)
    if dup.any():
        raise ValueError(
            f"label frame has {int(dup.sum())} duplicate (pair_id, annotator, response, item) row(s)"
        )
    return out


def add_rubric_means(frame: pd.DataFrame) -> pd.DataFrame:
    """Add the per-response rubric score as item ``"rubric"``.

    The rubric score of a response in one judgment is the mean of its ``rubric:<k>`` aspect values
    (LaMP-QA's 0/1/2 per aspect). Existing ``"rubric"`` rows are replaced; a frame without rubric
    aspects is returned unchanged (as a copy).

    Parameters
    ----------
    frame : pandas.DataFrame
        A validated label frame.

    Returns
    -------
    pandas.DataFrame
        ``frame`` plus one ``"rubric"`` row per (pair_id, annotator, response) that has aspects.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"pair_id": "p1", "annotator": "ann", "response": ["chosen"] * 2,
    ...     "item": ["rubric:0", "rubric:1"], "value": [2.0, 1.0], "preference": 1,
    ...     "confidence": 3, "time_s": 12.0})
    >>> out = add_rubric_means(df)
    >>> out.loc[out["item"] == "rubric", "value"].tolist()
    [1.5]
    """
    base = frame[frame[ITEM] != RUBRIC_ITEM]
    aspects = base[base[ITEM].str.startswith(RUBRIC_PREFIX)]
    if aspects.empty:
        return base.copy()
    keys = [PAIR_ID, ANNOTATOR, RESPONSE]
    carry = [c for c in (*JUDGMENT_COLUMNS, *_OPTIONAL_JUDGMENT_COLUMNS) if c in aspects.columns]
    agg: dict[str, tuple[str, str]] = {VALUE: (VALUE, "mean")}
    agg.update({c: (c, "first") for c in carry})
    means = aspects.groupby(keys, sort=False, observed=True).agg(**agg).reset_index()
    means[ITEM] = RUBRIC_ITEM
    return pd.concat([base, means[[c for c in base.columns if c in means.columns]]], ignore_index=True)


def _item_rows(frame: pd.DataFrame, item: str) -> pd.DataFrame:
    """Rows of one item; the rubric item is derived from its aspects when absent."""
    rows = frame[frame[ITEM] == item]
    if rows.empty and item == RUBRIC_ITEM:
        rows = add_rubric_means(frame)
        rows = rows[rows[ITEM] == item]
    return rows


def pair_means(frame: pd.DataFrame, item: str) -> pd.DataFrame:
    """Per-pair means over annotators for one item, and the chosen-minus-rejected difference.

    Only judgments that scored both responses on ``item`` are used, so ``chosen`` and ``rejected``
    average over the same annotators.

    Parameters
    ----------
    frame : pandas.DataFrame
        A validated label frame.
    item : str
        A quality dimension, ``"rubric"`` (derived from the aspects if needed) or ``"rubric:<k>"``.

    Returns
    -------
    pandas.DataFrame
        Columns ``pair_id, chosen, rejected, diff, n_annotators``, one row per pair, sorted by pair.

    Raises
    ------
    ValueError
        If no row has ``item``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"pair_id": "p1", "annotator": ["a", "a", "b", "b"],
    ...     "response": ["chosen", "rejected"] * 2, "item": "relevance", "value": [5, 4, 4, 4],
    ...     "preference": 0, "confidence": 2, "time_s": 9.0})
    >>> pair_means(df, "relevance").to_dict("records")
    [{'pair_id': 'p1', 'chosen': 4.5, 'rejected': 4.0, 'diff': 0.5, 'n_annotators': 2}]
    """
    rows = _item_rows(frame, item)
    if rows.empty:
        raise ValueError(f"no scores for item '{item}'")
    wide = rows.pivot_table(
        index=[PAIR_ID, ANNOTATOR], columns=RESPONSE, values=VALUE, aggfunc="first", observed=True
    )
    for resp in RESPONSES:
        if resp not in wide.columns:
            wide[resp] = np.nan
    wide = wide[[CHOSEN, REJECTED]].dropna()
    grouped = wide.groupby(level=PAIR_ID, sort=True)
    out = grouped.mean()
    out["diff"] = out[CHOSEN] - out[REJECTED]
    out["n_annotators"] = grouped.size().astype(int)
    out = out.reset_index()
    out.columns.name = None
    return out[[PAIR_ID, CHOSEN, REJECTED, "diff", "n_annotators"]]


def judgments(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per judgment (pair_id, annotator) with its judgment-level columns.

    Parameters
    ----------
    frame : pandas.DataFrame
        A validated label frame.

    Returns
    -------
    pandas.DataFrame
        Columns ``pair_id, annotator, preference, confidence, time_s`` (plus ``category`` and
        ``judgment_id`` when present), sorted by pair and annotator.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"pair_id": "p1", "annotator": ["a", "a"], "response": ["chosen", "rejected"],
    ...     "item": "relevance", "value": [5, 4], "preference": 2, "confidence": 3, "time_s": 9.0})
    >>> judgments(df).to_dict("records")
    [{'pair_id': 'p1', 'annotator': 'a', 'preference': 2, 'confidence': 3, 'time_s': 9.0}]
    """
    cols = [PAIR_ID, ANNOTATOR, *JUDGMENT_COLUMNS]
    cols += [c for c in _OPTIONAL_JUDGMENT_COLUMNS if c in frame.columns]
    out = frame[cols].drop_duplicates([PAIR_ID, ANNOTATOR])
    return out.sort_values([PAIR_ID, ANNOTATOR], kind="stable").reset_index(drop=True)


def read_labels(path: str | Path) -> pd.DataFrame:
    """Read an exported labels file (``.csv``, ``.jsonl`` or ``.parquet``) into a validated frame.

    Parameters
    ----------
    path : str or pathlib.Path
        The file written by ``annotator export labels``.

    Returns
    -------
    pandas.DataFrame
        The output of :func:`validate_frame`.

    Raises
    ------
    ValueError
        For an unsupported file type or an invalid frame.

    Examples
    --------
    >>> import pandas as pd, tempfile, pathlib
    >>> df = pd.DataFrame({"pair_id": ["007"] * 2, "annotator": "ann", "response": ["chosen", "rejected"],
    ...     "item": "helpfulness", "value": [4, 4], "preference": 0, "confidence": None, "time_s": 5.0})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "labels.csv"
    ...     df.to_csv(path, index=False)
    ...     read_labels(path)["pair_id"].tolist()
    ['007', '007']
    """
    path = Path(path)
    suffix = path.suffix.lower()
    text_cols = dict.fromkeys((PAIR_ID, ANNOTATOR, RESPONSE, ITEM, CATEGORY, JUDGMENT_ID), str)
    if suffix == ".csv":
        df = pd.read_csv(path, dtype=text_cols)
    elif suffix in (".jsonl", ".ndjson"):
        df = pd.read_json(path, lines=True, dtype=text_cols)
    elif suffix in (".parquet", ".pq"):
        df = pd.read_parquet(path)
    else:
        raise ValueError(f"unsupported labels file type '{path.suffix}': use .csv, .jsonl or .parquet")
    return validate_frame(df)
