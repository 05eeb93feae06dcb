"""Planning: fixed, two-stage and sequential designs side by side, from a pilot's variance components.

For a pool, a number of pairs and a judgment budget, :func:`compare_designs` simulates studies of each
registered design (:mod:`analysis.design`) whose pair gaps are normal around 0 with the pilot's pair
variance, with annotator effects on the gap (the pilot's annotator variance, one set per simulated pool)
and judgment noise (its residual variance), and reports the expected judgments and the power of the
equivalence verdict: the mean-gap TOST on the per-pair means and the calibrated "few broken pairs" test.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from analysis.design import Design, critical_values, noise_ratio, simulate_design

__all__ = ["candidate_designs", "compare_designs"]


class _PoolJudge:
    """Judgments from a pool: the j-th judgment of a pair goes to the pool's next annotator (an effect
    on the gap per annotator) plus noise; keeps each pair's sum."""

    def __init__(
        self, gaps: np.ndarray, pool: int, annotator_var: float, residual_var: float, rng: np.random.Generator
    ) -> None:
        self.gaps, self.pool = gaps, pool
        self.start = rng.integers(0, pool, gaps.shape)
        self.effect = rng.normal(0.0, math.sqrt(max(annotator_var, 0.0)), (gaps.shape[0], pool))
        self.sd = math.sqrt(max(residual_var, 0.0))
        self.sums = np.zeros(gaps.shape)

    def __call__(self, g: np.random.Generator, r: np.ndarray, c: np.ndarray, k: np.ndarray) -> np.ndarray:
        who = (self.start[r, c] + k.astype(np.int64)) % self.pool
        y = self.gaps[r, c] + self.effect[r, who] + g.normal(0.0, self.sd, r.size)
        self.sums[r, c] += y
        return y


def candidate_designs(budget: float) -> dict[str, Design]:
    """The designs compared at `budget` judgments per pair: fixed (the budget rounded down), two-stage
    (2 first, then blocks of 8) and sequential (1 first, then one at a time)."""
    fixed = max(1, int(math.floor(budget + 1e-9)))
    out = {f"fixed {fixed}": Design("fixed", fixed, float(fixed))}
    if budget >= 2:
        out["two-stage 2 + blocks of 8"] = Design("two_stage", 2, float(budget), 8)
    out["sequential 1 + one at a time"] = Design("sequential", 1, float(budget))
    return out


def compare_designs(
    *,
    n_pairs: int,
    pool: int,
    budget: float,
    margin: float,
    pair_var: float,
    annotator_var: float,
    residual_var: float,
    max_share: float = 0.1,
    alpha: float = 0.05,
    n_sim: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Expected judgments and power of the equivalence verdict for each candidate design.

    Parameters
    ----------
    n_pairs, pool : int
        Main pairs and annotators in the pool.
    budget : float
        Judgments per pair on average.
    margin, max_share, alpha : float
        As in the report.
    pair_var, annotator_var, residual_var : float
        The pilot's variance components of one judgment's chosen - rejected gap
        (:func:`analysis.power.variance_components`).
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
    >>> table = compare_designs(n_pairs=40, pool=10, budget=6, margin=0.5, pair_var=0.0,
    ...                         annotator_var=0.01, residual_var=0.3, n_sim=200)
    >>> list(table["design"])
    ['fixed 6', 'two-stage 2 + blocks of 8', 'sequential 1 + one at a time']
    >>> bool(table["power"].min() > 0.5)
    True
    """
    if n_pairs < 3 or pool < 1:
        raise ValueError("need at least 3 pairs and 1 annotator")
    noise_var = max(residual_var, 0.0) + max(annotator_var, 0.0)
    q = float(stats.t.ppf(1 - alpha, n_pairs - 1))
    rows = []
    for index, (name, design) in enumerate(candidate_designs(budget).items()):
        rng = np.random.default_rng(seed + index)
        gaps = rng.normal(0.0, math.sqrt(max(pair_var, 0.0)), (n_sim, n_pairs))
        judge = _PoolJudge(gaps, pool, annotator_var, residual_var, rng)
        t, _, counts = simulate_design(gaps, design, noise_var, margin, max_share, rng, judge=judge)
        crit = critical_values(design, n_pairs, noise_ratio(noise_var, margin), max_share, alpha, n_sim)[-1]
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
