"""The tidy long label frame: its columns, its checks (:func:`validate_frame`) and its column helpers.

One row per score. The database export (``annotator/publish/export.py``) produces this frame, and
:func:`analysis.label_files.read_labels` reads it back from an exported file; its per-judgment and
per-pair aggregates are in :mod:`analysis.aggregates`. Every statistic in ``analysis`` starts here.

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

Optional columns (the database reader writes them; a frame without them still works):

control : str
    ``""`` for a main pair, else ``"gold"``, ``"positive"``, ``"swap"``, ``"duplicate"`` or
    ``"training"``. Rows with a non-empty control never enter the main analysis. For ``"positive"``
    (a positive control) ``chosen`` is the intact response and ``rejected`` carries a planted quality
    defect; the report checks that the gap is detected.
arm : str
    A between-annotator study arm; the main analysis pools the arms.
side_chosen : {"A", "B"}
    Judgment level: the side on which the annotator saw ``chosen``.
chosen_chars, rejected_chars : float
    Pair level: the lengths of the two responses in characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import cast

import numpy as np
import pandas as pd

from analysis.vocabulary import (
    ANNOTATOR,
    ARM,
    CATEGORY,
    CHOSEN,
    CHOSEN_CHARS,
    CONFIDENCE,
    CONTROL,
    CONTROL_KINDS,
    ITEM,
    JUDGMENT_ID,
    NAME_CONTROLS,
    OWNER,
    PAIR_ID,
    PREFERENCE,
    QUALITY_ITEMS,
    RATER_KIND,
    RATER_KINDS,
    REJECTED,
    REJECTED_CHARS,
    RESPONSE,
    RESPONSES,
    RUBRIC_ITEM,
    RUBRIC_PREFIX,
    SIDE_CHOSEN,
    SUPPORT_PREFIX,
    TEXT_CONTROLS,
    TIME_S,
    VALUE,
)

__all__ = [
    "ANNOTATOR",
    "NotInStudy",
    "check_items",
    "check_rated",
    "check_unique_keys",
    "ARM",
    "CATEGORY",
    "CHOSEN",
    "CHOSEN_CHARS",
    "CONTROL",
    "CONTROL_KINDS",
    "CONFIDENCE",
    "ITEM",
    "JUDGMENT_COLUMNS",
    "JUDGMENT_ID",
    "KEY_COLUMNS",
    "OPTIONAL_JUDGMENT_COLUMNS",
    "PAIR_ID",
    "PREFERENCE",
    "QUALITY_ITEMS",
    "REJECTED",
    "REJECTED_CHARS",
    "REQUIRED_COLUMNS",
    "RESPONSE",
    "RUBRIC_ITEM",
    "RUBRIC_PREFIX",
    "SIDE_CHOSEN",
    "TIME_S",
    "VALUE",
    "as_text",
    "coded",
    "first_rows",
    "has_prefix",
    "shifted_rows",
    "split_controls",
    "unknown_item",
    "validate_frame",
]

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
#: Judgment-level columns a frame may have (carried along with a judgment).
OPTIONAL_JUDGMENT_COLUMNS = (CATEGORY, JUDGMENT_ID, CONTROL, ARM, SIDE_CHOSEN, CHOSEN_CHARS, REJECTED_CHARS)
#: The columns that identify one score.
KEY_COLUMNS = [PAIR_ID, ANNOTATOR, RESPONSE, ITEM]


def coded(values: pd.Series, *, with_empty: bool = False) -> pd.Series:
    """Text values as categorical codes over their sorted distinct texts (the frame's text columns).

    A value that is not text is held as its text (``str``); a missing value stays missing; with
    `with_empty`, ``""`` is a category even when no value is ``""`` (so ``fillna("")`` works). A
    column that already is categorical over sorted texts is returned as it is (no copy).

    >>> coded(pd.Series(["b", "a", "b", None])).cat.categories.tolist()
    ['a', 'b']
    >>> coded(pd.Series(["b", "a", "b", None])).cat.codes.tolist()
    [1, 0, 1, -1]
    """
    if values.dtype != object and pd.api.types.is_string_dtype(values.dtype):
        values = values.astype("category")  # text columns (a Parquet file's): coded without objects
    if isinstance(values.dtype, pd.CategoricalDtype):
        categories = values.cat.categories
        text_only = len(categories) == 0 or categories.inferred_type == "string"
        has_empty = not with_empty or categories[:1].tolist() == [""]  # "" sorts first
        if text_only and has_empty and categories.is_monotonic_increasing:
            return values  # sorted texts, checked without a Python string per category
        texts = categories.tolist()
        if text_only:
            wanted = sorted({*texts, ""} if with_empty else texts)
            return values if wanted == texts else values.cat.set_categories(wanted)
        values = values.astype(object)
    codes, uniques = pd.factorize(values.to_numpy(dtype=object))  # missing values get -1
    if all(isinstance(u, str) for u in uniques):  # text: the sorted categories from the distinct values
        order = sorted({*uniques, ""} if with_empty else set(uniques))
        rank = {text: k for k, text in enumerate(order)}
        remap = np.array([rank[u] for u in uniques] + [-1], dtype=np.int64)
        categorical = pd.Categorical.from_codes(remap[codes], categories=order)
        return pd.Series(categorical, index=values.index, name=values.name)
    missing = values.isna().to_numpy()
    text = values.astype(object)
    if not missing.all():
        text = text.where(missing, values[~missing].astype(str).astype(object))
    distinct = set(pd.unique(text[~missing])) | ({""} if with_empty else set())
    return pd.Series(pd.Categorical(text, categories=sorted(distinct)), index=values.index, name=values.name)


def _show(values: pd.Series | np.ndarray, limit: int = 5) -> str:
    """Render the first distinct offending values for an error message."""
    uniq = list(dict.fromkeys(np.asarray(values, dtype=object).tolist()))
    shown = ", ".join(repr(v) for v in uniq[:limit])
    return shown + (", ..." if len(uniq) > limit else "")


def shifted_rows(message: str, rows: int) -> str:
    """A validation message whose "first at row N" counts `rows` more rows."""
    return re.sub(r"first at row (\d+)", lambda m: f"first at row {int(m.group(1)) + rows}", message)


def _at(bad: pd.Series | np.ndarray) -> str:
    """Where the first offending row is: its 1-based position in the frame (a labels file's data
    row; a CSV's line counts the header too)."""
    return f" (first at row {int(np.flatnonzero(np.asarray(bad, dtype=bool))[0]) + 1})"


def _numeric(df: pd.DataFrame, column: str, *, allow_missing: bool) -> pd.Series:
    """Convert ``column`` to float, raising a clear error for non-numeric or missing entries (a
    float column is returned as it is: no copy)."""
    raw = df[column]
    if raw.dtype == np.float64:
        num = raw
    else:
        num = pd.to_numeric(raw, errors="coerce").astype(float)
        bad = num.isna() & raw.notna()
        if bad.any():
            raise ValueError(f"column '{column}' has non-numeric values: {_show(raw[bad])}{_at(bad)}")
    if not allow_missing and num.isna().any():
        raise ValueError(f"column '{column}' has {int(num.isna().sum())} missing value(s){_at(num.isna())}")
    return num


class NotInStudy(ValueError):
    """Labels that do not fit the study's settings: an item the study does not rate, or a score off its
    item's scale."""


def _integers_in(
    num: pd.Series,
    column: str,
    lo: int,
    hi: int,
    where: np.ndarray | None = None,
    error: type[ValueError] = ValueError,
) -> None:
    """Raise `error` if the non-missing values of ``num`` (in the rows `where`, default all) are not
    integers in ``lo..hi``."""
    values = num.to_numpy()
    bad = (values < lo) | (values > hi)
    if values.dtype.kind == "f":
        bad |= values != np.round(values)
        bad &= ~np.isnan(values)
    if where is not None:
        bad &= where
    if bad.any():
        got = _show(values[bad].astype(float))
        raise error(f"column '{column}' must hold integers in {lo}..{hi}, got: {got}{_at(bad)}")


def validate_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Check a tidy label frame and return a clean copy with the contract's dtypes.

    Parameters
    ----------
    df : pandas.DataFrame
        The long label frame (one row per score), see the module docstring.

    Returns
    -------
    pandas.DataFrame
        A copy: ids, responses and items as categorical codes over their texts (:func:`coded`),
        ``value``/``confidence``/``time_s`` as float, ``preference`` as int. Extra columns are kept.

    Raises
    ------
    TypeError
        If ``df`` is not a DataFrame.
    ValueError
        Missing columns (all named), a response other than chosen/rejected, a non-numeric or
        missing value, a preference outside -2..2, a confidence outside 1..3, a negative time, a
        rubric-aspect or rubric-support value outside 0..2, or a duplicated (pair_id, annotator,
        response, item).

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
    out = df.copy(deep=False)  # copy-on-write: the columns replaced below never touch `df`
    _check_keys(out)
    _check_judgment_columns(out)
    for prefix, described in ((RUBRIC_PREFIX, "rubric aspects"), (SUPPORT_PREFIX, "rubric support")):
        rows = has_prefix(out[ITEM], prefix)
        if rows.any():
            _integers_in(out[VALUE], f"value ({described})", 0, 2, where=rows)
    _check_optional_columns(out)
    check_unique_keys(out)
    return out


#: The prefixes of the items a study has besides its quality dimensions.
ITEM_PREFIXES = (RUBRIC_PREFIX, SUPPORT_PREFIX)


def unknown_item(items: Iterable[str], quality_items: Sequence[str]) -> str | None:
    """The first of `items` that is neither one of the study's quality items nor the rubric, one of its
    aspects or a rubric-support answer (a misspelled dimension would otherwise be left out of every
    verdict unseen)."""
    known = set(quality_items) | {RUBRIC_ITEM}
    return next((i for i in items if i not in known and not str(i).startswith(ITEM_PREFIXES)), None)


def check_rated(items: Iterable[str], quality_items: Sequence[str]) -> None:
    """:class:`NotInStudy` naming the study's quality items that are not among the labels' `items`
    (labels with no items at all are no judgments yet, not labels of another study)."""
    present = set(items)
    absent = [item for item in quality_items if item not in present]
    if present and absent:
        raise NotInStudy(f"no scores for {', '.join(map(repr, absent))}, which the study rates")


def check_items(frame: pd.DataFrame, scales: Mapping[str, tuple[int, int]]) -> None:
    """:class:`NotInStudy` naming the first row of an item that is not the study's
    (:func:`unknown_item`; `scales` gives each quality item's lowest and highest point) or whose quality
    value is not a point of its item's scale. A profile owner's row may also be item ``preference``
    (an owner who answered no rubric aspect)."""
    items = frame[ITEM]
    owner = (
        (frame[RATER_KIND] == OWNER).to_numpy() if RATER_KIND in frame.columns else np.zeros(len(frame), bool)
    )
    unusual = items[~owner | (items != PREFERENCE).to_numpy()]
    unknown = unknown_item(pd.unique(unusual), list(scales))
    if unknown is not None:
        raise NotInStudy(
            f"column 'item' holds {unknown!r}, which is neither a quality dimension of the study "
            f"({', '.join(scales)}) nor a rubric aspect or support answer"
            + _at((items == unknown).to_numpy() & ~(owner & (items == PREFERENCE).to_numpy()))
        )
    for item, (low, high) in scales.items():
        _integers_in(frame[VALUE], f"value ({item})", low, high, (items == item).to_numpy(), NotInStudy)


def check_unique_keys(frame: pd.DataFrame) -> None:
    """ValueError naming the first row that repeats an earlier row's (pair_id, annotator, response,
    item) (a validated frame's key columns, or its parts validated one at a time and joined)."""
    n_dup = _n_duplicates(frame, KEY_COLUMNS)
    if n_dup:
        raise ValueError(
            f"label frame has {n_dup} duplicate (pair_id, annotator, response, item) row(s)"
            + _at(~first_rows(frame, KEY_COLUMNS))
        )


def _check_controls(out: pd.DataFrame, col: str, controls: re.Pattern[str]) -> None:
    """Refuse a text of `col` holding a character `controls` matches (one regex pass over the distinct
    texts joined; only a hit looks at them one by one)."""
    values = out[col]
    if isinstance(values.dtype, pd.CategoricalDtype):
        texts = [t for t in values.cat.categories.tolist() if isinstance(t, str)]
    else:
        texts = [t for t in values.dropna().unique().tolist() if isinstance(t, str)]
    if not controls.search("".join(texts)):
        return
    bad = [t for t in texts if controls.search(t)]
    raise ValueError(
        f"column '{col}' holds a control character: {bad[0]!r}" + _at(values.isin(bad).to_numpy())
    )


def _check_keys(out: pd.DataFrame) -> None:
    """The key columns as codes (in place); no missing key, no control character in an id, a name or
    the category, responses chosen/rejected only."""
    for col in (PAIR_ID, ANNOTATOR, RESPONSE, ITEM):
        if out[col].isna().any():
            missing = out[col].isna()
            raise ValueError(f"column '{col}' has {int(missing.sum())} missing value(s){_at(missing)}")
        out[col] = coded(out[col])
        _check_controls(out, col, NAME_CONTROLS)
    if CATEGORY in out.columns:
        _check_controls(out, CATEGORY, TEXT_CONTROLS)
    bad_resp = ~out[RESPONSE].isin(RESPONSES)
    if bad_resp.any():
        raise ValueError(
            f"column 'response' must be 'chosen' or 'rejected', got: {_show(out.loc[bad_resp, RESPONSE])}"
            + _at(bad_resp)
        )


def _check_judgment_columns(out: pd.DataFrame) -> None:
    """value, preference, confidence and time_s as numbers in their ranges (in place)."""
    out[VALUE] = _numeric(out, VALUE, allow_missing=False)
    if out[PREFERENCE].dtype != np.int64:  # integers already are only range-checked (no copy)
        out[PREFERENCE] = _numeric(out, PREFERENCE, allow_missing=False)
    _integers_in(out[PREFERENCE], PREFERENCE, -2, 2)
    out[PREFERENCE] = out[PREFERENCE].astype(np.int64)  # copy-on-write: no copy when int64 already
    out[CONFIDENCE] = _numeric(out, CONFIDENCE, allow_missing=True)
    _integers_in(out[CONFIDENCE], CONFIDENCE, 1, 3)
    out[TIME_S] = _numeric(out, TIME_S, allow_missing=True)
    negative = out[TIME_S] < 0
    if negative.any():
        raise ValueError(
            f"column 'time_s' must be >= 0, got: {_show(out.loc[negative, TIME_S])}{_at(negative)}"
        )


def _check_choice(out: pd.DataFrame, column: str, allowed: tuple[str, ...], described: str) -> None:
    """Make `column` text ("" when empty, in place) and refuse a value outside `allowed`."""
    out[column] = as_text(out[column])
    bad = ~out[column].isin(allowed)
    if bad.any():
        got = _show(out.loc[bad, column])
        raise ValueError(f"column '{column}' must be {described}, got: {got}{_at(bad)}")


def _check_optional_columns(out: pd.DataFrame) -> None:
    """control and arm as text ("" when empty), side_chosen A/B, the lengths >= 0 (in place)."""
    if CONTROL in out.columns:
        _check_choice(out, CONTROL, CONTROL_KINDS, f"empty or one of {', '.join(CONTROL_KINDS[1:])}")
    if ARM in out.columns:
        out[ARM] = as_text(out[ARM])
    if RATER_KIND in out.columns:
        _check_choice(out, RATER_KIND, RATER_KINDS, "empty, 'annotator' or 'owner'")
    if SIDE_CHOSEN in out.columns:
        side = out[SIDE_CHOSEN]
        bad = side.notna() & ~side.isin(("A", "B"))
        if bad.any():
            raise ValueError(f"column 'side_chosen' must be 'A' or 'B', got: {_show(side[bad])}{_at(bad)}")
    for col in (CHOSEN_CHARS, REJECTED_CHARS):
        if col in out.columns:
            out[col] = _numeric(out, col, allow_missing=True)
            if (out[col] < 0).any():
                raise ValueError(f"column '{col}' must be >= 0{_at(out[col] < 0)}")


def as_text(values: pd.Series) -> pd.Series:
    """A text column with ``""`` for missing values (what ``astype(object).fillna("").astype(str)``
    gives), from the categories for a categorical column instead of one object per row.

    >>> as_text(pd.Series(pd.Categorical(["gold", None, ""]))).tolist()
    ['gold', '', '']
    """
    if isinstance(values.dtype, pd.StringDtype):
        if values.dtype.na_value is not pd.NA and not values.isna().any():
            return values  # already the text `astype(str)` gives: no copy
        return values.fillna("").astype(str)
    if not isinstance(values.dtype, pd.CategoricalDtype):
        return values.astype(object).fillna("").astype(str)
    categories = values.cat.categories
    texts = pd.array([*(str(c) for c in categories), ""], dtype=str)
    codes = values.cat.codes.to_numpy()
    taken = texts.take(np.where(codes < 0, len(categories), codes))
    return pd.Series(taken, index=values.index, name=values.name)


def has_prefix(items: pd.Series, prefix: str) -> np.ndarray:
    """Which rows' text starts with `prefix` (for codes, one test per category).

    >>> has_prefix(pd.Series(["rubric:0", "correctness"], dtype="category"), "rubric:").tolist()
    [True, False]
    """
    if isinstance(items.dtype, pd.CategoricalDtype):
        flags = np.array([str(c).startswith(prefix) for c in items.cat.categories], dtype=bool)
        codes = items.cat.codes.to_numpy()
        return np.where(codes >= 0, flags[codes] if len(flags) else False, False)
    return cast(np.ndarray, items.astype(str).str.startswith(prefix).to_numpy(dtype=bool))


def split_controls(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split a label frame into the main pairs and the control pairs (optional ``control`` column).

    Returns
    -------
    tuple of pandas.DataFrame
        ``(main, controls)``; without a ``control`` column every row is main.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"pair_id": ["p1", "c1"], "control": ["", "positive"]})
    >>> [len(part) for part in split_controls(df)]
    [1, 1]
    """
    if CONTROL not in frame.columns:
        return frame, frame.iloc[:0]
    is_control = as_text(frame[CONTROL]) != ""
    if not is_control.any():  # no copy of the whole frame when every row is main
        return frame, frame[is_control]
    return frame[~is_control], frame[is_control]


def _combined_codes(frame: pd.DataFrame, keys: Sequence[str]) -> np.ndarray | None:
    """The `keys` columns' codes combined into one integer per row (missing as its own code), or
    None when a column is not categorical or the combination would not fit in 62 bits."""
    columns = [frame[c] for c in keys]
    if not all(isinstance(c.dtype, pd.CategoricalDtype) for c in columns):
        return None
    sizes = [len(c.cat.categories) + 1 for c in columns]
    if float(np.prod([float(n) for n in sizes])) >= 2.0**62:
        return None
    key = np.zeros(len(frame), dtype=np.int64)
    for column, size in zip(columns, sizes, strict=True):
        key = key * size + column.cat.codes.to_numpy().astype(np.int64) + 1
    return key


def _n_duplicates(frame: pd.DataFrame, keys: Sequence[str]) -> int:
    """How many rows repeat an earlier row's `keys` (``frame.duplicated(keys).sum()``), by sorting
    the combined codes (a sorted copy instead of a hash table of every row)."""
    key = _combined_codes(frame, keys)
    if key is None:
        return int(frame.duplicated(list(keys)).sum())
    key.sort()
    return int(np.count_nonzero(key[1:] == key[:-1]))


def first_rows(frame: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """Which rows are the first of their `keys` (what ``~frame.duplicated(keys)`` gives), from the
    columns' codes combined into one integer when they are categorical.

    >>> first_rows(pd.DataFrame({"p": ["a", "a", "b"], "q": ["x", "x", "x"]}, dtype="category"), ["p", "q"])
    array([ True, False,  True])
    """
    key = _combined_codes(frame, keys)
    if key is None:
        return cast(np.ndarray, ~frame.duplicated(list(keys)).to_numpy())
    return cast(np.ndarray, ~pd.Series(key).duplicated().to_numpy())
