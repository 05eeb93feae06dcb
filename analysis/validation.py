"""One-call validation of chosen/rejected pairs: equivalence, superiority, preference, IUT verdicts.

:func:`validate_pairs` runs, per quality dimension, the crossed random-effects TOST on the per-judgment
differences (:func:`analysis.mixed.mixed_effect`: generalizes over pairs and annotators; the verdict),
the paired TOST on per-pair mean differences and its Wilcoxon counterpart (conditional on this panel
of annotators); for rubric alignment a one-sided superiority test on per-pair rubric means with the
minimum detectable effect; the preference for ``chosen`` at the level of pairs; and the
intersection-union verdicts over the dimensions. Each item's differences and per-pair means are
computed once and kept for the report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.aggregates import judgment_differences, judgments, pair_means_from_differences
from analysis.broken_share import DEFAULT_GAP_RANGE, broken_share
from analysis.crossed_mean import crossed_mean
from analysis.equivalence import (
    IutResult,
    holm,
    intersection_union,
    logit_interval,
    preference_pairs,
    preference_rate,
    superiority_paired,
    tost_paired,
    wilcoxon_tost_paired,
)
from analysis.frames import ANNOTATOR, ITEM, PAIR_ID, PREFERENCE, QUALITY_ITEMS, RUBRIC_ITEM, RUBRIC_PREFIX
from analysis.lazy import stats
from analysis.mixed import mixed_effect
from analysis.scale import Margin, item_margin
from analysis.settings import DEFAULTS
from analysis.vocabulary import RUBRIC_SPAN

__all__ = [
    "ValidationResult",
    "minimum_detectable_effect",
    "preference_scores",
    "validate_differences",
    "validate_pairs",
]


@dataclass(frozen=True)
class ValidationResult:
    """Everything :func:`validate_pairs` computed.

    Attributes
    ----------
    crossed : pandas.DataFrame
        One row per dimension: the :class:`analysis.mixed.MixedResult` fields of the crossed
        random-effects TOST (the equivalence verdict).
    equivalence : pandas.DataFrame
        One row per dimension, conditional on this panel of annotators: ``dimension, n_pairs,
        estimate, ci_low, ci_high, low, high, p_lower, p_upper, p_value, equivalent`` (paired TOST on
        per-pair means) and ``wilcoxon_estimate, wilcoxon_ci_low, wilcoxon_ci_high, wilcoxon_p_value,
        wilcoxon_equivalent`` (rank-based TOST).
    superiority : pandas.DataFrame
        One row for ``rubric`` (empty without rubric scores): the
        :class:`analysis.equivalence.SuperiorityResult` fields plus ``dimension``, ``p_holm`` and
        ``mde`` (minimum detectable effect at 80% power for this many pairs and this SD).
    preference : pandas.DataFrame
        One row: the :class:`analysis.equivalence.PairPreference` fields (pair level) plus
        ``p_holm``.
    preference_judgments : pandas.DataFrame
        One row: :class:`analysis.equivalence.PreferenceRate` over judgments (descriptive).
    holm : pandas.DataFrame
        The superiority family of the verdicts (crossed rubric and preference tests), Holm-adjusted.
    rubric_crossed, preference_crossed : pandas.DataFrame
        One row each (rubric empty without rubric scores): :class:`analysis.crossed_mean.CrossedMean` of the
        per-judgment rubric difference and of the per-judgment preference score (1 chosen, 0.5 tie,
        0 rejected, minus 0.5), generalizing over pairs and annotators (the verdicts), plus
        ``p_holm``. ``superiority`` and ``preference`` are the same claims conditional on this panel.
    broken : pandas.DataFrame
        One row per dimension: :class:`analysis.broken_share.BrokenShare` (bounds on the share of pairs
        beyond the margin, for any distribution of the pair gaps).
    iut : IutResult
        All dimensions equivalent in the crossed model (the verdict; Berger 1982).
    iut_panel : IutResult
        All dimensions equivalent in the per-pair TOST (conditional on the panel).
    differences : dict
        Per item (quality dimensions and the rubric): :func:`analysis.aggregates.judgment_differences`.
    pair_means : dict
        Per item: :func:`analysis.aggregates.pair_means_from_differences`.
    """

    crossed: pd.DataFrame
    equivalence: pd.DataFrame
    superiority: pd.DataFrame
    preference: pd.DataFrame
    preference_judgments: pd.DataFrame
    holm: pd.DataFrame
    iut: IutResult
    iut_panel: IutResult
    differences: dict[str, pd.DataFrame] = field(repr=False)
    pair_means: dict[str, pd.DataFrame] = field(repr=False)
    rubric_crossed: pd.DataFrame = field(default_factory=pd.DataFrame)
    preference_crossed: pd.DataFrame = field(default_factory=pd.DataFrame)
    broken: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def mixed(self) -> pd.DataFrame:
        """The crossed-model table (old name)."""
        return self.crossed


def minimum_detectable_effect(
    n: int, sd: float, *, alpha: float = DEFAULTS.alpha, power: float = DEFAULTS.target_power
) -> float:
    """Smallest true mean difference a one-sided paired t test detects with `power`.

    ``(t_{1-alpha, n-1} + t_{power, n-1}) * sd / sqrt(n)`` (the usual normal-theory approximation with
    t quantiles).

    Examples
    --------
    >>> round(minimum_detectable_effect(40, 1.0), 3)
    0.401
    """
    if n < 2 or not sd >= 0:
        return math.nan
    df = n - 1
    return float((stats.t.ppf(1 - alpha, df) + stats.t.ppf(power, df)) * sd / math.sqrt(n))


def _require_two_pairs(pair_means: pd.DataFrame, item: str) -> None:
    """The paired tests need two pairs with scores for both responses on `item` (ValueError naming it)."""
    complete = int((pair_means["chosen"].notna() & pair_means["rejected"].notna()).sum())
    if complete < 2:
        raise ValueError(f"'{item}' has scores for both responses of {complete} pair(s); the tests need 2")


def _gap_range(differences: pd.DataFrame) -> float:
    """The largest true gap the ratings allow: the default scale's range, or the ratings' own range
    when they span more."""
    values = differences[["chosen", "rejected"]].to_numpy(dtype=float)
    seen = float(np.nanmax(values) - np.nanmin(values)) if values.size else 0.0
    return max(DEFAULT_GAP_RANGE, seen)


def validate_pairs(
    frame: pd.DataFrame,
    *,
    quality_items: Sequence[str] = QUALITY_ITEMS,
    margin: Margin = DEFAULTS.margin,
    alpha: float = DEFAULTS.alpha,
    max_broken_share: float = DEFAULTS.max_broken_share,
    gap_ranges: Mapping[str, float] | None = None,
) -> ValidationResult:
    """Run the validation statistics on a label frame (main pairs only; controls removed first).

    Parameters
    ----------
    frame : pandas.DataFrame
        A validated label frame (:func:`analysis.frames.validate_frame`) without control pairs.
    quality_items : sequence of str
        The dimensions that must be equivalent (default correctness, relevance, helpfulness).
    margin : float or mapping of str to float, default 0.5
        Symmetric equivalence margin in scale points: one for every quality item, or each item's
        (:func:`analysis.scale.dimension_margins`).
    alpha : float, default 0.05
        Level of every one-sided test (TOST intervals are 1 - 2*alpha).
    max_broken_share : float, default 0.1
        The largest share of pairs beyond the margin an equivalence claim tolerates.
    gap_ranges : mapping of str to float, optional
        Per quality item, the largest true gap its scale allows (:attr:`analysis.scale.Scale.span`), for
        the lower bound on the broken share; an item without one: the 1-5 scale's 4, or the ratings' own
        range when they span more.

    Returns
    -------
    ValidationResult

    Raises
    ------
    ValueError
        If a quality item has no scores, there are fewer than 2 pairs, or the margin is not positive.

    Examples
    --------
    >>> import numpy as np
    >>> from analysis.simulation import SimDesign, simulate_frame
    >>> frame = simulate_frame(np.random.default_rng(0), SimDesign(n_pairs=60, per_pair=3, pool=12))
    >>> res = validate_pairs(frame, quality_items=["correctness"])
    >>> bool(res.iut.equivalent), bool(res.superiority.loc[0, "superior"])
    (True, True)
    """
    _check_margins(margin)
    differences = {item: judgment_differences(frame, item) for item in quality_items}
    items = frame[ITEM]
    if bool((items == RUBRIC_ITEM).any() or items.str.startswith(RUBRIC_PREFIX).any()):
        differences[RUBRIC_ITEM] = judgment_differences(frame, RUBRIC_ITEM)
    return validate_differences(
        differences,
        judgments(frame),
        quality_items=quality_items,
        margin=margin,
        alpha=alpha,
        max_broken_share=max_broken_share,
        gap_ranges=gap_ranges,
    )


def _check_margins(margin: Margin) -> None:
    for value in margin.values() if isinstance(margin, Mapping) else [margin]:
        if not float(value) > 0:
            raise ValueError(f"margin must be positive, got {float(value)!r}")


def validate_differences(
    differences: Mapping[str, pd.DataFrame],
    per_judgment: pd.DataFrame,
    *,
    quality_items: Sequence[str] = QUALITY_ITEMS,
    margin: Margin = DEFAULTS.margin,
    alpha: float = DEFAULTS.alpha,
    max_broken_share: float = DEFAULTS.max_broken_share,
    gap_ranges: Mapping[str, float] | None = None,
) -> ValidationResult:
    """:func:`validate_pairs` from what it reads in a label frame: per item the per-judgment
    differences (:func:`analysis.aggregates.judgment_differences`; every quality item, and
    ``"rubric"`` when the study has rubric scores) and one row per judgment
    (:func:`analysis.aggregates.judgments`). A caller that never holds the long frame (a label
    dataset read item by item) gets the same result."""
    _check_margins(margin)
    eq_rows, crossed_rows, broken_rows, tosts, crossed = [], [], [], {}, {}
    diffs: dict[str, pd.DataFrame] = {}
    means: dict[str, pd.DataFrame] = {}
    for item in quality_items:
        d = differences[item]
        pm = pair_means_from_differences(d)
        diffs[item], means[item] = d, pm
        _require_two_pairs(pm, item)
        m = item_margin(margin, item)
        low, high = -m, m
        tost = tost_paired(pm["chosen"], pm["rejected"], low=low, high=high, alpha=alpha)
        wil = wilcoxon_tost_paired(pm["chosen"], pm["rejected"], low=low, high=high, alpha=alpha)
        tosts[item] = tost
        eq_rows.append(
            {
                "dimension": item,
                "n_pairs": tost.n,
                "estimate": tost.estimate,
                "ci_low": tost.ci_low,
                "ci_high": tost.ci_high,
                "low": low,
                "high": high,
                "p_lower": tost.p_lower,
                "p_upper": tost.p_upper,
                "p_value": tost.pvalue,
                "equivalent": tost.equivalent,
                "wilcoxon_estimate": wil.estimate,
                "wilcoxon_ci_low": wil.ci_low,
                "wilcoxon_ci_high": wil.ci_high,
                "wilcoxon_p_value": wil.pvalue,
                "wilcoxon_equivalent": wil.equivalent,
            }
        )
        span = float(gap_ranges[item]) if gap_ranges and item in gap_ranges else _gap_range(d)
        res = mixed_effect(None, item, margin=m, alpha=alpha, differences=d, span=span)
        crossed[item] = res
        crossed_rows.append({"dimension": item, **res.to_dict()})
        share = broken_share(
            d,
            margin=m,
            max_share=max_broken_share,
            alpha=alpha,
            gap_range=span,
        )
        broken_rows.append({"dimension": item, **share.to_dict()})

    has_rubric = RUBRIC_ITEM in differences
    panel: dict[str, float] = {}
    family: dict[str, float] = {}
    superiority = rubric_crossed = pd.DataFrame()
    if has_rubric:
        d = differences[RUBRIC_ITEM]
        rm = pair_means_from_differences(d)
        diffs[RUBRIC_ITEM], means[RUBRIC_ITEM] = d, rm
        _require_two_pairs(rm, RUBRIC_ITEM)
        sup = superiority_paired(rm["chosen"], rm["rejected"], alpha=alpha)
        sd = float(rm["diff"].std(ddof=1))
        superiority = pd.DataFrame(
            [
                {
                    "dimension": RUBRIC_ITEM,
                    **sup.to_dict(),
                    "mde": minimum_detectable_effect(sup.n, sd, alpha=alpha),
                }
            ]
        )
        panel[RUBRIC_ITEM] = sup.p_t if not math.isnan(sup.p_t) else sup.p_wilcoxon
        rc = crossed_mean(
            d["diff"], d[PAIR_ID], d[ANNOTATOR], item=RUBRIC_ITEM, alpha=alpha, low=-RUBRIC_SPAN
        )
        rubric_crossed = pd.DataFrame([{"dimension": RUBRIC_ITEM, **rc.to_dict()}])
        family[RUBRIC_ITEM] = rc.p_greater if math.isfinite(rc.p_greater) else 1.0
    pref = preference_pairs(per_judgment[PAIR_ID], per_judgment[PREFERENCE], alpha=alpha)
    panel["preference"] = pref.p_greater
    pc = crossed_mean(
        preference_scores(per_judgment) - 0.5,
        per_judgment[PAIR_ID],
        per_judgment[ANNOTATOR],
        item="preference",
        alpha=alpha,
        low=-0.5,  # a preference score (1 chosen, 0.5 tie, 0 rejected) less 0.5
    )
    preference_crossed = pd.DataFrame([{"dimension": "preference", **as_share(pc.to_dict(), alpha)}])
    family["preference"] = pc.p_greater if math.isfinite(pc.p_greater) else 1.0
    holm_table = holm(family, alpha=alpha).set_index("test")
    holm_panel = holm(panel, alpha=alpha).set_index("test")
    if not superiority.empty:
        superiority["p_holm"] = holm_panel.loc[RUBRIC_ITEM, "p_adjusted"]
        rubric_crossed["p_holm"] = holm_table.loc[RUBRIC_ITEM, "p_adjusted"]
    preference = pd.DataFrame([pref.to_dict()])
    preference["p_holm"] = holm_panel.loc["preference", "p_adjusted"]
    preference_crossed["p_holm"] = holm_table.loc["preference", "p_adjusted"]
    return ValidationResult(
        crossed=pd.DataFrame(crossed_rows),
        equivalence=pd.DataFrame(eq_rows),
        superiority=superiority,
        preference=preference,
        preference_judgments=pd.DataFrame([preference_rate(per_judgment[PREFERENCE], alpha=alpha).to_dict()]),
        holm=holm_table.reset_index(),
        iut=intersection_union(crossed),
        iut_panel=intersection_union(tosts),
        differences=diffs,
        pair_means=means,
        rubric_crossed=rubric_crossed,
        preference_crossed=preference_crossed,
        broken=pd.DataFrame(broken_rows),
    )


def as_share(row: dict[str, Any], alpha: float) -> dict[str, Any]:
    """A crossed fit of the preference score - 0.5 as a share preferring chosen: the estimate moved
    back by 0.5 and its 1 - 2*alpha interval drawn on the logit scale (inside 0..1)."""
    share = row["estimate"] + 0.5
    if row["matched"]:  # the exact bound for unanimous judgments: its interval as it is
        return row | {"estimate": share, "ci_low": row["ci_low"] + 0.5, "ci_high": row["ci_high"] + 0.5}
    quantile = float(stats.t.ppf(1 - alpha, row["df"])) if row["df"] > 0 else math.nan
    low, high = logit_interval(share, row["se"], quantile) if math.isfinite(quantile) else (math.nan,) * 2
    return row | {"estimate": share, "ci_low": low, "ci_high": high}


def preference_scores(per_judgment: pd.DataFrame) -> pd.Series:
    """Each judgment's preference score: 1 chosen, 0.5 tie, 0 rejected (the one home of "ties half")."""
    pref = per_judgment[PREFERENCE].to_numpy(dtype=float)
    return pd.Series(np.where(pref > 0, 1.0, np.where(pref < 0, 0.0, 0.5)), index=per_judgment.index)
