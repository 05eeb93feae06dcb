"""The one-sided test of a per-judgment mean over pairs and annotators (rubric and preference claims).

The same crossed random-effects model, REML fit, Satterthwaite df and few-annotator guard as the
equivalence verdict (:mod:`analysis.mixed`), for the intercept only: ``y ~ 1 + (1 | pair) +
(1 | annotator)``.

When every score is the same there is no variance to fit. With the scale's lowest score known, the test
is then exact for any crossed model (:func:`unanimous_p`); without it the test is undefined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analysis.equivalence.checks import WarnedResult
from analysis.lazy import sparse, stats
from analysis.mixed import fit_crossed, group_codes, intercept_se

__all__ = ["CrossedMean", "crossed_mean", "distinct_matching", "unanimous_p"]


@dataclass(frozen=True)
class CrossedMean(WarnedResult):
    """A one-sided test of the mean of a per-judgment score over pairs and annotators.

    ``estimate``/``se``/``df``: the fixed intercept of ``y ~ 1 + (1 | pair) + (1 | annotator)`` with
    Satterthwaite df and the few-annotator guard (:func:`analysis.mixed.intercept_se`);
    ``ci_low``/``ci_high``: the 1 - 2*alpha interval; ``p_greater``: one-sided p of ``mean > null``.
    ``annotator_estimable`` is False with one annotator (then the test is conditional on that
    annotator). ``warnings`` says what the caller should know. ``matched``: when every score is the
    same and the exact bound is used, the annotators it counts (:func:`distinct_matching`), else 0.
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
        bound of :func:`unanimous_p` (its interval: the values of the mean that bound does not reject,
        up to the score); without it, such a test is undefined (p NaN).

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
        return _unanimous(y, pairs, annotators, item=item, null=null, alpha=alpha, low=low, messages=messages)
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
) -> CrossedMean:
    """The test when every score is the same: :func:`unanimous_p` over the design's matching, or
    undefined without the scale's lowest score."""
    est = float(y[0])
    n_pairs, n_annotators = _n_distinct(pairs), _n_distinct(annotators)
    model = "exact bound for unanimous judgments (any crossed model; Markov and Finner's inequalities)"
    matched = 0
    if low is None:
        messages.append("every score is identical: no variance, the test is undefined")
        p, ci_low = math.nan, est
    else:
        matched = distinct_matching(pairs, annotators)
        p = unanimous_p(est, null=null, low=low, matched=matched)
        ci_low = min(est, low + (est - low) * alpha ** (1 / matched)) if est > low else est
        messages.append(
            f"every score is identical: the exact bound for unanimous judgments is used, over "
            f"{matched} annotator(s) who each rated a different pair"
        )
    return CrossedMean(
        item, model, est, 0.0, math.nan, ci_low, est, float(null), p, alpha, len(y), n_pairs,
        n_annotators, 0.0, 0.0, 0.0, n_annotators >= 2, messages, 0 if low is None else matched,
    )  # fmt: skip


def unanimous_p(value: float, *, null: float, low: float, matched: int) -> float:
    """One-sided p of "the mean score exceeds `null`" when every judgment scored `value`, valid for
    any crossed model (pairs and annotators drawn independently, judgments independent given both).

    Under the null, a judgment scores at least `value` with probability at most
    ``s = (null - low) / (value - low)`` (Markov's inequality on scores >= `low`); by Finner's
    inequality over a matching of the design (`matched` annotators each paired with a different pair:
    :func:`distinct_matching`), all of them do so with probability at most ``s ** matched``. The bound
    is reached when each annotator always gives `value` or always `low` (s = 1/2 for a preference
    that is chosen or rejected), so unanimity shows more than this panel only with enough annotators:
    ``matched >= log(alpha) / log(s)`` (5 for s = 1/2 at alpha 0.05).

    >>> unanimous_p(0.5, null=0.0, low=-0.5, matched=3), unanimous_p(0.5, null=0.0, low=-0.5, matched=5)
    (0.125, 0.03125)
    >>> unanimous_p(0.0, null=0.0, low=-0.5, matched=9)
    1.0
    """
    if not value > null:
        return 1.0
    if not null > low:
        return 0.0
    return float(((null - low) / (value - low)) ** matched)


def distinct_matching(pairs: Any, annotators: Any) -> int:
    """The most annotators that can each be given a different pair they rated (a maximum matching of
    the design's pair x annotator graph): min(pairs, annotators) when everyone rated every pair.

    >>> distinct_matching(["p1", "p1", "p2", "p2"], ["a", "b", "a", "b"])
    2
    >>> distinct_matching(["p1", "p1"], ["a", "b"])
    1
    """
    rows, cols = group_codes(pairs), group_codes(annotators)
    if not len(rows):
        return 0
    graph = sparse.csr_matrix(
        (np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(int(rows.max()) + 1, int(cols.max()) + 1)
    )
    graph.sum_duplicates()
    matches = sparse.csgraph.maximum_bipartite_matching(graph, perm_type="column")
    return int((matches >= 0).sum())


def _n_distinct(labels: Any) -> int:
    """How many distinct labels there are."""
    codes = group_codes(labels)
    return int(codes.max()) + 1 if len(codes) else 0
