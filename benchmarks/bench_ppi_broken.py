"""Benchmark: the prediction-powered bound on the share of broken pairs over every judged pair, Monte Carlo.

A study: ``N`` pairs with true gaps ``g``; a judge (:data:`analysis.ppi_simulation.JUDGES`, with the
default :class:`analysis.ppi_simulation.Design`, so the tracking judge is ``g + N(0, 0.31)``, the r 0.7
judge on N(., 0.5) gaps) gives a gap on every pair; people rate a sample of the pairs, 3 annotators per
pair from a pool of 20 (annotator SD 0.1 on the gap, judgment noise SD 0.6). The sample is uniform
(the first ``n`` of randomly placed pairs) or the tool's active draw
(:func:`analysis.active_ppi.inclusion_probabilities`, expected size ``n``, Poisson sampling, the
judge's uncertainty ``1 / (0.2 + |f|)``: more draws where the judge sees no gap). The verdict: the
upper 95% bound on the share of pairs beyond the margin 0.5 is below 0.1
(:func:`analysis.ppi_broken_share.ppi_mean_square` on the per-pair parts of
:func:`analysis.broken_share.mean_square`, the same functions as the report).

Rows:
- **boundary** (false PASS, must be <= alpha + 2 MC SE): two-point gaps (10% of the pairs at 1.01 x
  margin, the rest at 0: the case Markov's bound is tight for) and normal gaps with 10% beyond the
  margin (SD margin / 1.645); every judge, uniform and active draws, n 100 and 400. Beside it the
  people-only bound (weighted under the active draw) and, under the active draw, the unweighted
  people-only bound of the rated sample (what the report's people-only verdict computes); var ratio:
  the people-only variance of M over the prediction-powered one (what the judge added).
- **power** at gap 0 (every pair at 0): the share of PASS with the judge and people-only at the same
  human budget, n 100, 200 and 400.

Usage: ``nice -n 10 python benchmarks/bench_ppi_broken.py [--studies 2000] [--only boundary|power]``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.active_ppi import inclusion_probabilities
from analysis.broken_share import mean_square, share_bounds
from analysis.ppi_broken_share import ppi_mean_square
from analysis.ppi_simulation import JUDGES, Design, judge_gaps

ALPHA, MARGIN, MAX_SHARE = 0.05, 0.5, 0.1
N_PAIRS, PER_PAIR, POOL = 5000, 3, 20
CHUNK = 250


def gaps(kind: str, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """True gaps of `shape` (studies, pairs): two-point, normal with 10% beyond the margin, or 0."""
    if kind == "two-point":
        order = np.argsort(rng.random(shape), axis=1)
        return np.where(order < round(0.1 * shape[1]), 1.01 * MARGIN, 0.0)
    if kind == "normal":
        return rng.normal(0.0, MARGIN / 1.6449, shape)
    return np.zeros(shape)


def chunk(
    kind: str, judge: str, draw: str, n: int, s: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """PASS of the prediction-powered and people-only bounds on `s` studies (and lambda)."""
    g = gaps(kind, (s, N_PAIRS), rng)
    category = (rng.random((s, N_PAIRS)) < 0.5).astype(float)
    f = judge_gaps(
        Design(n_total=N_PAIRS, n_rated=n, panel=PER_PAIR, mean_gap=0.0, judge=judge), g, category, rng
    )
    if draw == "uniform":
        drawn = np.zeros((s, N_PAIRS), dtype=bool)
        drawn[:, :n] = True
        probability = None
    else:
        probability = inclusion_probabilities(1.0 / (0.2 + np.abs(f)), n)
        drawn = rng.random((s, N_PAIRS)) < probability
    flat = np.flatnonzero(drawn.ravel())
    study_of_pair = flat // N_PAIRS
    pair = np.repeat(np.arange(len(flat)), PER_PAIR)
    who = np.argsort(rng.random((len(flat), POOL)), axis=1)[:, :PER_PAIR].ravel()
    annotator = study_of_pair[pair] * POOL + who
    bias = rng.normal(0.0, 0.1, s * POOL)
    d = g.ravel()[flat][pair] + bias[annotator] + rng.normal(0.0, 0.6, len(pair))
    parts = mean_square(d, pair, annotator, study_of_pair, floor_mean_square=MAX_SHARE * MARGIN**2)
    u, floor = np.zeros(s * N_PAIRS), np.zeros(s * N_PAIRS)
    u[flat], floor[flat] = parts.pair_estimate, parts.pair_floor
    res = ppi_mean_square(
        u.reshape(s, N_PAIRS), floor.reshape(s, N_PAIRS), f**2, drawn, parts.annotator_part, probability
    )
    ppi, _, _ = share_bounds(res.estimate, res.se, margin=MARGIN, alpha=ALPHA)
    people, _, _ = share_bounds(res.people_estimate, res.people_se, margin=MARGIN, alpha=ALPHA)
    rated_only, _, _ = share_bounds(parts.estimate, parts.se, margin=MARGIN, alpha=ALPHA)
    return {
        "ppi": ppi < MAX_SHARE,
        "people": people < MAX_SHARE,
        "rated_only": rated_only < MAX_SHARE,
        "lam": res.lam,
        "var_ratio": res.people_se**2 / res.se**2,
    }


def run(kind: str, judge: str, draw: str, n: int, studies: int, rng: np.random.Generator) -> dict[str, float]:
    """Shares of PASS over `studies` studies of one row."""
    out: dict[str, list[np.ndarray]] = {}
    for start in range(0, studies, CHUNK):
        for key, value in chunk(kind, judge, draw, n, min(CHUNK, studies - start), rng).items():
            out.setdefault(key, []).append(value)
    return {key: float(np.mean(np.concatenate(v))) for key, v in out.items()}


def boundary(studies: int, rng: np.random.Generator) -> int:
    mc = 2 * math.sqrt(ALPHA * (1 - ALPHA) / studies)
    print(
        f"\nBoundary: false PASS (bound < {MAX_SHARE}) with 10% of the pairs beyond the margin; limit "
        f"alpha + 2 MC SE = {ALPHA + mc:.4f}"
    )
    print(
        f"{'gaps':<10} {'judge':<26} {'draw':<8} {'n':>4} {'PPI':>7} {'people':>7} {'rated-only':>10} "
        f"{'lambda':>7} {'var ratio':>9}"
    )
    over = 0
    for kind in ("two-point", "normal"):
        for judge in JUDGES:
            for draw in ("uniform", "active"):
                for n in (100, 400):
                    r = run(kind, judge, draw, n, studies, rng)
                    flag = "  NOT REACHED" if r["ppi"] > ALPHA + mc or r["people"] > ALPHA + mc else ""
                    over += bool(flag)
                    print(
                        f"{kind:<10} {judge:<26} {draw:<8} {n:>4} {r['ppi']:>7.4f} {r['people']:>7.4f} "
                        f"{r['rated_only']:>10.4f} {r['lam']:>7.3f} {r['var_ratio']:>9.3f}{flag}",
                        flush=True,
                    )
    return over


def power(studies: int, rng: np.random.Generator) -> None:
    print("\nPower at gap 0 (every pair at 0): share of PASS, same human budget; var ratio = people / PPI")
    print(f"{'judge':<26} {'draw':<8} {'n':>4} {'PPI':>7} {'people':>7} {'lambda':>7} {'var ratio':>9}")
    for judge in JUDGES:
        for draw in ("uniform", "active"):
            for n in (100, 200, 400):
                r = run("zero", judge, draw, n, studies, rng)
                print(
                    f"{judge:<26} {draw:<8} {n:>4} {r['ppi']:>7.4f} {r['people']:>7.4f} {r['lam']:>7.3f} "
                    f"{r['var_ratio']:>9.3f}",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--only", choices=["boundary", "power"])
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    print(
        f"{args.studies} studies per row, N = {N_PAIRS} judged pairs, {PER_PAIR} annotators per rated pair "
        f"(pool {POOL}), margin {MARGIN}, max share {MAX_SHARE}, alpha {ALPHA}"
    )
    if args.only in (None, "boundary"):
        over = boundary(args.studies, rng)
        print(f"rows over alpha + 2 MC SE (PPI or people): {over}")
    if args.only in (None, "power"):
        power(args.studies, rng)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
