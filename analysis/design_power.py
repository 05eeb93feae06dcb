"""Planning: fixed, two-stage and sequential designs side by side, from a pilot's variance components.

For a pool, a number of pairs and a judgment budget, :func:`compare_designs` simulates studies of each
registered design (:mod:`analysis.design`) whose pair gaps are normal around 0 with the pilot's pair
variance, with annotator effects on the gap (the pilot's annotator variance, one set per simulated pool)
and judgment noise (its residual variance), and reports the expected judgments and the power of the
equivalence verdict: the mean-gap TOST on the per-pair means and the calibrated "few broken pairs" test.
:func:`compare_overall` turns that into the power of the overall PASS over every verdict item.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from analysis.design import (
    Design,
    critical_values,
    noise_ratio,
    sequential_is_valid,
    shown_valid,
    simulate_design,
)
from analysis.lazy import stats
from analysis.power import PassPlan, Plan
from analysis.scale import item_margin

__all__ = ["candidate_designs", "compare_designs", "compare_overall"]


class _PoolJudge:
    """Judgments from the plan's pool: the j-th judgment of a pair goes to the pool's next annotator (an
    effect on the gap per annotator) plus noise; keeps each pair's sum."""

    def __init__(self, gaps: np.ndarray, plan: Plan, rng: np.random.Generator) -> None:
        self.gaps, self.pool = gaps, plan.pool
        self.start = rng.integers(0, plan.pool, gaps.shape)
        self.effect = rng.normal(0.0, math.sqrt(max(plan.annotator_var, 0.0)), (gaps.shape[0], plan.pool))
        self.sd = math.sqrt(max(plan.residual_var, 0.0))
        self.sums = np.zeros(gaps.shape)

    def __call__(self, g: np.random.Generator, r: np.ndarray, c: np.ndarray, k: np.ndarray) -> np.ndarray:
        who = (self.start[r, c] + k.astype(np.int64)) % self.pool
        y = self.gaps[r, c] + self.effect[r, who] + g.normal(0.0, self.sd, r.size)
        self.sums[r, c] += y
        return y


def candidate_designs(budget: float, n_pairs: int) -> dict[str, Design]:
    """The designs compared at `budget` judgments per pair for `n_pairs` main pairs: fixed (the budget
    rounded down), two-stage (2 first, then blocks of 8) and sequential (1 first, then one at a time; 3
    first above a budget of 3), each adaptive one only where its test was shown to hold at this budget
    and size (:func:`analysis.design.shown_valid`)."""
    fixed = max(1, int(math.floor(budget + 1e-9)))
    out = {f"fixed {fixed}": Design("fixed", fixed, float(fixed))}
    two_stage = Design("two_stage", 2, float(budget), 8)
    if budget >= 2 and shown_valid(two_stage, n_pairs):
        out["two-stage 2 + blocks of 8"] = two_stage
    first = next((k for k in (1, 3) if k <= budget and sequential_is_valid(k, budget)), None)
    if first is not None and shown_valid(Design("sequential", first, float(budget)), n_pairs):
        out[f"sequential {first} + one at a time"] = Design("sequential", first, float(budget))
    return out


