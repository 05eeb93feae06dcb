"""The one-sided test of a per-judgment mean over pairs and annotators (rubric and preference claims).

The same crossed random-effects model, REML fit, Satterthwaite df and few-annotator guard as the
equivalence verdict (:mod:`analysis.mixed`), for the intercept only: ``y ~ 1 + (1 | pair) +
(1 | annotator)``.

When every score is the same there is no variance to fit. With the scale's lowest score known, the
test is then exact for any crossed model (:func:`analysis.unanimous.unanimous_p`); without it the test
is undefined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analysis.equivalence.checks import WarnedResult
from analysis.lazy import stats
from analysis.mixed import fit_crossed, group_codes, intercept_se
from analysis.unanimous import (
    UNANIMOUS_METHOD,
    distinct_matching,
    lower_end,
    unanimous_message,
    unanimous_p,
)

__all__ = ["CrossedMean", "crossed_mean"]


@dataclass(frozen=True)
class CrossedMean(WarnedResult):
    """A one-sided test of the mean of a per-judgment score over pairs and annotators.

    ``estimate``/``se``/``df``: the fixed intercept of ``y ~ 1 + (1 | pair) + (1 | annotator)`` with
    Satterthwaite df and the few-annotator guard (:func:`analysis.mixed.intercept_se`);
    ``ci_low``/``ci_high``: the 1 - 2*alpha interval; ``p_greater``: one-sided p of ``mean > null``.
    ``annotator_estimable`` is False with one annotator (then the test is conditional on that
    annotator). ``warnings`` says what the caller should know. ``matched``: when every score is the
    same and the exact bound is used, the annotators it counts
    (:func:`analysis.unanimous.distinct_matching`), else 0.
    """

    item: str
    model: str
    estimate: float
    se: float
    df: float
    ci_low: float
    ci_high: float
    null: float
    p_greater: float
    alpha: float
    n_obs: int
    n_pairs: int
    n_annotators: int
    pair_var: float
    annotator_var: float
    residual_var: float
    annotator_estimable: bool
    warnings: list[str] = field(default_factory=list)
    matched: int = 0


def crossed_mean(
    y: Any,
    pairs: Any,
    annotators: Any,
    *,
    item: str,
    null: float = 0.0,
    alpha: float = 0.05,
    low: float | None = None,
) -> CrossedMean:
    """One-sided test that the mean of a per-judgment score exceeds `null`, over pairs and annotators.

    Parameters
    ----------
    y : array_like, shape (n,)
        One score per judgment, e.g. the rubric difference chosen - rejected, or the preference score
        (1 chosen, 0.5 tie, 0 rejected) minus 0.5.
    pairs, annotators : array_like, shape (n,)
        The pair and the annotator of each judgment.
    item : str
        A name for the result.
    null : float, default 0
        The mean under the null hypothesis.
    alpha : float, default 0.05
        One-sided level; the interval is 1 - 2*alpha.
    low : float, optional
        The lowest score the scale allows. When every score is the same, the test is then the exact
        bound of :func:`analysis.unanimous.unanimous_p` (its interval: the values of the mean that
        bound does not reject, up to the score); without it, such a test is undefined (p NaN).

    Returns
    -------
    CrossedMean

    Notes
    -----
    The same model, fit and guard as the equivalence verdict (:func:`mixed_effect`): annotators who
    differ in how much they see the effect enter the standard error with ``annotator_var / q``, so a
    small panel gives few degrees of freedom. A test over pair means alone cannot see an effect that
    every pair of one panel shares, and more pairs make it more confident, not less wrong.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pair, ann = np.repeat(np.arange(40), 3), np.tile(np.arange(3), 40)
    >>> y = 0.3 + rng.normal(0, 0.5, 3)[ann] + rng.normal(0, 0.4, 120)
    >>> res = crossed_mean(y, pair, ann, item="rubric")
    >>> res.n_annotators, res.df < 10
    (3, True)
    """
    alpha = float(alpha)
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    y = np.asarray(y, dtype=float)
    n_pairs = _n_distinct(pairs)
    n_annotators = _n_distinct(annotators)
    if n_pairs < 2:
        raise ValueError(f"the crossed model needs at least 2 pairs with scores on '{item}', got {n_pairs}")
    messages: list[str] = []
    estimable = n_annotators >= 2
    if not estimable:
        messages.append("only 1 annotator: the result is conditional on this annotator")
    model = "REML crossed random effects: y ~ 1 + (1 | pair) + (1 | annotator), Satterthwaite df"
    if float(np.ptp(y)) == 0.0:
        return _unanimous(
            y, pairs, annotators, item=item, null=null, alpha=alpha, low=low, messages=messages,
            counts=(n_pairs, n_annotators),
        )  # fmt: skip
    fit = fit_crossed(y, np.ones((len(y), 1)), pairs, annotators)
    se, df = intercept_se(fit, n_pairs, alpha, guard=estimable, messages=messages)
    est = float(fit.params[0])
    half = float(stats.t.ppf(1 - alpha, df)) * se
    p = float(stats.t.sf((est - null) / se, df)) if se > 0 else math.nan
    return CrossedMean(
        item, model, est, se, df, est - half, est + half, float(null), p, alpha, len(y), n_pairs,
        n_annotators, fit.pair_var, fit.annotator_var, fit.residual_var, estimable, messages,
    )  # fmt: skip


def _unanimous(
    y: np.ndarray,
    pairs: Any,
    annotators: Any,
    *,
    item: str,
    null: float,
    alpha: float,
    low: float | None,
    messages: list[str],
    counts: tuple[int, int],
) -> CrossedMean:
    """The test when every score is the same: the exact bound over the design's matching, or
    undefined without the scale's lowest score (`counts`: the pairs and annotators)."""
    est = float(y[0])
    n_pairs, n_annotators = counts
    model = UNANIMOUS_METHOD
    matched = 0
    if low is None:
        messages.append("every score is identical: no variance, the test is undefined")
        p, ci_low = math.nan, est
    else:
        matched = distinct_matching(pairs, annotators)
        p = unanimous_p(est, null=null, low=low, matched=matched)
        ci_low = min(est, lower_end(est, low=low, alpha=alpha, matched=matched))
        messages.append(unanimous_message("score", matched))
    return CrossedMean(
        item, model, est, 0.0, math.nan, ci_low, est, float(null), p, alpha, len(y), n_pairs,
        n_annotators, 0.0, 0.0, 0.0, n_annotators >= 2, messages, 0 if low is None else matched,
    )  # fmt: skip


def _n_distinct(labels: Any) -> int:
    """How many distinct labels there are."""
    codes = group_codes(labels)
    return int(codes.max()) + 1 if len(codes) else 0
