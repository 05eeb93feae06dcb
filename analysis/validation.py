"""One-call validation of chosen/rejected pairs: equivalence, superiority, preference, IUT verdict.

:func:`validate_pairs` runs, per quality dimension, the paired TOST on per-pair mean differences
(chosen - rejected) and its Wilcoxon counterpart (plus, optionally, the mixed-model check); for rubric
alignment a one-sided superiority test on per-pair rubric means; the preference rate for ``chosen``;
and the intersection-union verdict over the dimensions. Results are flat DataFrames that the report
turns into JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from analysis.equivalence import (
    IutResult,
    holm,
    intersection_union,
    preference_rate,
    superiority_paired,
    tost_paired,
    wilcoxon_tost_paired,
)
from analysis.frames import ITEM, QUALITY_ITEMS, RUBRIC_ITEM, RUBRIC_PREFIX, judgments, pair_means
from analysis.models import mixed_effect

__all__ = ["ValidationResult", "validate_pairs"]


@dataclass(frozen=True)
class ValidationResult:
    """Everything :func:`validate_pairs` computed.

    Attributes
    ----------
    equivalence : pandas.DataFrame
        One row per dimension: ``dimension, n_pairs, estimate, ci_low, ci_high, low, high, p_lower,
        p_upper, p_value, equivalent`` (paired TOST) and ``wilcoxon_estimate, wilcoxon_ci_low,
        wilcoxon_ci_high, wilcoxon_p_value, wilcoxon_equivalent`` (rank-based TOST).
    superiority : pandas.DataFrame
        One row for ``rubric`` (empty when the frame has no rubric scores): the
        :class:`analysis.equivalence.SuperiorityResult` fields plus ``dimension`` and ``p_holm``.
    preference : pandas.DataFrame
        One row: the :class:`analysis.equivalence.PreferenceRate` fields.
    holm : pandas.DataFrame
        The superiority family (rubric t test, preference one-sided binomial test), Holm-adjusted.
    mixed : pandas.DataFrame
        One row per dimension from :func:`analysis.models.mixed_effect` (empty if not requested).
    iut : IutResult
        All dimensions equivalent (paired TOST), combined p = max p; no multiplicity correction is
        needed for an intersection-union test (Berger 1982).
    """

    equivalence: pd.DataFrame
    superiority: pd.DataFrame
    preference: pd.DataFrame
    holm: pd.DataFrame
    mixed: pd.DataFrame
    iut: IutResult


def validate_pairs(
    frame: pd.DataFrame,
    *,
    quality_items: Sequence[str] = QUALITY_ITEMS,
    margin: float = 0.5,
    alpha: float = 0.05,
    mixed: bool = True,
) -> ValidationResult:
    """Run the validation statistics on a label frame.

    Parameters
    ----------
    frame : pandas.DataFrame
        A validated label frame (:func:`analysis.frames.validate_frame`).
    quality_items : sequence of str
        The dimensions that must be equivalent (default correctness, relevance, helpfulness).
    margin : float, default 0.5
        Symmetric equivalence margin in scale points.
    alpha : float, default 0.05
        Level of every one-sided test (TOST intervals are 1 - 2*alpha).
    mixed : bool, default True
        Also run the mixed-effects check per dimension.

    Returns
    -------
    ValidationResult

    Raises
    ------
    ValueError
        If a quality item has no scores, or the margin is not positive.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> rows = []
    >>> for i in range(40):
    ...     for a in ("a1", "a2", "a3"):
    ...         pref = int(rng.integers(0, 3))
    ...         for resp, rub in (("chosen", 2), ("rejected", 0)):
    ...             rows.append((f"p{i}", a, resp, "correctness", float(rng.integers(4, 6)), pref))
    ...             rows.append((f"p{i}", a, resp, "rubric:0", float(rub), pref))
    >>> df = pd.DataFrame(rows, columns=["pair_id", "annotator", "response", "item", "value", "preference"])
    >>> df = df.assign(confidence=2, time_s=20.0)
    >>> res = validate_pairs(df, quality_items=["correctness"])
    >>> bool(res.iut.equivalent), bool(res.superiority.loc[0, "superior"])
    (True, True)
    """
    margin = float(margin)
    if not margin > 0:
        raise ValueError(f"margin must be positive, got {margin!r}")
    low, high = -margin, margin
    eq_rows, mixed_rows, tosts = [], [], {}
    for item in quality_items:
        pm = pair_means(frame, item)
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
        if mixed:
            mixed_rows.append(mixed_effect(frame, item, margin=margin, alpha=alpha).to_dict())

    items = frame[ITEM]
    has_rubric = bool((items == RUBRIC_ITEM).any() or items.str.startswith(RUBRIC_PREFIX).any())
    family: dict[str, float] = {}
    superiority = pd.DataFrame()
    if has_rubric:
        rm = pair_means(frame, RUBRIC_ITEM)
        sup = superiority_paired(rm["chosen"], rm["rejected"], alpha=alpha)
        superiority = pd.DataFrame([{"dimension": RUBRIC_ITEM, **sup.to_dict()}])
        family[RUBRIC_ITEM] = sup.p_t
    pref = preference_rate(judgments(frame)["preference"], alpha=alpha)
    if pref.p_greater == pref.p_greater:  # not NaN
        family["preference"] = pref.p_greater
    holm_table = holm(family, alpha=alpha)
    if not superiority.empty:
        superiority["p_holm"] = holm_table.set_index("test").loc[RUBRIC_ITEM, "p_adjusted"]
    return ValidationResult(
        equivalence=pd.DataFrame(eq_rows),
        superiority=superiority,
        preference=pd.DataFrame([pref.to_dict()]),
        holm=holm_table,
        mixed=pd.DataFrame(mixed_rows),
        iut=intersection_union(tosts),
    )
