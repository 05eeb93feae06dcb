"""Planning a prediction-powered study: how many pairs people must rate when a judge rates them all.

With ``N`` pairs judged, ``n`` of them rated by ``per_pair`` annotators from a pool of ``pool``, the
variance of the PPI++ mean gap at the optimal lambda (:mod:`analysis.prediction_powered`) is

    annotator_var / pool + s2 * (1 - rho^2 (N - n) / N) / n,     s2 = pair_var + residual_var / per_pair

with ``rho`` the correlation of the judge's gap with the people's pair-mean gap (``s2`` is that pair
mean's variance over pairs); ``rho = 0`` gives the people-only design. The power of the verdict's
interval (the few-annotator guard included) is :func:`analysis.power.verdict_power`'s. A pilot (people
and the judge on the same pairs) gives the variance components and ``rho``.

The judge's whole verdict also needs the bound on the share of broken pairs below its limit and the
study's minimum of pairs rated by two or more annotators. A judge adds nothing measurable to that
bound (``benchmarks/bench_ppi_broken.py``: the people's judgment noise, which no judge predicts, is
most of its variance), so it is planned as the people's bound on the rated pairs
(:func:`analysis.power.equivalence_draws`, by simulation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from analysis.power import Plan, equivalence_draws, smallest_reaching, verdict_power

__all__ = ["JudgePlan", "judge_plan", "ppi_design_power", "ppi_verdict_power"]


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
    return verdict_power(plan, _pair_part(plan, n_total, correlation))


def _pair_part(plan: Plan, n_total: int, correlation: float) -> float:
    """The pair term of the prediction-powered mean's variance at the optimal lambda."""
    rho2 = min(max(correlation, 0.0), 1.0) ** 2  # lambda is clipped at 0: a negative rho adds nothing
    s2 = plan.pair_var + plan.residual_var / plan.per_pair
    return s2 * (1.0 - rho2 * (n_total - plan.n_pairs) / n_total) / plan.n_pairs


def ppi_verdict_power(
    plan: Plan, *, n_total: int, correlation: float, max_share: float, n_sim: int = 2000, seed: int = 0
) -> float:
    """Simulated power of the judge's whole verdict on one dimension: the prediction-powered TOST and
    the broken-share bound below `max_share` (the same draws for every n: common random numbers)."""
    draws = equivalence_draws(
        plan, _pair_part(plan, n_total, correlation), effect=plan.true_diff, max_share=max_share,
        rng=np.random.default_rng(seed), n_sim=n_sim,
    )  # fmt: skip
    return float(draws.mean())


@dataclass(frozen=True)
class JudgePlan:
    """Rated pairs needed for the target power, people only and with the judge (None: not reachable
    with up to ``n_total`` pairs), and the powers reached: ``*_pairs`` for the mean gap's TOST alone,
    ``*_verdict_pairs`` for the whole verdict (with the broken-share bound and ``min_pairs``)."""

    n_total: int
    people_pairs: int | None
    judge_pairs: int | None
    people_power: float
    judge_power: float
    people_verdict_pairs: int | None = None
    judge_verdict_pairs: int | None = None


def judge_plan(
    plan: Plan,
    *,
    correlation: float,
    power: float = 0.8,
    max_share: float = 0.1,
    min_pairs: int = 2,
    n_sim: int = 2000,
) -> JudgePlan:
    """The smallest number of rated pairs out of the plan's ``n_pairs`` (every pair the judge rates)
    that reaches `power`, without and with the judge (binary search, the power grows with the rated
    pairs): for the mean gap's TOST, and for the whole verdict (the TOST and the broken-share bound
    below `max_share`, at least `min_pairs` rated pairs), which needs at least as many.

    >>> plan = judge_plan(Plan(n_pairs=5000, per_pair=5, pool=5, margin=0.3, pair_var=0.25,
    ...                        annotator_var=0.01, residual_var=0.36), correlation=0.7, n_sim=200)
    >>> plan.judge_pairs < plan.people_pairs
    True
    >>> plan.judge_verdict_pairs is None or plan.judge_verdict_pairs >= plan.judge_pairs
    True
    """
    n_total = plan.n_pairs

    def at(n: int, rho: float) -> float:
        return ppi_design_power(replace(plan, n_pairs=n), n_total=n_total, correlation=rho)[0]

    def whole(n: int, rho: float) -> float:
        sized = replace(plan, n_pairs=n)
        return ppi_verdict_power(sized, n_total=n_total, correlation=rho, max_share=max_share, n_sim=n_sim)

    def smallest(power_at: Callable[[int], float], lo: int) -> int | None:
        if lo > n_total or power_at(n_total) < power:
            return None
        return smallest_reaching(power_at, power, lo, n_total)

    people = smallest(lambda n: at(n, 0.0), 2)
    judge = smallest(lambda n: at(n, correlation), 2)
    floor = max(min_pairs, 3)
    people_whole = None if people is None else smallest(lambda n: whole(n, 0.0), max(people, floor))
    judge_whole = None if judge is None else smallest(lambda n: whole(n, correlation), max(judge, floor))
    return JudgePlan(
        n_total,
        people,
        judge,
        at(people or n_total, 0.0),
        at(judge or n_total, correlation),
        people_whole,
        judge_whole,
    )
