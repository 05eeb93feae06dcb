"""The rank-based TOST: two one-sided Wilcoxon signed-rank tests with the Hodges-Lehmann interval."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from analysis.equivalence.checks import TestResult, check_alpha, check_bounds, paired_differences
from analysis.lazy import stats

# Above this many distinct differences the Hodges-Lehmann interval falls back to the sign-test
# interval around the median (the Walsh averages would need too much memory).
_MAX_DISTINCT_WALSH = 3000
_EXACT_SIGNRANK_MAX_N = 50
_SIGN_FLIP_MAX_N = 13  # scipy's wilcoxon enumerates all sign flips up to here when there are ties


@dataclass(frozen=True)
class WilcoxonTostResult(TestResult):
    """Rank-based TOST: two one-sided Wilcoxon signed-rank tests on the paired differences.

    ``estimate`` is the Hodges-Lehmann pseudo-median of the differences with its 1 - 2*alpha
    interval (``ci_method`` says how it was obtained), ``p_lower`` tests the differences - low > 0,
    ``p_upper`` tests the differences - high < 0; ``pvalue`` is the larger one.
    """

    estimate: float
    ci_low: float
    ci_high: float
    p_lower: float
    p_upper: float
    pvalue: float
    equivalent: bool
    low: float
    high: float
    alpha: float
    n: int
    method: str
    ci_method: str


def _signrank_lower_index(n: int, alpha: float) -> int:
    """Smallest k (1-based) with P(T+ <= k) >= alpha for the signed-rank statistic of n values."""
    total = n * (n + 1) // 2
    if n <= _EXACT_SIGNRANK_MAX_N:
        counts = np.zeros(total + 1)
        counts[0] = 1.0
        for r in range(1, n + 1):
            counts[r:] = counts[r:] + counts[:-r].copy()
        cdf = np.cumsum(counts) / 2.0**n
        k = int(np.searchsorted(cdf, alpha - 1e-12))
    else:
        sigma = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
        k = math.ceil(total / 2.0 + float(stats.norm.ppf(alpha)) * sigma - 0.5)
    return min(max(k, 1), total)


def _hodges_lehmann(d: np.ndarray, alpha: float) -> tuple[float, float, float, str]:
    """Hodges-Lehmann pseudo-median of d and its 1 - 2*alpha interval (inverted signed-rank test)."""
    n = len(d)
    values, counts = np.unique(np.round(d, 12), return_counts=True)
    if len(values) > _MAX_DISTINCT_WALSH:
        # Sign-test interval around the median: order statistics with binomial(n, 1/2) coverage.
        s = np.sort(d)
        k = int(stats.binom.ppf(alpha, n, 0.5))
        k = max(k, 1)
        return float(np.median(d)), float(s[k - 1]), float(s[n - k]), "median, sign-test interval"
    # Walsh averages over distinct values with multiplicities (exact; cheap for rating scales).
    i, j = np.triu_indices(len(values))
    walsh = (values[i] + values[j]) / 2.0
    weight = np.where(i == j, counts[i] * (counts[i] + 1) / 2.0, counts[i] * counts[j].astype(float))
    order = np.argsort(walsh, kind="stable")
    walsh, cum = walsh[order], np.cumsum(weight[order])
    total = cum[-1]

    def order_stat(k: float) -> float:
        return float(walsh[np.searchsorted(cum, k - 0.5)])

    mid = (total + 1) / 2.0
    estimate = (order_stat(math.floor(mid)) + order_stat(math.ceil(mid))) / 2.0
    k = _signrank_lower_index(n, alpha)
    kind = "exact" if n <= _EXACT_SIGNRANK_MAX_N else "normal approximation"
    return estimate, order_stat(k), order_stat(total - k + 1), f"Hodges-Lehmann, {kind} signed-rank interval"


def wilcoxon_one_sided(
    d: np.ndarray, alternative: Literal["greater", "less"], zero_method: Literal["wilcox", "pratt"] = "wilcox"
) -> tuple[float, float]:
    """Signed-rank statistic and one-sided p; all-zero differences give (0, 1)."""
    if not np.any(d != 0):
        return 0.0, 1.0
    d = np.asarray(d, dtype=float)
    if len(d) <= _SIGN_FLIP_MAX_N and (np.any(d == 0) or _has_ties(np.abs(d))):
        return _signed_rank_sign_flips(d, alternative, zero_method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # scipy's notice about ties / zeros
        res = stats.wilcoxon(d, alternative=alternative, zero_method=zero_method)
    return float(res.statistic), float(res.pvalue)


def _has_ties(values: np.ndarray) -> bool:
    nonzero = values[values != 0]
    return bool(len(np.unique(nonzero)) < len(nonzero))


def _signed_rank_sign_flips(
    d: np.ndarray, alternative: Literal["greater", "less"], zero_method: Literal["wilcox", "pratt"]
) -> tuple[float, float]:
    """The signed-rank statistic (sum of the positive differences' midranks) and its one-sided p over
    all 2^n sign flips: the distribution scipy's `wilcoxon` enumerates (a permutation test) for n <= 13
    with ties or zeros, counted here with the midranks doubled to integers instead of one Python call
    per flip."""
    nonzero = d != 0
    if zero_method == "wilcox":
        ranks = stats.rankdata(np.abs(d[nonzero]))
    else:  # Pratt: the zeros are ranked, then carry no sign
        ranks = stats.rankdata(np.abs(d))[nonzero]
    doubled = np.rint(2 * ranks).astype(np.int64)
    counts = np.zeros(int(doubled.sum()) + 1)
    counts[0] = 1.0
    for rank in doubled:
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    observed = int(doubled[d[nonzero] > 0].sum())
    tail = counts[observed:] if alternative == "greater" else counts[: observed + 1]
    return observed / 2.0, float(tail.sum() / counts.sum())


def wilcoxon_tost_paired(
    x: Any, y: Any, *, low: float, high: float, alpha: float = 0.05
) -> WilcoxonTostResult:
    """Rank-based paired equivalence test: two one-sided Wilcoxon signed-rank tests.

    Tests H0: location(x - y) <= low against differences - low > 0, and H0: location >= high against
    differences - high < 0. Suited to ordinal ratings as a robustness check of :func:`tost_paired`.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Paired observations; pairs with a missing value are dropped.
    low, high : float
        Equivalence bounds in raw units, ``low < high``.
    alpha : float, default 0.05
        Level of each one-sided test; the interval is 1 - 2*alpha.

    Returns
    -------
    WilcoxonTostResult

    Notes
    -----
    scipy's ``wilcoxon`` with ``zero_method="pratt"``: differences equal to a bound are kept in the
    ranking (Pratt 1959) instead of dropped, exact for small samples without ties, normal
    approximation with tie correction otherwise. Because ties at the bound still weaken the rank
    tests, equivalence also requires the 1 - 2*alpha Hodges-Lehmann interval to lie strictly inside
    (low, high): with ``[0.5] * 20 + [0.0] * 6`` against +-0.5 the estimate is 0.5, on the bound, and
    the result is not equivalent. The estimate is the Hodges-Lehmann pseudo-median (median of the Walsh
    averages, computed from distinct values and their counts) with the interval from inverting the
    signed-rank test (exact for n <= 50, normal approximation above; ties are ignored in the interval).
    With more than 3000 distinct differences the median and a sign-test interval are reported instead.

    Examples
    --------
    >>> res = wilcoxon_tost_paired([4, 5, 4, 3, 5, 4, 4, 5], [4, 4, 4, 3, 5, 5, 4, 5], low=-1, high=1)
    >>> res.estimate, res.equivalent
    (0.0, True)
    """
    alpha = check_alpha(alpha)
    low, high = check_bounds(low, high)
    d = paired_differences(x, y)
    _, p_lower = wilcoxon_one_sided(np.round(d - low, 12), "greater", "pratt")
    _, p_upper = wilcoxon_one_sided(np.round(d - high, 12), "less", "pratt")
    estimate, ci_low, ci_high, ci_method = _hodges_lehmann(d, alpha)
    pvalue = max(p_lower, p_upper)
    inside = bool(low < ci_low and ci_high < high)
    return WilcoxonTostResult(
        estimate=estimate,
        ci_low=ci_low,
        ci_high=ci_high,
        p_lower=p_lower,
        p_upper=p_upper,
        pvalue=pvalue,
        equivalent=bool(pvalue < alpha) and inside,
        low=low,
        high=high,
        alpha=alpha,
        n=len(d),
        method="Wilcoxon signed-rank TOST (Pratt zeros; interval strictly inside the bounds)",
        ci_method=ci_method,
    )
