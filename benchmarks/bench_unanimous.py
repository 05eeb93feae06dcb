"""Benchmark: the preference test when every judgment agrees (Monte Carlo).

:func:`analysis.crossed_mean.crossed_mean` is the report's one-sided test of the preference share
(score 1 chosen, 0 rejected, less 0.5; ``low=-0.5`` as the validation passes it). When every judgment
scores the same it uses the exact bound for unanimous judgments (``0.5 ** m`` over m annotators who
each rated a different pair); otherwise the crossed REML model. Each study runs the whole test.

Designs: fully crossed (every annotator rates every pair) with 3, 5 and 8 annotators on 40 pairs, and
a pool (3 of 20 annotators per pair, 60 pairs, balanced load).

Null models, each at the boundary (the population's share preferring chosen is exactly 0.5):
- **annotators always one way**: each annotator always prefers chosen or always rejected, each with
  probability 1/2 (the worst case of the exact bound: unanimity in ``0.5 ** m`` of studies);
- **mostly one way**: the same with 2% of judgments flipped at random;
- **coin**: every judgment a fair coin.
Alternatives (power, no goal): **near-perfect** (each judgment prefers chosen with probability 0.99)
and **perfect** (every judgment prefers chosen).

Goal for every null row: PASS (one-sided p < alpha, no Holm adjustment) <= alpha + 2 MC SE; the
column ``unanimous`` is the share of studies decided by the exact bound.

Usage: ``nice python benchmarks/bench_unanimous.py [--studies N] [--seed S]`` (default 2,000).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.crossed_mean import crossed_mean  # noqa: E402

ALPHA = 0.05
FLIP = 0.02


def design(name: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(pair of each judgment, annotator of each judgment, pool size) of a named design."""
    if name.startswith("crossed"):
        q = int(name.split()[1])
        return np.repeat(np.arange(40), q), np.tile(np.arange(q), 40), q
    pairs = np.repeat(np.arange(60), 3)
    annotators = (np.arange(180) + np.repeat(np.arange(60), 3) // 7) % 20  # 3 distinct per pair, 9 each
    return pairs, annotators, 20


def scores(model: str, rng: np.random.Generator, annotators: np.ndarray, pool: int) -> np.ndarray:
    """One study's preference scores (1 chosen, 0 rejected) under `model`."""
    n = len(annotators)
    if model == "coin":
        return (rng.random(n) < 0.5).astype(float)
    if model == "near-perfect":
        return (rng.random(n) < 0.99).astype(float)
    if model == "perfect":
        return np.ones(n)
    way = (rng.random(pool) < 0.5)[annotators].astype(float)
    if model == "mostly one way":
        flip = rng.random(n) < FLIP
        way[flip] = 1 - way[flip]
    return way


def row(model: str, name: str, studies: int, rng: np.random.Generator) -> tuple[float, float, float]:
    """(share of PASS, share decided by the exact bound, seconds)."""
    pairs, annotators, pool = design(name)
    passed = unanimous = 0
    start = time.perf_counter()
    for _ in range(studies):
        y = scores(model, rng, annotators, pool) - 0.5
        res = crossed_mean(y, pairs, annotators, item="preference", alpha=ALPHA, low=-0.5)
        unanimous += res.matched > 0
        passed += bool(res.p_greater < ALPHA)
    return passed / studies, unanimous / studies, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261206)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    limit = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / args.studies)
    print(f"{args.studies} studies per row; goal for null rows: PASS <= {limit:.4f}")
    print(f"{'model':<28}{'design':<16}{'PASS':>8}{'unanimous':>11}{'seconds':>9}  goal")
    designs = ("crossed 3", "crossed 5", "crossed 8", "pool 3 of 20")
    for model in ("annotators always one way", "mostly one way", "coin", "near-perfect", "perfect"):
        for name in designs:
            if model == "coin" and name != "crossed 3":
                continue  # never unanimous: the crossed model alone, measured in bench_calibration
            share, decided, seconds = row(model, name, args.studies, rng)
            goal = "" if model in ("near-perfect", "perfect") else ("met" if share <= limit else "NOT MET")
            print(f"{model:<28}{name:<16}{share:>8.4f}{decided:>11.4f}{seconds:>9.1f}  {goal}", flush=True)


if __name__ == "__main__":
    main()
