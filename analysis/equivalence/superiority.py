"""One-sided paired superiority (t and Wilcoxon signed-rank) with its effect sizes: d_z with a
noncentral-t interval and the matched-pairs rank-biserial correlation."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.equivalence.checks import TestResult, check_alpha, paired_differences
from analysis.equivalence.wilcoxon import wilcoxon_one_sided
from analysis.lazy import optimize, stats


@dataclass(frozen=True)
class SuperiorityResult(TestResult):
    """One-sided superiority of x over y for paired data.

    ``estimate`` = mean(x - y) with its 1 - 2*alpha interval (its lower end is the one-sided bound);
    ``p_t``: one-sided paired t test; ``p_wilcoxon``: one-sided Wilcoxon signed-rank test;
    ``dz`` = mean / sd of the differences with a noncentral-t interval (``dz_ci_method``);
    ``rank_biserial``: matched-pairs rank-biserial correlation with a Fisher-z interval.
    All intervals are 1 - 2*alpha, matching the one-sided tests at level alpha.
    """

    estimate: float
    ci_low: float
    ci_high: float
    t: float
    df: float
    p_t: float
    w: float
    p_wilcoxon: float
    dz: float
    dz_ci_low: float
    dz_ci_high: float
    dz_ci_method: str
    rank_biserial: float
    rb_ci_low: float
    rb_ci_high: float
    superior: bool
    superior_wilcoxon: bool
    alpha: float
    n: int


def _ratio(num: float, se: float) -> float:
    """num / se with the limits of a zero standard error (0/0 -> 0, i.e. p = 0.5)."""
    if se > 0:
        return num / se
    return 0.0 if num == 0 else math.copysign(math.inf, num)


def _dz_interval(t_obs: float, df: float, n: int, alpha: float) -> tuple[float, float, str]:
    """1 - 2*alpha interval for d_z by inverting the noncentral t (normal approximation as fallback)."""
    if not math.isfinite(t_obs):
        return math.nan, math.nan, "undefined (zero SD)"
    root_n = math.sqrt(n)
    try:
        spread = 10.0 * math.sqrt(1.0 + t_obs**2 / (2.0 * df)) + 10.0
        lo_ncp = optimize.brentq(lambda nc: stats.nct.sf(t_obs, df, nc) - alpha, t_obs - spread, t_obs + 1)
        hi_ncp = optimize.brentq(lambda nc: stats.nct.cdf(t_obs, df, nc) - alpha, t_obs - 1, t_obs + spread)
        if math.isfinite(lo_ncp) and math.isfinite(hi_ncp):
            return lo_ncp / root_n, hi_ncp / root_n, "noncentral t"
    except (ValueError, RuntimeError):
        pass
    dz = t_obs / root_n
    se = math.sqrt(1.0 / n + dz**2 / (2.0 * n))
    z = float(stats.norm.ppf(1.0 - alpha))
    return dz - z * se, dz + z * se, "normal approximation"


def _rank_biserial(d: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """Matched-pairs rank-biserial correlation (Kerby 2014) and a Fisher-z 1 - 2*alpha interval."""
    nz = d[d != 0]
    n = len(nz)
    if n == 0:
        return math.nan, math.nan, math.nan
    ranks = stats.rankdata(np.abs(nz))
    r_plus, r_minus = float(ranks[nz > 0].sum()), float(ranks[nz < 0].sum())
    r = (r_plus - r_minus) / (r_plus + r_minus)
    # SE of atanh(r) as in R's effectsize::rank_biserial for paired samples.
    se = math.sqrt((2 * n**3 + 3 * n**2 + n) / 6.0) / ((n**2 + n) / 2.0)
    z = float(stats.norm.ppf(1.0 - alpha))
    with np.errstate(divide="ignore"):
        center = float(np.arctanh(r))
    return r, float(np.tanh(center - z * se)), float(np.tanh(center + z * se))


def superiority_paired(x: Any, y: Any, *, alpha: float = 0.05) -> SuperiorityResult:
    """One-sided paired superiority test of x over y, with effect sizes.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Paired observations (e.g. per-pair rubric means of chosen and rejected).
    alpha : float, default 0.05
        One-sided level; every interval is 1 - 2*alpha so its lower end matches the one-sided test.

    Returns
    -------
    SuperiorityResult

    Notes
    -----
    * Paired t test of H1: mean(x - y) > 0 and Wilcoxon signed-rank test of H1: location > 0
      (scipy, ``zero_method="wilcox"``).
    * d_z = mean(d) / sd(d); its interval inverts the noncentral t distribution of t = d_z sqrt(n)
      (Cumming & Finch 2001); if the root search fails, the normal approximation
      se = sqrt(1/n + d_z^2 / (2n)) is used and ``dz_ci_method`` says so.
    * Matched-pairs rank-biserial r = (R+ - R-) / (R+ + R-) over non-zero differences (Kerby 2014),
      interval by Fisher z with SE = sqrt((2n^3 + 3n^2 + n) / 6) / (n(n + 1) / 2) as in R effectsize
      (when every non-zero difference has the same sign, r = +-1 and the interval collapses to it).

    Examples
    --------
    >>> res = superiority_paired([2.0, 1.5, 2.0, 1.0, 2.0, 1.5], [0.5, 1.0, 0.5, 0.0, 1.0, 1.5])
    >>> round(res.estimate, 3), res.superior, round(res.rank_biserial, 2)
    (0.917, True, 1.0)
    """
    alpha = check_alpha(alpha)
    d = paired_differences(x, y)
    n = len(d)
    df = n - 1.0
    mean, sd = float(np.mean(d)), float(np.std(d, ddof=1))
    se = sd / math.sqrt(n)
    t = _ratio(mean, se)
    # a zero variance leaves the t test undefined (never p = 0): the Wilcoxon test still answers
    p_t = float(stats.t.sf(t, df)) if se > 0 else math.nan
    half = float(stats.t.ppf(1.0 - alpha, df)) * se
    w, p_w = wilcoxon_one_sided(d, "greater")
    dz = mean / sd if sd > 0 else math.nan
    dz_low, dz_high, dz_method = _dz_interval(t if sd > 0 else math.nan, df, n, alpha)
    rb, rb_low, rb_high = _rank_biserial(d, alpha)
    return SuperiorityResult(
        estimate=mean,
        ci_low=mean - half,
        ci_high=mean + half,
        t=float(t),
        df=df,
        p_t=p_t,
        w=w,
        p_wilcoxon=p_w,
        dz=dz,
        dz_ci_low=float(dz_low),
        dz_ci_high=float(dz_high),
        dz_ci_method=dz_method,
        rank_biserial=rb,
        rb_ci_low=rb_low,
        rb_ci_high=rb_high,
        superior=bool(p_t < alpha) if se > 0 else bool(p_w < alpha),
        superior_wilcoxon=bool(p_w < alpha),
        alpha=alpha,
        n=n,
    )
