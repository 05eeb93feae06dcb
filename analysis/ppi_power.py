"""Planning a prediction-powered study: how many pairs people must rate when a judge rates them all.

With ``N`` pairs judged, ``n`` of them rated by ``per_pair`` annotators from a pool of ``pool``, the
variance of the PPI++ mean gap at the optimal lambda (:mod:`analysis.prediction_powered`) is

    annotator_var / pool + s2 * (1 - rho^2 (N - n) / N) / n,     s2 = pair_var + residual_var / per_pair

with ``rho`` the correlation of the judge's gap with the people's pair-mean gap (``s2`` is that pair
mean's variance over pairs); ``rho = 0`` gives the people-only design. The power of the verdict's
interval (the few-annotator guard included) is :func:`analysis.power.verdict_power`'s. A pilot (people
and the judge on the same pairs) gives the variance components and ``rho``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from analysis.power import Plan, smallest_reaching, verdict_power

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
    s2 = plan.pair_var + plan.residual_var / per_pair
    return verdict_power(plan, s2 * (1.0 - rho2 * (n_total - n_rated) / n_total) / n_rated)


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
        if at(n_total, rho) < power:
            return None, at(n_total, rho)
        n = smallest_reaching(lambda n: at(n, rho), power, 2, n_total)
        return n, at(n, rho)

    people, people_power = smallest(0.0)
    judge, judge_power = smallest(correlation)
    return JudgePlan(n_total, people, judge, people_power, judge_power)
