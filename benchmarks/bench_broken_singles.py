"""Benchmark: the broken-share bound when some pairs are rated once, by annotators whose noise differs.

The bound's mean squared gap M takes a pair rated once as ``d^2`` less a noise part. Run with
``PYTHONPATH`` at a checkout to measure that checkout's :func:`analysis.broken_share.mean_square` (the
function's signature is unchanged, so the same script measures the rule before and after a change).

Designs (300 pairs per study, annotator SD 0.1 on the gap):
- **lead + crowd**: one precise annotator (noise SD 0.2) rates every pair; two of a crowd of 20 (noise
  SD 0.8) rate every other pair as well (half the pairs are rated once, by the precise annotator);
- **overlap, equal noise**: half the pairs get 3 of 20 annotators, the other half 1 (noise SD 0.6);
- **all rated by 3**: 3 of 20 annotators on every pair (no pair rated once; the control).
Gaps: **boundary** (10% of the pairs at 1.01 x margin, the rest at 0: the share of broken pairs is at
the tolerated 0.1, so a PASS is a false PASS; goal <= alpha + 2 MC SE) and **zero** (every pair at 0:
power). Margin 0.5, tolerated share 0.1, alpha 0.05.

Usage: ``PYTHONPATH=. nice python benchmarks/bench_broken_singles.py [--studies N] [--seed S]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from analysis.broken_share import mean_square, share_bounds

MARGIN, MAX_SHARE, ALPHA, PAIRS, POOL = 0.5, 0.1, 0.05, 300, 20


def judgments(design: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One study's (pair, annotator code, noise SD) per judgment."""
    pairs, who, sd = [], [], []
    for i in range(PAIRS):
        if design == "lead + crowd":
            crowd = rng.choice(POOL, 2, replace=False) + 1 if i % 2 else []
            panel = [(0, 0.2), *[(int(c), 0.8) for c in crowd]]
        else:
            size = 3 if design == "all rated by 3" or i % 2 else 1
            panel = [(int(c), 0.6) for c in rng.choice(POOL, size, replace=False)]
        for annotator, noise in panel:
            pairs.append(i)
            who.append(annotator)
            sd.append(noise)
    return np.array(pairs), np.array(who), np.array(sd)


def passes(design: str, gaps: str, studies: int, rng: np.random.Generator) -> tuple[float, float]:
    """(share of studies whose bound is below the tolerated share, mean M)."""
    diff, pair, annotator = [], [], []
    for s in range(studies):
        p, a, sd = judgments(design, rng)
        g = np.zeros(PAIRS)
        if gaps == "boundary":
            g[rng.choice(PAIRS, int(MAX_SHARE * PAIRS), replace=False)] = 1.01 * MARGIN
        effect = rng.normal(0, 0.1, POOL + 1)
        diff.append(g[p] + effect[a] + rng.normal(0, sd))
        pair.append(p + s * PAIRS)
        annotator.append(a + s * (POOL + 1))
    est = mean_square(
        np.concatenate(diff),
        np.concatenate(pair),
        np.concatenate(annotator),
        np.repeat(np.arange(studies), PAIRS),
        floor_mean_square=MAX_SHARE * MARGIN**2,
    )
    upper, _, _ = share_bounds(est.estimate, est.se, margin=MARGIN, alpha=ALPHA)
    return float(np.mean(upper < MAX_SHARE)), float(np.nanmean(est.estimate))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261206)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    limit = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / args.studies)
    print(f"{args.studies} studies per row; boundary goal: PASS <= {limit:.4f}")
    print(f"{'design':<24}{'gaps':<10}{'PASS':>8}{'mean M':>9}{'true M':>8}{'seconds':>9}  goal")
    for design in ("lead + crowd", "overlap, equal noise", "all rated by 3"):
        for gaps in ("boundary", "zero"):
            start = time.perf_counter()
            share, m = passes(design, gaps, args.studies, rng)
            true_m = MAX_SHARE * (1.01 * MARGIN) ** 2 if gaps == "boundary" else 0.0
            goal = ("met" if share <= limit else "NOT MET") if gaps == "boundary" else ""
            seconds = time.perf_counter() - start
            line = f"{design:<24}{gaps:<10}{share:>8.4f}{m:>9.4f}{true_m:>8.4f}{seconds:>9.1f}  {goal}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
