"""Benchmark: does the people-only planner (`annotator power`, :func:`analysis.power.recommend_design`)
deliver the power it promises in the report's own verdict?

For a few pilots (variance components of one judgment's chosen - rejected gap) the planner recommends a
design (annotators in the pool, pairs, 3 annotators per pair) for power 0.8 at a true gap of 0. Each
design is then simulated: ``d = g_pair + a_annotator + e`` (normal), annotators assigned in balanced
blocks (a fresh random order of the pool per block of pairs, pair i of a block gets annotators
``(3i + j) mod pool``), and every study gets the report's verdict: the crossed REML fit
(:func:`analysis.mixed.fit_crossed`) with Satterthwaite df and the few-annotator guard
(:func:`analysis.mixed.guarded_se`), TOST at alpha 0.05. The same is done for the design the planner
recommended before it took the guard into account (the model's SE as the interval's, no guard).
"Reached" when the measured power is at least 0.8 - 2 MC SE.

Usage: ``python benchmarks/bench_planner.py [--studies 2000] [--seed 7] [--workers 2]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import replace
from multiprocessing import Pool
from multiprocessing.pool import Pool as WorkerPool
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.mixed import fit_crossed, guarded_se
from analysis.power import (
    MAX_PAIRS,
    MAX_POOL,
    Plan,
    crossed_design_se,
    recommend_design,
    smallest_reaching,
    tost_power_at,
)

PER_PAIR = 3
#: (name, margin, pair_var, annotator_var, residual_var)
PILOTS = [
    ("doctest pilot", 0.5, 0.05, 0.04, 0.8),
    ("annotators differ", 0.3, 0.05, 0.04, 0.6),
    ("pool benchmark", 0.3, 0.25, 0.01, 0.36),
    ("annotators differ more", 0.3, 0.25, 0.09, 0.36),
]


def unguarded_design(plan: Plan) -> tuple[int, int]:
    """(pool, pairs) the planner chose before: the smallest pool, then pairs, whose power with the
    model's SE and no guard reaches 0.8."""
    for pool in range(PER_PAIR, MAX_POOL + 1):

        def power(n: int, pool: int = pool) -> float:
            se, df = crossed_design_se(replace(plan, n_pairs=n, pool=pool))
            return tost_power_at(plan, se, df)

        if power(MAX_PAIRS) >= 0.8:
            return pool, smallest_reaching(power, 0.8, 2, MAX_PAIRS)
    raise ValueError("not reachable")


def run_chunk(args: tuple[float, float, float, float, int, int, int, range]) -> int:
    """How many of the studies `studies` pass the report's TOST."""
    margin, pv, av, rv, pool, n, seed, studies = args
    hits = 0
    for s in studies:
        rng = np.random.default_rng([seed, pool, n, s])
        blocks = -(-n // pool)
        ann = np.concatenate(
            [
                rng.permutation(pool)[(PER_PAIR * np.arange(pool)[:, None] + np.arange(PER_PAIR)) % pool]
                for _ in range(blocks)
            ]
        )[:n].ravel()
        pair = np.repeat(np.arange(n), PER_PAIR)
        d = (
            rng.normal(0, math.sqrt(av), pool)[ann]
            + rng.normal(0, math.sqrt(pv), n)[pair]
            + rng.normal(0, math.sqrt(rv), n * PER_PAIR)
        )
        fit = fit_crossed(d, np.ones((n * PER_PAIR, 1)), pair, ann)
        se, df, _ = guarded_se(fit, float(np.sqrt(fit.cov_params[0, 0])), float(fit.df[0]), 0.05)
        half = float(stats.t.ppf(0.95, df)) * se
        hits += bool(-margin < fit.params[0] - half and fit.params[0] + half < margin)
    return hits


Pilot = tuple[str, float, float, float, float]


def measured(workers: WorkerPool, pilot: Pilot, design: tuple[int, int], studies: int, seed: int) -> float:
    """The share of `studies` simulated studies of `design` (pool, pairs) that pass the report's TOST."""
    _, margin, pv, av, rv = pilot
    pool, n = design
    chunk = max(studies // 16, 10)
    tasks = [
        (margin, pv, av, rv, pool, n, seed, range(a, min(a + chunk, studies)))
        for a in range(0, studies, chunk)
    ]
    return sum(workers.map(run_chunk, tasks)) / studies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    floor = 0.8 - 2 * math.sqrt(0.8 * 0.2 / args.studies)
    t0 = time.time()
    print(f"{args.studies} studies per design, seed {args.seed}, {PER_PAIR} annotators per pair, alpha 0.05")
    with Pool(args.workers) as workers:
        for pilot in PILOTS:
            name, margin, pv, av, rv = pilot
            plan = Plan(MAX_PAIRS, PER_PAIR, MAX_POOL, margin, pv, av, rv)
            rec = recommend_design(plan)
            before = unguarded_design(plan)
            now = measured(workers, pilot, (rec.pool, rec.n_pairs), args.studies, args.seed)
            then = measured(workers, pilot, before, args.studies, args.seed)
            print(
                f"{name} (margin {margin}, pair/annotator/residual variance {pv}/{av}/{rv}): planner "
                f"{rec.pool} annotators x {rec.n_pairs} pairs, planned power {rec.power:.4f}, measured "
                f"{now:.4f} ({'reached' if now >= floor else 'NOT reached'}: >= {floor:.4f}); before: "
                f"{before[0]} x {before[1]}, measured {then:.4f}; load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    print(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
