"""Per-judgment and per-pair aggregates of the label frame (see :mod:`analysis.frames`): rubric
means, chosen - rejected differences, pair means, the majority direction, one row per judgment."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.frames import JUDGMENT_COLUMNS, OPTIONAL_JUDGMENT_COLUMNS, first_rows, has_prefix
from analysis.vocabulary import (
    ANNOTATOR,
    CATEGORY,
    CHOSEN,
    CHOSEN_CHARS,
    ITEM,
    PAIR_ID,
    PREFERENCE,
    REJECTED,
    REJECTED_CHARS,
    RESPONSE,
    RUBRIC_ITEM,
    RUBRIC_PREFIX,
    SIDE_CHOSEN,
    VALUE,
)

__all__ = [
    "add_rubric_means",
    "paired_aspects",
    "judgment_differences",
    "judgments",
    "pair_majority",
    "pair_means",
    "pair_means_from_differences",
    "replicated_pairs",
    "rubric_scores",
]


def replicated_pairs(rows: pd.DataFrame) -> int:
    """The pairs of `rows` (label or per-judgment rows) judged by at least two annotators (one home)."""
    return int((rows.groupby(PAIR_ID, observed=True)[ANNOTATOR].nunique() >= 2).sum())


def rubric_scores(rows: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """The per-response rubric score: the mean of the ``rubric:<k>`` aspect values (one home).

    Parameters
    ----------
    rows : pandas.DataFrame
        Long rows with columns ``item`` and ``value`` plus the ``keys``; rows of other items are
        ignored.
    keys : sequence of str
        The columns that identify one rated response, e.g. ``["pair_id", "annotator", "response"]``
        (a judgment's response) or ``["judgment_id", "response"]``.

    Returns
    -------
    pandas.DataFrame
        Columns ``*keys, item, value`` with ``item == "rubric"``: one row per key that has aspects.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"judgment_id": [7, 7, 7], "response": "chosen",
    ...     "item": ["rubric:0", "rubric:1", "correctness"], "value": [2.0, 1.0, 4.0]})
    >>> rubric_scores(rows, ["judgment_id", "response"]).to_dict("records")
    [{'judgment_id': 7, 'response': 'chosen', 'item': 'rubric', 'value': 1.5}]
    """
    keys = list(keys)
    aspects = rows[_is_aspect(rows[ITEM])]
    means = aspects.groupby(keys, sort=False, observed=True)[VALUE].mean().reset_index()
    means.insert(len(keys), ITEM, RUBRIC_ITEM)
    return means[[*keys, ITEM, VALUE]]


def _is_aspect(items: pd.Series) -> np.ndarray:
    """Which rows hold a rubric aspect (``rubric:<k>``)."""
    return has_prefix(items, RUBRIC_PREFIX)


def paired_aspects(rows: pd.DataFrame) -> pd.DataFrame:
    """The rubric-aspect `rows` of the aspects each judgment scored on both responses (the one home of
    "chosen and rejected are averaged over the same aspects").

    >>> rows = pd.DataFrame({"pair_id": "p", "annotator": "a", "response": ["chosen", "chosen", "rejected"],
    ...     "item": ["rubric:0", "rubric:1", "rubric:1"], "value": [2.0, 1.0, 0.0]})
    >>> paired_aspects(rows)["item"].tolist()
    ['rubric:1', 'rubric:1']
    """
    scored = rows[rows[VALUE].notna()]
    judgment_aspect = scored.groupby([PAIR_ID, ANNOTATOR, ITEM], sort=False, observed=True)
    return scored[judgment_aspect[RESPONSE].transform("nunique").to_numpy() == 2]


def _rubric_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The ``"rubric"`` rows :func:`add_rubric_means` would add, computed from the aspect rows only
    (without copying the whole frame): of each judgment, the aspects it scored on both responses, so
    that chosen and rejected are averaged over the same aspects."""
    keys = [PAIR_ID, ANNOTATOR, RESPONSE]
    carry = [c for c in (*JUDGMENT_COLUMNS, *OPTIONAL_JUDGMENT_COLUMNS) if c in frame.columns]
    aspects = paired_aspects(frame.loc[_is_aspect(frame[ITEM]), [*keys, ITEM, VALUE, *carry]])
    means = rubric_scores(aspects, keys)
    if carry and not means.empty:
        first = aspects.iloc[np.flatnonzero(first_rows(aspects, keys))][[*keys, *carry]]
        means = means.merge(first, on=keys, how="left")
    return means[[c for c in frame.columns if c in means.columns]]


