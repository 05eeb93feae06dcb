"""Planning a prediction-powered study: how many pairs people must rate when a judge rates them all.

With ``N`` pairs judged, ``n`` of them rated by ``per_pair`` annotators from a pool of ``pool``, the
variance of the PPI++ mean gap at the optimal lambda (:mod:`analysis.prediction_powered`) is

    annotator_var / pool + s2 * (1 - rho^2 (N - n) / N) / n,     s2 = pair_var + residual_var / per_pair

with ``rho`` the correlation of the judge's gap with the people's pair-mean gap (``s2`` is that pair
mean's variance over pairs); ``rho = 0`` gives the people-only variance of
:func:`analysis.power.crossed_design_se`. As in the verdict, the few-annotator guard's interval
(the annotator term plus ``residual_var / (n per_pair)``, on pool - 1 df) is used when it is wider;
df by Satterthwaite with pool - 1 and n - 1 df; the power of the TOST as in
:func:`analysis.power.design_power`. A pilot (people and the judge on the same pairs)
gives the variance components and ``rho``.

When the pool is larger than the panel (the tool's pool design), the estimate's own spread is the
variance above while the interval is the guard's, whose annotator part is estimated on pool - 1 df:
the power averages the TOST over that part's chi-square distribution (:func:`_pool_power`; within
0.016 of the report's REML verdict in 11 Monte Carlo rows, ``benchmarks/bench_ppi_pool.py``). In a
fully crossed panel (pool = per_pair) the guard's SE stands for both: 0.02-0.04 below the simulated
power with 5 annotators, from 0.014 below to 0.021 above it with 3 (``benchmarks/bench_ppi.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from analysis.power import Plan, tost_power_at

__all__ = ["JudgePlan", "judge_plan", "ppi_design_power"]


def ppi_design_power(plan: Plan, *, n_total: int, correlation: float) -> tuple[float, float, float]:
    """Approximate power, SE and df of the prediction-powered TOST for a planned design: people rate
    the plan's ``n_pairs`` of the ``n_total`` pairs the judge rates, `correlation` is ``rho``.

    Examples
    --------
    Without a useful judge the people-only answer, with a good one a smaller SE:

    >>> plan = Plan(n_pairs=50, per_pair=5, pool=5, margin=0.3, pair_var=0.25, annotator_var=0.01,
    ...             residual_var=0.36)
    >>> p0, se0, _ = ppi_design_power(plan, n_total=5000, correlation=0.0)
    >>> p1, se1, _ = ppi_design_power(plan, n_total=5000, correlation=0.7)
    >>> se1 < se0, p1 > p0
    (True, True)
    """
    n_rated, per_pair, pool = plan.n_pairs, plan.per_pair, plan.pool
    if not (2 <= n_rated <= n_total and 1 <= per_pair <= pool):
        raise ValueError("need 2 <= n_rated <= n_total and 1 <= per_pair <= pool")
    rho2 = min(max(correlation, 0.0), 1.0) ** 2  # lambda is clipped at 0: a negative rho adds nothing
    va = plan.annotator_var / pool
    s2 = plan.pair_var + plan.residual_var / per_pair
    vr = s2 * (1.0 - rho2 * (n_total - n_rated) / n_total) / n_rated
    # the few-annotator guard's moment-based variance adds residual_var / (n per_pair) to the annotator
    # term (its own q - 1 df); the verdict uses the wider of the two intervals
    guard_va = va + plan.residual_var / (n_rated * per_pair)
    if guard_va + vr <= 0:  # judgments that never vary: the estimate is the true gap
        return float(abs(plan.true_diff) < plan.margin), 0.0, float(n_rated - 1)
    t_best, se, df = -math.inf, math.nan, math.nan
    for a_part in (va, guard_va):
        total = a_part + vr
        df_k = _satterthwaite(a_part, vr, pool, n_rated)
        half = float(stats.t.ppf(1 - plan.alpha, df_k)) * math.sqrt(total)
        if half > t_best:
            t_best, se, df = half, math.sqrt(total), df_k
    if pool > per_pair:
        return _pool_power(plan, guard_va, vr, spread=math.sqrt(va + vr)), se, df
    return tost_power_at(plan, se, df), se, df


def _satterthwaite(a_part: float, rest: float, pool: int, n_rated: int) -> float:
    """df of ``a_part + rest`` with pool - 1 df for the annotator part and n - 1 for the rest."""
    denom = a_part**2 / max(pool - 1, 1) + rest**2 / (n_rated - 1)
    return (a_part + rest) ** 2 / denom if pool >= 2 and denom > 0 else float(n_rated - 1)


#: Points of the annotator part's chi-square distribution the pool design's power averages over.
_QUANTILES = 256


def _pool_power(plan: Plan, guard_va: float, vr: float, *, spread: float) -> float:
    """The TOST's power when the estimate is normal with SD `spread` and the interval is the guard's:
    its annotator part `guard_va` estimated on pool - 1 df (chi-square; averaged over equally likely
    quantiles), the rest `vr` taken as known, df by Satterthwaite for each value."""
    df_a = max(plan.pool - 1, 1)
    a_part = guard_va * stats.chi2.ppf((np.arange(_QUANTILES) + 0.5) / _QUANTILES, df_a) / df_a
    denom = a_part**2 / df_a + vr**2 / (plan.n_pairs - 1)
    half = stats.t.ppf(1 - plan.alpha, (a_part + vr) ** 2 / denom) * np.sqrt(a_part + vr)
    upper = stats.norm.cdf((plan.margin - plan.true_diff - half) / spread)
    lower = stats.norm.cdf((-plan.margin - plan.true_diff + half) / spread)
    return float(np.clip(upper - lower, 0.0, None).mean())


@dataclass(frozen=True)
class JudgePlan:
    """Rated pairs needed for the target power, people only and with the judge (None: not reachable
    with up to ``n_total`` pairs), and the powers reached."""

    n_total: int
    people_pairs: int | None
    judge_pairs: int | None
    people_power: float
    judge_power: float


def judge_plan(plan: Plan, *, correlation: float, power: float = 0.8) -> JudgePlan:
    """The smallest number of rated pairs out of the plan's ``n_pairs`` (every pair the judge rates)
    that reaches `power`, without and with the judge (binary search, the power grows with the rated
    pairs).

    >>> plan = judge_plan(Plan(n_pairs=5000, per_pair=5, pool=5, margin=0.3, pair_var=0.25,
    ...                        annotator_var=0.01, residual_var=0.36), correlation=0.7)
    >>> plan.judge_pairs < plan.people_pairs
    True
    """
    n_total = plan.n_pairs

    def at(n: int, rho: float) -> float:
        return ppi_design_power(replace(plan, n_pairs=n), n_total=n_total, correlation=rho)[0]

    def smallest(rho: float) -> tuple[int | None, float]:
        lo, hi = 2, n_total
        if at(hi, rho) < power:
            return None, at(hi, rho)
        while lo < hi:
            mid = (lo + hi) // 2
            if at(mid, rho) >= power:
                hi = mid
            else:
                lo = mid + 1
        return lo, at(lo, rho)

    people, people_power = smallest(0.0)
    judge, judge_power = smallest(correlation)
    return JudgePlan(n_total, people, judge, people_power, judge_power)