def compare_designs(plan: Plan, *, max_share: float = 0.1, n_sim: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Expected judgments and power of the equivalence verdict for each candidate design.

    Parameters
    ----------
    plan : analysis.power.Plan
        The planned main pairs, pool, judgments per pair on average (``per_pair``, the budget), margin
        and alpha, and the pilot's variance components of one judgment's chosen - rejected gap; the
        pair gaps are simulated around 0 (the plan's ``true_diff`` is not used).
    max_share : float
        As in the report.
    n_sim : int, default 1000
        Simulated studies per design (the critical values use as many).
    seed : int

    Returns
    -------
    pandas.DataFrame
        One row per design: ``design, kind, first_stage, budget, judgments`` (expected),
        ``power_few`` (the few-broken test), ``power_mean`` (the mean-gap TOST), ``power`` (both),
        ``share_beyond`` (the true share beyond the margin under the pilot's pair variance).

    Examples
    --------
    >>> table = compare_designs(Plan(n_pairs=30, pool=10, per_pair=6, margin=0.5, pair_var=0.0,
    ...                              annotator_var=0.01, residual_var=0.3), n_sim=200)
    >>> list(table["design"])
    ['fixed 6', 'sequential 3 + one at a time']
    >>> bool(table["power"].iloc[1] > table["power"].iloc[0])
    True
    """
    n_pairs, margin = plan.n_pairs, plan.margin
    if n_pairs < 3 or plan.pool < 1:
        raise ValueError("need at least 3 pairs and 1 annotator")
    noise_var = max(plan.residual_var, 0.0) + max(plan.annotator_var, 0.0)
    q = float(stats.t.ppf(1 - plan.alpha, n_pairs - 1))
    rows = []
    for index, (name, design) in enumerate(candidate_designs(plan.per_pair, n_pairs).items()):
        rng = np.random.default_rng(seed + index)
        gaps = rng.normal(0.0, math.sqrt(max(plan.pair_var, 0.0)), (n_sim, n_pairs))
        judge = _PoolJudge(gaps, plan, rng)
        t, _, counts = simulate_design(gaps, design, noise_var, margin, max_share, rng, judge=judge)
        ratio = noise_ratio(noise_var, margin)
        crit = critical_values(design, n_pairs, ratio, max_share, plan.alpha, n_sim)[-1]
        few = t[:, -1] < crit
        means = judge.sums / np.maximum(counts, 1)
        m, se = means.mean(axis=1), means.std(axis=1, ddof=1) / math.sqrt(n_pairs)
        tost = (m - q * se > -margin) & (m + q * se < margin)
        rows.append(
            {
                "design": name,
                "kind": design.kind,
                "first_stage": design.first_stage,
                "budget": design.total(n_pairs) / n_pairs,
                "judgments": float(counts.sum(axis=1).mean()),
                "power_few": float(few.mean()),
                "power_mean": float(tost.mean()),
                "power": float((few & tost).mean()),
                "share_beyond": float((np.abs(gaps) > margin).mean()),
            }
        )
    return pd.DataFrame(rows)


def compare_overall(plan: PassPlan, *, n_sim: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Expected judgments and power of the overall PASS for each candidate design, from a pilot.

    Parameters
    ----------
    plan : analysis.power.PassPlan
        The pilot's verdict items (quality dimensions are simulated at a true gap of 0), the planned
        main pairs, pool and judgments per pair on average (``per_pair``, the budget), and the
        report's settings.
    n_sim : int, default 1000
        Simulated studies per design and item.
    seed : int

    Returns
    -------
    pandas.DataFrame
        One row per design: ``design, kind, judgments`` (expected), ``power_equivalence`` (every quality
        dimension's equivalence verdict), ``power_rest`` (the rubric and preference verdicts, Holm
        together), ``power`` (the overall PASS: both).

    Notes
    -----
    Each design is judged by the rule the report applies to it. A fixed design: the crossed-model TOST
    and the few-broken bound for any distribution of pair gaps, and the rubric and preference tests,
    all simulated together (:func:`analysis.power.overall_pass_power` with its per-pair judgments). A
    two-stage or sequential design: per quality dimension, the procedure itself with the calibrated
    few-broken test and a TOST on the per-pair means (:func:`compare_designs`; the report's mean test is
    the crossed-model TOST); the rubric and preference verdicts at the fixed design with as many
    judgments (their tests use every judgment, wherever it goes). Items are simulated independently
    and their powers multiplied (quality dimensions are positively correlated in real data, so the
    power of their intersection is if anything higher). Sample size, reliability and sensitivity are
    not simulated.

    Examples
    --------
    >>> comps = pd.DataFrame([{"item": "q", "kind": "equivalence", "effect": 0.0, "pair_var": 0.0,
    ...                        "annotator_var": 0.01, "residual_var": 0.3}])
    >>> table = compare_overall(PassPlan(comps, n_pairs=30, per_pair=6, pool=10, margin=0.5), n_sim=200)
    >>> list(table["kind"])
    ['fixed', 'sequential']
    >>> bool((table["power"] <= table["power_equivalence"]).all())
    True
    """
    from analysis.power import overall_pass_power

    components, n_pairs, budget, margin = plan.components, plan.n_pairs, plan.per_pair, plan.margin
    quality = components[components["kind"] == "equivalence"]
    rest = components[components["kind"] != "equivalence"]
    if quality.empty:
        raise ValueError("no quality dimension to plan for")
    designs = candidate_designs(budget, n_pairs)
    per_pair = next(iter(designs.values())).first_stage

    def simulated(items: pd.DataFrame) -> dict[str, float]:
        fixed = replace(plan, components=items, per_pair=per_pair, pool=max(plan.pool, per_pair))
        return overall_pass_power(fixed, n_sim=n_sim, seed=seed)

    whole = simulated(components)
    rest_power = simulated(rest)["power_overall"] if not rest.empty else 1.0
    fixed_equivalence = float(np.prod([whole[f"power_{item}"] for item in quality["item"]]))

    def item_plan(row: dict[str, Any]) -> Plan:
        parts = {k: float(row[k]) for k in ("pair_var", "annotator_var", "residual_var")}
        margin_of = item_margin(margin, str(row["item"]))
        return Plan(n_pairs, budget, plan.pool, margin_of, alpha=plan.alpha, **parts)

    max_share = plan.max_broken_share
    tables = [
        compare_designs(item_plan(row), max_share=max_share, n_sim=n_sim, seed=seed + 101 * index)
        for index, row in enumerate(quality.to_dict("records"))
    ]
    rows = []
    for position, (name, design) in enumerate(designs.items()):
        judgments = float(np.mean([t.iloc[position]["judgments"] for t in tables]))
        if design.kind == "fixed":
            equivalence, overall = fixed_equivalence, whole["power_overall"]
        else:
            equivalence = float(np.prod([t.iloc[position]["power"] for t in tables]))
            overall = equivalence * rest_power
        rows.append(
            {
                "design": name,
                "kind": design.kind,
                "judgments": judgments,
                "power_equivalence": equivalence,
                "power_rest": rest_power,
                "power": float(overall),
            }
        )
    return pd.DataFrame(rows)
