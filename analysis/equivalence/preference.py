"""How often chosen is preferred: Wilson intervals, the rate over judgments and the test over pairs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.equivalence.checks import TestResult, as_vector, check_alpha
from analysis.lazy import proportion, stats


@dataclass(frozen=True)
class PreferenceRate(TestResult):
    """How often ``chosen`` was preferred.

    ``rate`` = n_chosen / (n_chosen + n_rejected) (ties excluded) with a Wilson 1 - alpha interval,
    an exact binomial test against 0.5 (two-sided ``p_two_sided`` and one-sided ``p_greater``);
    ``rate_ties_half`` = (n_chosen + n_ties / 2) / n with a Wilson interval on that fractional count
    (no exact test exists for it).
    """

    n: int
    n_chosen: int
    n_rejected: int
    n_ties: int
    rate: float
    ci_low: float
    ci_high: float
    p_two_sided: float
    p_greater: float
    rate_ties_half: float
    ci_ties_half_low: float
    ci_ties_half_high: float
    alpha: float


def _preferences(preferences: Any) -> np.ndarray:
    arr = as_vector(preferences, "preferences")
    arr = arr[~np.isnan(arr)]
    bad = arr[(arr != np.round(arr)) | (np.abs(arr) > 2)]
    if len(bad):
        raise ValueError(f"preferences must be integers in -2..2, got: {sorted(set(bad.tolist()))[:5]}")
    return arr


def wilson_interval(count: float, nobs: int, alpha: float) -> tuple[float, float]:
    """The two-sided 1 - alpha Wilson interval of a proportion ``count / nobs`` (NaN when nobs is 0).

    >>> [round(x, 4) for x in wilson_interval(8, 10, 0.05)]
    [0.4902, 0.9433]
    """
    if nobs == 0:
        return math.nan, math.nan
    low, high = proportion.proportion_confint(count, nobs, alpha=alpha, method="wilson")
    return float(low), float(high)


def logit_interval(share: float, se: float, quantile: float) -> tuple[float, float]:
    """The interval ``share`` +- ``quantile`` standard errors drawn on the logit scale (delta method),
    so that it stays inside 0..1; a share of exactly 0 or 1, or no standard error, gives the point.

    >>> [round(x, 3) for x in logit_interval(0.92, 0.05, 1.7)]
    [0.784, 0.973]
    """
    if not (0 < share < 1) or not math.isfinite(se) or se <= 0:
        return share, share
    center = math.log(share / (1 - share))
    half = quantile * se / (share * (1 - share))
    return 1 / (1 + math.exp(-(center - half))), 1 / (1 + math.exp(-(center + half)))


def preference_rate(preferences: Any, *, alpha: float = 0.05) -> PreferenceRate:
    """Rate at which ``chosen`` is preferred, with Wilson intervals and an exact binomial test.

    Parameters
    ----------
    preferences : array_like
        One preference per judgment, integers in -2..2 (positive = chosen preferred, 0 = tie).
        Missing values are dropped.
    alpha : float, default 0.05
        The intervals are 1 - alpha (two-sided Wilson, statsmodels ``proportion_confint``).

    Returns
    -------
    PreferenceRate

    Notes
    -----
    Ties excluded: ``scipy.stats.binomtest(n_chosen, n_chosen + n_rejected, 0.5)`` two-sided and
    ``alternative="greater"``. Ties counted as half a win: point estimate and Wilson interval only.
    Judgments of the same pair by several annotators are treated as independent here (descriptive
    only); the report's test is :func:`preference_pairs`, at the level of pairs.

    Examples
    --------
    >>> res = preference_rate([2, 1, 1, 0, -1, 2, 1, 0])
    >>> res.n_chosen, res.n_ties, round(res.rate, 3), round(res.rate_ties_half, 3)
    (5, 2, 0.833, 0.75)
    """
    alpha = check_alpha(alpha)
    arr = _preferences(preferences)
    n = len(arr)
    n_chosen, n_rejected = int((arr > 0).sum()), int((arr < 0).sum())
    n_ties = n - n_chosen - n_rejected
    decided = n_chosen + n_rejected
    if decided:
        p_two = float(stats.binomtest(n_chosen, decided, 0.5).pvalue)
        p_greater = float(stats.binomtest(n_chosen, decided, 0.5, alternative="greater").pvalue)
        rate = n_chosen / decided
    else:
        p_two = p_greater = rate = math.nan
    ci_low, ci_high = wilson_interval(n_chosen, decided, alpha)
    half_count = n_chosen + 0.5 * n_ties
    half_low, half_high = wilson_interval(half_count, n, alpha)
    return PreferenceRate(
        n=n,
        n_chosen=n_chosen,
        n_rejected=n_rejected,
        n_ties=n_ties,
        rate=rate,
        ci_low=ci_low,
        ci_high=ci_high,
        p_two_sided=p_two,
        p_greater=p_greater,
        rate_ties_half=half_count / n if n else math.nan,
        ci_ties_half_low=half_low,
        ci_ties_half_high=half_high,
        alpha=alpha,
    )


@dataclass(frozen=True)
class PairPreference(TestResult):
    """Preference for ``chosen`` tested at the level of pairs.

    Per pair, ``share`` = (judgments preferring chosen + half the ties) / judgments; ``rate`` is the
    mean share over pairs (every pair weighs the same, however many judgments it has), with a one-sided
    t test of H1: rate > 0.5 over pairs (``p_greater``) and the matching 1 - 2*alpha interval (its
    lower end is the one-sided bound), drawn on the logit scale so that it stays inside 0..1. When every
    pair has the same share the t test is undefined and an exact sign test over pairs (shares above vs
    below 0.5) is used instead, with a Wilson interval over pairs (``method`` says so).
    ``rate_judgments`` is the pooled share of non-tied judgments preferring chosen (descriptive only).
    """

    n_pairs: int
    n_judgments: int
    n_chosen: int
    n_rejected: int
    n_ties: int
    rate: float
    se: float
    df: float
    ci_low: float
    ci_high: float
    p_greater: float
    rate_judgments: float
    method: str
    alpha: float


def preference_pairs(pair_ids: Any, preferences: Any, *, alpha: float = 0.05) -> PairPreference:
    """Preference for ``chosen`` at the level of pairs (judgments of one pair are not independent).

    Parameters
    ----------
    pair_ids : array_like, shape (n,)
        The pair of each judgment.
    preferences : array_like, shape (n,)
        One preference per judgment, integers in -2..2 (positive = chosen preferred, 0 = tie).
    alpha : float, default 0.05
        One-sided level; the interval is 1 - 2*alpha.

    Returns
    -------
    PairPreference

    Notes
    -----
    Ties count as half a preference for each side, so a pair rated tie by everyone has share 0.5.
    The test is a one-sample t test of the per-pair shares against 0.5: a pair-level (cluster) test,
    calibrated when pairs differ in how clearly chosen wins (three judgments of one pair are one
    piece of evidence, not three).

    Examples
    --------
    >>> res = preference_pairs(["a", "a", "b", "b", "c", "c"], [2, 1, 1, 0, -1, 1])
    >>> res.n_pairs, round(res.rate, 3), res.n_ties
    (3, 0.75, 1)
    """
    alpha = check_alpha(alpha)
    pref = as_vector(preferences, "preferences")
    ids = np.asarray(pair_ids).astype(str)
    if len(ids) != len(pref):
        raise ValueError(
            f"pair_ids and preferences must have the same length, got {len(ids)} and {len(pref)}"
        )
    keep = ~np.isnan(pref)
    ids, pref = ids[keep], pref[keep]
    _preferences(pref)
    win = np.where(pref > 0, 1.0, np.where(pref < 0, 0.0, 0.5))
    codes, uniq = pd.factorize(ids)
    n_pairs = len(uniq)
    if n_pairs < 2:
        raise ValueError(f"a pair-level preference test needs at least 2 pairs, got {n_pairs}")
    share = np.bincount(codes, weights=win) / np.bincount(codes)
    n_chosen, n_rejected = int((pref > 0).sum()), int((pref < 0).sum())
    mean = float(share.mean())
    sd = float(share.std(ddof=1))
    df = float(n_pairs - 1)
    se = sd / math.sqrt(n_pairs)
    if se > 0:
        t = (mean - 0.5) / se
        p = float(stats.t.sf(t, df))
        ci_low, ci_high = logit_interval(mean, se, float(stats.t.ppf(1 - alpha, df)))
        method = "one-sided t test of per-pair shares vs 0.5 (ties count half); logit interval"
    else:
        above, below = int((share > 0.5).sum()), int((share < 0.5).sum())
        p = (
            float(stats.binomtest(above, above + below, 0.5, alternative="greater").pvalue)
            if above + below
            else 1.0
        )
        ci_low, ci_high = wilson_interval(mean * n_pairs, n_pairs, 2 * alpha)
        method = "exact sign test over pairs (every pair has the same share; no t test); Wilson interval"
    decided = n_chosen + n_rejected
    return PairPreference(
        n_pairs=n_pairs,
        n_judgments=len(pref),
        n_chosen=n_chosen,
        n_rejected=n_rejected,
        n_ties=len(pref) - decided,
        rate=mean,
        se=se,
        df=df,
        ci_low=float(ci_low),
        ci_high=float(ci_high),
        p_greater=p,
        rate_judgments=n_chosen / decided if decided else math.nan,
        method=method,
        alpha=alpha,
    )