def add_rubric_means(frame: pd.DataFrame) -> pd.DataFrame:
    """Add the per-response rubric score (:func:`rubric_scores`) as item ``"rubric"``.

    Existing ``"rubric"`` rows are replaced; a frame without rubric aspects is returned unchanged
    (as a copy).

    Parameters
    ----------
    frame : pandas.DataFrame
        A validated label frame.

    Returns
    -------
    pandas.DataFrame
        ``frame`` plus one ``"rubric"`` row per (pair_id, annotator, response) that has aspects, with
        the judgment-level columns carried over.

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
    keys = [PAIR_ID, ANNOTATOR, RESPONSE]
    means = rubric_scores(base, keys)
    if means.empty:
        return base.copy()
    carry = [c for c in (*JUDGMENT_COLUMNS, *OPTIONAL_JUDGMENT_COLUMNS) if c in base.columns]
    if carry:
        first = base.iloc[np.flatnonzero(first_rows(base, keys))][[*keys, *carry]]
        means = means.merge(first, on=keys, how="left")
    return pd.concat([base, means[[c for c in base.columns if c in means.columns]]], ignore_index=True)


def _item_rows(frame: pd.DataFrame, item: str, columns: list[str]) -> pd.DataFrame:
    """`columns` of the rows of one item; the rubric item is derived from its aspects when absent."""
    rows = frame.loc[frame[ITEM] == item, columns]
    if rows.empty and item == RUBRIC_ITEM:
        rows = _rubric_rows(frame)
        if rows.empty and bool(_is_aspect(frame[ITEM]).any()):
            raise ValueError("no judgment scored both the chosen and the rejected response on an aspect")
        rows = rows.reindex(columns=columns)
    return rows


def judgment_differences(frame: pd.DataFrame, item: str) -> pd.DataFrame:
    """One chosen - rejected difference per judgment (pair_id, annotator) on one item.

    Only judgments that scored both responses on ``item`` are kept.

    Parameters
    ----------
    frame : pandas.DataFrame
        A validated label frame.
    item : str
        A quality dimension, ``"rubric"`` (derived from the aspects if needed) or ``"rubric:<k>"``.

    Returns
    -------
    pandas.DataFrame
        Columns ``pair_id, annotator, chosen, rejected, diff`` (plus ``side_chosen``,
        ``chosen_chars``, ``rejected_chars`` and ``category`` when the frame has them), sorted by pair
        and annotator.

    Raises
    ------
    ValueError
        If no row has ``item``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"pair_id": "p1", "annotator": ["a", "a", "b"],
    ...     "response": ["chosen", "rejected", "chosen"], "item": "relevance", "value": [5, 4, 4],
    ...     "preference": 0, "confidence": 2, "time_s": 9.0})
    >>> judgment_differences(df, "relevance")[["annotator", "diff"]].to_dict("records")
    [{'annotator': 'a', 'diff': 1.0}]
    """
    keys = [PAIR_ID, ANNOTATOR]
    extra = [c for c in (SIDE_CHOSEN, CHOSEN_CHARS, REJECTED_CHARS, CATEGORY) if c in frame.columns]
    rows = _item_rows(frame, item, [*keys, RESPONSE, VALUE, *extra])
    if rows.empty:
        raise ValueError(f"no scores for item '{item}'")
    is_chosen = (rows[RESPONSE] == CHOSEN).to_numpy()
    chosen = rows.loc[is_chosen, [*keys, VALUE, *extra]].rename(columns={VALUE: CHOSEN})
    rejected = rows.loc[~is_chosen, [*keys, VALUE]].rename(columns={VALUE: REJECTED})
    out = chosen.merge(rejected, on=keys, how="inner").dropna(subset=[CHOSEN, REJECTED])
    out["diff"] = (out[CHOSEN] - out[REJECTED]).astype(float)
    out = out.sort_values(keys, kind="stable").reset_index(drop=True)
    return out[[*keys, CHOSEN, REJECTED, "diff", *extra]]


def pair_means_from_differences(differences: pd.DataFrame) -> pd.DataFrame:
    """Per-pair means of :func:`judgment_differences` output (see :func:`pair_means`)."""
    grouped = differences.groupby(PAIR_ID, sort=True)
    out = grouped[[CHOSEN, REJECTED]].mean()
    out["diff"] = out[CHOSEN] - out[REJECTED]
    out["n_annotators"] = grouped.size().astype(int)
    return out.reset_index()[[PAIR_ID, CHOSEN, REJECTED, "diff", "n_annotators"]]


def pair_means(frame: pd.DataFrame, item: str) -> pd.DataFrame:
    """Per-pair means over annotators for one item, and the chosen-minus-rejected difference.

    Only judgments that scored both responses on ``item`` are used, so ``chosen`` and ``rejected``
    average over the same annotators. `frame` and `item` as in :func:`judgment_differences` (a
    ValueError if no row has ``item``).

    Returns
    -------
    pandas.DataFrame
        Columns ``pair_id, chosen, rejected, diff, n_annotators``, one row per pair, sorted by pair.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"pair_id": "p1", "annotator": ["a", "a", "b", "b"],
    ...     "response": ["chosen", "rejected"] * 2, "item": "relevance", "value": [5, 4, 4, 4],
    ...     "preference": 0, "confidence": 2, "time_s": 9.0})
    >>> pair_means(df, "relevance").to_dict("records")
    [{'pair_id': 'p1', 'chosen': 4.5, 'rejected': 4.0, 'diff': 0.5, 'n_annotators': 2}]
    """
    return pair_means_from_differences(judgment_differences(frame, item))


def pair_majority(votes: pd.DataFrame, *, pair_col: str = PAIR_ID) -> pd.DataFrame:
    """Majority preference direction per pair (the one home of "majority").

    Parameters
    ----------
    votes : pandas.DataFrame
        One row per judgment (e.g. :func:`judgments`, or the label frame: with an ``annotator``
        column each (pair, annotator) counts once), with ``pair_col`` and ``preference``
        (positive = chosen preferred, 0 = tie).
    pair_col : str, default "pair_id"
        The column identifying a pair.

    Returns
    -------
    pandas.DataFrame
        Columns ``pair_col, n_votes, n_chosen, n_rejected, n_tie, majority, agreement``:
        ``majority`` is ``"chosen"``, ``"rejected"`` or ``"tie"`` when that direction has more than
        half of the votes, else ``"none"``; ``agreement`` is the share of the most common direction.
        Sorted by pair.

    Examples
    --------
    >>> import pandas as pd
    >>> j = pd.DataFrame({"pair_id": ["a", "a", "a", "b", "b"], "annotator": ["x", "y", "z", "x", "y"],
    ...                   "preference": [1, 2, -1, 0, 1]})
    >>> pair_majority(j)[["pair_id", "n_chosen", "majority"]].values.tolist()
    [['a', 2, 'chosen'], ['b', 1, 'none']]
    """
    missing = [c for c in (pair_col, PREFERENCE) if c not in votes.columns]
    if missing:
        raise ValueError(f"pair_majority needs column(s): {', '.join(missing)}")
    if ANNOTATOR in votes.columns:
        votes = votes.drop_duplicates([pair_col, ANNOTATOR])
    pref = np.sign(votes[PREFERENCE].to_numpy(dtype=float))
    counts = pd.DataFrame(
        {
            pair_col: votes[pair_col].to_numpy(),
            "n_chosen": pref > 0,
            "n_rejected": pref < 0,
            "n_tie": pref == 0,
        }
    )
    out = counts.groupby(pair_col, sort=True).sum().astype(int)
    out.insert(0, "n_votes", out.sum(axis=1))
    top = out[["n_chosen", "n_rejected", "n_tie"]].max(axis=1)
    half = out["n_votes"] / 2.0
    out["majority"] = np.select(
        [out["n_chosen"] > half, out["n_rejected"] > half, out["n_tie"] > half],
        ["chosen", "rejected", "tie"],
        default="none",
    )
    out["agreement"] = top / out["n_votes"]
    return out.reset_index()


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
    cols += [c for c in OPTIONAL_JUDGMENT_COLUMNS if c in frame.columns]
    out = frame.iloc[np.flatnonzero(first_rows(frame, [PAIR_ID, ANNOTATOR]))][cols]
    return out.sort_values([PAIR_ID, ANNOTATOR], kind="stable").reset_index(drop=True)
