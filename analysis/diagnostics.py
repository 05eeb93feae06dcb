"""Per-annotator diagnostics: agreement with the others, speed, straight-lining and position bias."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.frames import first_rows
from analysis.vocabulary import RUBRIC_PREFIX, SIDE_CHOSEN, SIDES

__all__ = ["POSITION_COLUMNS", "annotator_diagnostics", "position_bias", "side_balance"]

#: The position-bias columns, added when the frame has ``side_chosen``.
POSITION_COLUMNS = ["n_side", "side_a_rate", "side_a_ci_low", "side_a_ci_high", "side_a_p", "side_a_p_holm"]

_COLUMNS = [
    "annotator",
    "n_judgments",
    "loo_spearman",
    "n_loo_units",
    "straightlining",
    "median_time_s",
    "share_fast",
]


def _is_rubric(item: pd.Series) -> pd.Series:
    text = item.astype(str)
    return (text == "rubric") | text.str.startswith(RUBRIC_PREFIX)


def annotator_diagnostics(
    frame: pd.DataFrame, *, quality_items: Sequence[str] | None = None, fast_seconds: float = 10.0
) -> pd.DataFrame:
    """Diagnostics per annotator from the tidy long label frame.

    Parameters
    ----------
    frame : DataFrame, shape (rows, columns)
        The tidy label frame with columns ``pair_id, annotator, response, item, value`` and optionally
        ``time_s`` (time on task of the judgment, repeated on each of its rows).
    quality_items : sequence of str, optional
        The quality items; by default every item except ``"rubric"`` and ``"rubric:<k>"``.
    fast_seconds : float, default 10.0
        A judgment faster than this counts as fast.

    Returns
    -------
    DataFrame, shape (annotators, 7)
        ``annotator``; ``n_judgments`` (pairs judged); ``loo_spearman``: Spearman correlation of the
        annotator's quality values with the mean of the other annotators' values on the same
        (pair_id, response, item), pooled over quality items (NaN with fewer than 3 shared units or no
        variation); ``n_loo_units``: the units in that correlation; ``straightlining``: share of the
        annotator's judgments in which every quality value of both responses is the same;
        ``median_time_s``: median time per judgment; ``share_fast``: share of judgments faster than
        ``fast_seconds``.

    Examples
    --------
    Annotator ``c`` rates every item 3 (straight-lining) and quickly:

    >>> frame = pd.DataFrame({
    ...     "pair_id": ["p1", "p1", "p2", "p2"] * 3,
    ...     "annotator": ["a"] * 4 + ["b"] * 4 + ["c"] * 4,
    ...     "response": ["chosen", "rejected"] * 6,
    ...     "item": "helpfulness",
    ...     "value": [5, 2, 4, 1, 5, 3, 4, 2, 3, 3, 3, 3],
    ...     "time_s": [40.0] * 4 + [35.0] * 4 + [4.0] * 4,
    ... })
    >>> diag = annotator_diagnostics(frame)
    >>> diag[["annotator", "straightlining", "share_fast"]].to_dict("records")
    [{'annotator': 'a', 'straightlining': 0.0, 'share_fast': 0.0}, \
{'annotator': 'b', 'straightlining': 0.0, 'share_fast': 0.0}, \
{'annotator': 'c', 'straightlining': 1.0, 'share_fast': 1.0}]
    """
    required = ["pair_id", "annotator", "response", "item", "value"]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"frame has no column(s) {missing}")
    if frame.empty:
        raise ValueError("frame has no rows")
    if quality_items is None:
        quality = frame.loc[~_is_rubric(frame["item"]) & frame["value"].notna(), required].copy()
    else:
        quality = frame.loc[frame["item"].isin(list(quality_items)) & frame["value"].notna(), required].copy()
    quality["value"] = quality["value"].astype(np.float64)
    annotators = pd.Index(sorted(frame["annotator"].unique()), name="annotator")
    out = pd.DataFrame(index=annotators)
    # one row per judgment (its first): judgment-level counts and times without grouping every score
    firsts = frame.iloc[np.flatnonzero(first_rows(frame, ["pair_id", "annotator"]))]
    out["n_judgments"] = firsts.groupby("annotator")["pair_id"].nunique().reindex(annotators).astype(np.int64)

    # leave-one-out agreement: each value against the mean of the others on the same unit
    unit = ["pair_id", "response", "item"]
    grouped = quality.groupby(unit, sort=False)["value"]
    total, count = grouped.transform("sum"), grouped.transform("count")
    shared = quality.assign(others=(total - quality["value"]) / (count - 1))[count > 1]
    loo = {}
    for name, g in shared.groupby("annotator"):
        ok = len(g) >= 3 and g["value"].nunique() > 1 and g["others"].nunique() > 1
        loo[name] = g["value"].corr(g["others"], method="spearman") if ok else np.nan
    out["loo_spearman"] = pd.Series(loo, dtype=np.float64).reindex(annotators)
    out["n_loo_units"] = shared.groupby("annotator").size().reindex(annotators, fill_value=0).astype(np.int64)

    # straight-lining: all quality values of a judgment (both responses) identical
    per_judgment = quality.groupby(["annotator", "pair_id"])["value"].agg(["nunique", "count"])
    flat = (per_judgment["nunique"] == 1) & (per_judgment["count"] >= 2)
    out["straightlining"] = flat.groupby(level="annotator").mean().reindex(annotators).astype(np.float64)

    if "time_s" in frame.columns:
        # first() skips missing times: the judgment's first rows give it only when none is missing
        timed = firsts if frame["time_s"].notna().all() else frame
        times = timed.groupby(["annotator", "pair_id"])["time_s"].first().astype(np.float64).dropna()
        by_ann = times.groupby(level="annotator")
        out["median_time_s"] = by_ann.median().reindex(annotators)
        out["share_fast"] = (times < fast_seconds).groupby(level="annotator").mean().reindex(annotators)
    else:
        out["median_time_s"] = np.nan
        out["share_fast"] = np.nan
    result = out.reset_index()[_COLUMNS]
    if (
        "side_chosen" in frame.columns
        and "preference" in frame.columns
        and frame["side_chosen"].notna().any()
    ):
        result = result.merge(position_bias(frame), on="annotator", how="left")
    return result


def position_bias(frame: pd.DataFrame, *, alpha: float = 0.05) -> pd.DataFrame:
    """Each annotator's rate of preferring side A over non-tied judgments, whatever the responses.

    Parameters
    ----------
    frame : DataFrame
        Label frame rows with ``pair_id, annotator, preference, side_chosen``.
    alpha : float, default 0.05
        The Wilson interval is 1 - alpha; p-values are two-sided exact binomial tests of rate 0.5,
        Holm-adjusted over the annotators (``side_a_p_holm``).

    Returns
    -------
    DataFrame
        ``annotator`` and :data:`POSITION_COLUMNS`; a rate near 1 or 0 means the annotator picks a
        side, not a response. Counterbalancing keeps this from biasing the verdicts, but it adds
        noise, and such judgments say nothing about the responses.

    Examples
    --------
    >>> frame = pd.DataFrame({"pair_id": [f"p{i}" for i in range(12)], "annotator": "x",
    ...     "preference": [1, -1] * 6, "side_chosen": ["A", "B"] * 6})
    >>> position_bias(frame)[["annotator", "n_side", "side_a_rate"]].to_dict("records")
    [{'annotator': 'x', 'n_side': 12, 'side_a_rate': 1.0}]
    """
    from scipy import stats
    from statsmodels.stats.multitest import multipletests
    from statsmodels.stats.proportion import proportion_confint

    j = frame.iloc[np.flatnonzero(first_rows(frame, ["pair_id", "annotator"]))]
    j = j[j["side_chosen"].notna() & (j["preference"] != 0)]
    prefers_a = (j["preference"] > 0).to_numpy() == (j["side_chosen"] == "A").to_numpy()
    grouped = pd.Series(prefers_a, index=j["annotator"].to_numpy()).groupby(level=0)
    count, n = grouped.sum().astype(int), grouped.size().astype(int)
    out = pd.DataFrame({"annotator": count.index, "n_side": n.to_numpy()})
    out["side_a_rate"] = (count / n).to_numpy(dtype=float)
    low, high = proportion_confint(count.to_numpy(), n.to_numpy(), alpha=alpha, method="wilson")
    out["side_a_ci_low"], out["side_a_ci_high"] = np.asarray(low, float), np.asarray(high, float)
    out["side_a_p"] = [
        float(stats.binomtest(int(c), int(k), 0.5).pvalue) for c, k in zip(count, n, strict=True)
    ]
    out["side_a_p_holm"] = multipletests(out["side_a_p"], method="holm")[1] if len(out) else []
    return out


def side_balance(frame: pd.DataFrame) -> dict[str, float]:
    """How often ``chosen`` was shown on side A, over the judgments that record a side.

    Returns ``side_judgments`` (judgments with a side), ``side_a_judgments`` (chosen on A),
    ``side_a_share`` and ``side_a_p`` (two-sided exact binomial test of 0.5); NaN without sides.

    Examples
    --------
    >>> frame = pd.DataFrame({"pair_id": ["p1", "p2", "p3", "p4"], "annotator": "x",
    ...     "side_chosen": ["A", "A", "A", "A"]})
    >>> res = side_balance(frame)
    >>> res["side_a_share"], round(res["side_a_p"], 3)
    (1.0, 0.125)
    """
    from scipy import stats

    nan = float("nan")
    if SIDE_CHOSEN not in frame.columns:
        return {"side_judgments": 0, "side_a_judgments": 0, "side_a_share": nan, "side_a_p": nan}
    j = frame.iloc[np.flatnonzero(first_rows(frame, ["pair_id", "annotator"]))]
    sides = j[SIDE_CHOSEN].dropna().astype(str)
    n, on_a = int(len(sides)), int((sides == SIDES[0]).sum())
    return {
        "side_judgments": n,
        "side_a_judgments": on_a,
        "side_a_share": on_a / n if n else nan,
        "side_a_p": float(stats.binomtest(on_a, n, 0.5).pvalue) if n else nan,
    }
