"""The share of pairs whose true chosen - rejected gap lies beyond the equivalence margin.

An equivalence claim about a pair set also needs few broken pairs: a mean gap inside the margin can
hide a fifth of pairs far beyond it. The pair gaps are modelled as normal with the crossed fit's
mean and pair SD (:mod:`analysis.mixed`); the verdict asks that the upper confidence bound of the
share beyond +-margin is below ``max_broken_share``. The bound comes from the between-pair spread of
the per-pair mean differences, less what judgment noise and annotator effects put into that spread
(:func:`annotator_design`: the annotators' share of it, exact for any assignment of annotators to
pairs).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from analysis.vocabulary import ANNOTATOR, PAIR_ID

__all__ = ["BrokenShare", "annotator_design", "broken_share", "broken_share_from"]


@dataclass(frozen=True)
class BrokenShare:
    """The share of pairs whose true chosen - rejected gap lies beyond the margin.

    ``share``: the estimate under a normal distribution of the pair gaps with the fitted mean and pair
    SD; ``upper``/``lower``: its one-sided 1 - alpha confidence bounds (from a bound on
    ``M = mean^2 + s2_pair``, the share's largest value over every normal with that M);
    ``pair_sd`` and its bounds ``pair_sd_upper``,
    ``pair_sd_lower``; ``below`` = ``upper < max_share``.
    """

    share: float
    lower: float
    upper: float
    pair_sd: float
    pair_sd_lower: float
    pair_sd_upper: float
    max_share: float
    margin: float
    below: bool

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict."""
        return asdict(self)


def _share_beyond(mean: float, sd: float, margin: float) -> float:
    if sd <= 0:
        return float(abs(mean) > margin)
    return float(stats.norm.cdf((-margin - mean) / sd) + stats.norm.sf((margin - mean) / sd))


def broken_share(
    pair_means: Any,
    judgments_per_pair: Any,
    *,
    residual_var: float,
    pair_var: float,
    mean: float,
    mean_se: float,
    mean_df: float,
    margin: float,
    annotator_var: float = 0.0,
    annotator_weight: float = 0.0,
    max_share: float = 0.1,
    alpha: float = 0.05,
) -> BrokenShare:
    """The estimated share of pairs whose true gap lies beyond +-margin, with confidence bounds.

        Parameters
        ----------
        pair_means : array_like, shape (n,)
            Per-pair mean chosen - rejected difference.
        judgments_per_pair : array_like, shape (n,)
            The judgments behind each mean.
        residual_var, pair_var : float
            The judgment-noise and pair variances of the crossed fit.
        mean, mean_se, mean_df : float
            The mean gap, its (guarded) standard error and df.
        margin : float
            The equivalence margin.
        annotator_var, annotator_weight : float, default 0
            The crossed fit's annotator variance, and the design's weight of it in the spread of the
            per-pair means (:func:`annotator_design`; 0 when every annotator rated every pair).
        max_share : float, default 0.1
            The largest share of broken pairs an equivalence claim tolerates.
        alpha : float, default 0.05
            One-sided level of the bounds.

        Returns
        -------
        BrokenShare

        Notes
        -----
        The pair gaps are modelled as normal with the fitted mean and pair SD (the crossed model's
        assumption); a mixture of good pairs and pairs broken far beyond the margin has a larger pair SD
        than its share suggests, so the normal share over-states such a mixture (the safe side). The
        bound: ``M = mean^2 + s2_pair`` is estimated by ``mean_hat^2 - se^2 + S^2 - s2 * mean(1/k_i)``
        (``S^2`` the variance of the per-pair means, ``s2 * mean(1/k_i)`` their noise, plus the
    annotators' part ``s2_annotator * annotator_weight`` when pairs had different annotators); its upper
        1 - alpha bound adds the root-sum-square of the chi-square excess of ``S^2`` on n - 1 df and the
        normal-theory spread of ``mean_hat^2``. For a given M the normal share beyond the margin is
        largest near mean 0, and the bound is that largest share, so a single confidence statement
        covers both the mean and the pair SD (no Bonferroni split).

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> gaps = np.where(rng.random(200) < 0.2, 1.5, 0.0) + rng.normal(0, 0.5, 200)
        >>> res = broken_share(gaps, np.full(200, 3), residual_var=0.75, pair_var=0.36, mean=0.3,
        ...                    mean_se=0.05, mean_df=199, margin=0.5)
        >>> res.below
        False
    """
    x = np.asarray(pair_means, dtype=float)
    k = np.asarray(judgments_per_pair, dtype=float)
    return broken_share_from(
        float(np.var(x, ddof=1)) if len(x) > 1 else math.nan,
        len(x),
        max(float(residual_var), 0.0) * float(np.mean(1.0 / k))
        + max(float(annotator_var), 0.0) * max(float(annotator_weight), 0.0)
        if len(k)
        else math.nan,
        pair_var=pair_var,
        mean=mean,
        mean_se=mean_se,
        mean_df=mean_df,
        margin=margin,
        max_share=max_share,
        alpha=alpha,
    )


def broken_share_from(
    s2: float,
    n: int,
    noise: float,
    *,
    pair_var: float,
    mean: float,
    mean_se: float,
    mean_df: float,
    margin: float,
    max_share: float = 0.1,
    alpha: float = 0.05,
) -> BrokenShare:
    """:func:`broken_share` from its statistics: the variance `s2` of `n` per-pair means and the part
    of it that is not pair variance, `noise` (judgment noise ``s2 * mean(1/k_i)`` plus the annotators'
    part); for simulations that draw the statistics."""
    pair_sd = math.sqrt(max(float(pair_var), 0.0))
    if n < 3 or not math.isfinite(mean_se):
        return BrokenShare(
            math.nan, math.nan, math.nan, pair_sd, math.nan, math.nan, max_share, margin, False
        )
    z = float(stats.norm.ppf(1 - alpha))
    # M = mean^2 + s2_pair: the share of a normal distribution beyond +-margin depends on (mean, SD)
    # almost only through M where it matters, and is largest at mean 0 for a given M
    spread_up = s2 * ((n - 1) / float(stats.chi2.ppf(alpha, n - 1)) - 1.0)
    spread_low = s2 * (1.0 - (n - 1) / float(stats.chi2.ppf(1 - alpha, n - 1)))
    se2 = float(mean_se) ** 2
    mean_part = z * math.sqrt(4 * mean * mean * se2 + 2 * se2 * se2)
    m_hat = mean * mean - se2 + s2 - noise
    m_up = max(m_hat + math.hypot(spread_up, mean_part), 0.0)
    m_low = max(m_hat - math.hypot(spread_low, mean_part), 0.0)
    sd_up = math.sqrt(max(m_up - max(mean * mean - se2, 0.0), 0.0))
    sd_low = math.sqrt(max(m_low - mean * mean - z * math.sqrt(4 * mean * mean * se2 + 2 * se2 * se2), 0.0))
    upper = _worst_share(m_up, margin)
    return BrokenShare(
        share=_share_beyond(mean, pair_sd, margin),
        lower=_share_beyond(0.0, math.sqrt(m_low), margin) if m_low > 0 else 0.0,
        upper=upper,
        pair_sd=pair_sd,
        pair_sd_lower=sd_low,
        pair_sd_upper=sd_up,
        max_share=float(max_share),
        margin=float(margin),
        below=bool(upper < max_share),
    )


def _worst_share(m: float, margin: float) -> float:
    """The largest normal share beyond +-margin over all (mean, SD) with mean^2 + SD^2 = m."""
    if m <= 0:
        return 0.0
    means = np.linspace(0.0, math.sqrt(m), 41)
    return max(_share_beyond(float(mu), math.sqrt(max(m - mu * mu, 0.0)), margin) for mu in means)


def annotator_design(judgments: pd.DataFrame) -> float:
    """The weight of the annotator variance in the spread of the per-pair mean differences.

    With ``w_ij`` the share of pair i's judgments made by annotator j, the annotator part of pair i's
    mean is ``sum_j w_ij a_j``; over independent annotator effects of variance ``s2_a`` its expected
    sample variance across the n pairs is ``s2_a * (sum_ij w_ij^2 - sum_j (sum_i w_ij)^2 / n) / (n - 1)``.
    The weight is 0 when every annotator rated every pair once (their effects shift every mean alike)
    and about ``1/k - 1/pool`` when k of a pool rate each pair.

    Parameters
    ----------
    judgments : pandas.DataFrame
        One row per judgment with ``pair_id`` and ``annotator``.

    Returns
    -------
    float
        The weight (0 for fewer than 2 pairs).

    Examples
    --------
    >>> crossed = pd.DataFrame({"pair_id": [1, 1, 2, 2], "annotator": ["a", "b", "a", "b"]})
    >>> annotator_design(crossed)
    0.0
    >>> apart = pd.DataFrame({"pair_id": [1, 1, 2, 2], "annotator": ["a", "b", "c", "d"]})
    >>> annotator_design(apart)  # each mean holds half of two annotators' variance
    0.5
    """
    pair, n = pd.factorize(judgments[PAIR_ID])[0], judgments[PAIR_ID].nunique()
    if n < 2:
        return 0.0
    who = pd.factorize(judgments[ANNOTATOR])[0]
    per_pair = np.bincount(pair, minlength=n).astype(float)
    cell = pd.Series(1.0 / per_pair[pair]).groupby([pair, who]).sum()
    by_annotator = cell.groupby(level=1).sum().to_numpy()
    return float((np.square(cell.to_numpy()).sum() - np.square(by_annotator).sum() / n) / (n - 1))
