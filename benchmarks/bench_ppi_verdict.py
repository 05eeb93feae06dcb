"""Benchmark: a judge's whole verdict over every judged pair (mean gap AND broken share), Monte Carlo.

The Validation page's per-judge verdict makes the people-only equivalence claim over every judged
pair: PASS needs the prediction-powered TOST of the mean gap (``analysis.prediction_powered``) and
the prediction-powered Markov bound on the share of broken pairs (``analysis.ppi_broken_share``)
below its limit (and the study's ``min_pairs`` pairs rated by two or more annotators: at least 100
rated pairs here, so never binding). This benchmark measures that conjunction's false PASS and power
beside the people-only conjunction at the same human budget.

A study: ``N`` = 5,000 pairs with true gaps ``g``; a judge's gap on every pair; a fully crossed panel
of 3 annotators on a uniform sample of ``n`` pairs, ``d = g + a_j + e`` (annotator SD 0.1, noise SD
0.6, normal); margin 0.5, tolerated share 0.1, alpha 0.05. The mean-gap parts are
:func:`analysis.ppi_simulation.verdicts` (the balanced crossed model, equal to the report's REML fit on
a fully crossed panel: ``bench_ppi.py``); the broken-share parts are
:func:`analysis.broken_share.mean_square` and :func:`analysis.ppi_broken_share.ppi_mean_square`, the
report's own functions, on the same draws.

Gaps: ``zero`` (every pair at 0), ``narrow`` (``N(0, 0.1)``: a validated benchmark, no pair near the
margin), ``two-point`` (10% of the pairs at 1.01 x margin and the rest at 0: the broken share at its
limit, the case Markov's bound is tight for; the mean gap 0.05 is well inside the margin, so the
broken-share bound alone holds the verdict back). Judges: ``oracle`` (the true gap itself: the best
any judge can do), the ``tracking`` judge of :data:`analysis.ppi_simulation.JUDGES` (``g + N(0,
0.31)``), and its ``biased toward chosen``, ``anti-correlated`` and ``useless`` judges.

Usage: ``nice -n 10 python benchmarks/bench_ppi_verdict.py [--studies 2000] [--seed 20261206]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.broken_share import mean_square, share_bounds
from analysis.power import Plan
from analysis.ppi_broken_share import ppi_mean_square
from analysis.ppi_power import ppi_verdict_power
from analysis.ppi_simulation import JUDGES, Design, verdicts

ALPHA, MARGIN, MAX_SHARE = 0.05, 0.5, 0.1
N_PAIRS, PANEL = 5000, 3
ANNOTATOR_SD, NOISE_SD = 0.1, 0.6
CHUNK = 250
VALIDITY_JUDGES = ("oracle", "tracking", "biased toward chosen", "anti-correlated", "useless")
POWER_JUDGES = ("oracle", "tracking", "useless")


def true_gaps(kind: str, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """True gaps of `shape` (studies, pairs); the pairs are exchangeable, so the first n are uniform."""
    if kind == "two-point":
        order = np.argsort(rng.random(shape), axis=1)
        return np.where(order < round(0.1 * shape[1]), 1.01 * MARGIN, 0.0)
    if kind == "narrow":
        return rng.normal(0.0, 0.1, shape)
    return np.zeros(shape)


def judge_on(judge: str, g: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The judge's gap on every pair."""
    if judge == "oracle":
        return g.copy()
    design = Design(n_total=N_PAIRS, n_rated=2, panel=PANEL, mean_gap=0.0, judge=judge)
    return JUDGES[judge](design, g, np.zeros_like(g), rng)


def chunk(kind: str, judge: str, n: int, s: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Both verdicts' parts on `s` studies."""
    g = true_gaps(kind, (s, N_PAIRS), rng)
    f = judge_on(judge, g, rng)
    bias = rng.normal(0.0, ANNOTATOR_SD, (s, 1, PANEL))
    d = g[:, :n, None] + bias + rng.normal(0.0, NOISE_SD, (s, n, PANEL))
    design = Design(n_total=N_PAIRS, n_rated=n, panel=PANEL, mean_gap=0.0, judge="useless", margin=MARGIN)
    mean_gap = verdicts(design, d, f[:, :n], f[:, n:])
    pair = np.repeat(np.arange(s * n), PANEL)
    annotator = (np.arange(s)[:, None, None] * PANEL + np.arange(PANEL)[None, None, :]).repeat(n, 1).ravel()
    parts = mean_square(
        d.ravel(), pair, annotator, np.repeat(np.arange(s), n), floor_mean_square=MAX_SHARE * MARGIN**2
    )
    drawn = np.zeros((s, N_PAIRS), dtype=bool)
    drawn[:, :n] = True
    u, floor = np.zeros((s, N_PAIRS)), np.zeros((s, N_PAIRS))
    u[:, :n], floor[:, :n] = parts.pair_estimate.reshape(s, n), parts.pair_floor.reshape(s, n)
    res = ppi_mean_square(u, floor, f**2, drawn, parts.annotator_part)
    ppi_bound, _, _ = share_bounds(res.estimate, res.se, margin=MARGIN, alpha=ALPHA)
    people_bound, _, _ = share_bounds(res.people_estimate, res.people_se, margin=MARGIN, alpha=ALPHA)
    return {
        "people_mean": mean_gap["people"],
        "ppi_mean": mean_gap["ppi"],
        "people_broken": people_bound < MAX_SHARE,
        "ppi_broken": ppi_bound < MAX_SHARE,
        "people": mean_gap["people"] & (people_bound < MAX_SHARE),
        "ppi": mean_gap["ppi"] & (ppi_bound < MAX_SHARE),
        "lam_mean": mean_gap["lam"],
        "lam_broken": res.lam,
    }


def row(kind: str, judge: str, n: int, studies: int, rng: np.random.Generator) -> dict[str, float]:
    """Shares of PASS (and mean lambdas) over `studies` studies."""
    out: dict[str, list[np.ndarray]] = {}
    for start in range(0, studies, CHUNK):
        for key, value in chunk(kind, judge, n, min(CHUNK, studies - start), rng).items():
            out.setdefault(key, []).append(np.asarray(value, dtype=float))
    return {key: float(np.mean(np.concatenate(v))) for key, v in out.items()}


HEADER = (
    f"{'gaps':<10} {'judge':<22} {'n':>4} {'PPI':>7} {'people':>7} {'PPI mean':>9} {'PPI broken':>10} "
    f"{'people broken':>13} {'lambda m/b':>11} {'planner':>7}"
)
PAIR_VAR = {"zero": 0.0, "narrow": 0.01}


def planned(kind: str, n: int) -> float:
    """What `annotator power --judge` plans for the whole verdict at n rated pairs (people only: the
    judge's broken-share bound is planned as the people's)."""
    plan = Plan(n, PANEL, PANEL, MARGIN, PAIR_VAR[kind], ANNOTATOR_SD**2, NOISE_SD**2, alpha=ALPHA)
    return ppi_verdict_power(plan, n_total=N_PAIRS, correlation=0.0, max_share=MAX_SHARE)


def line(kind: str, judge: str, n: int, r: dict[str, float], flag: str = "") -> str:
    plan = f"{planned(kind, n):>7.4f}" if kind in PAIR_VAR else ""
    return (
        f"{kind:<10} {judge:<22} {n:>4} {r['ppi']:>7.4f} {r['people']:>7.4f} {r['ppi_mean']:>9.4f} "
        f"{r['ppi_broken']:>10.4f} {r['people_broken']:>13.4f} "
        f"{r['lam_mean']:>5.2f}/{r['lam_broken']:<5.2f} {plan}{flag}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261206)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    limit = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / args.studies)
    print(
        f"{args.studies} studies per row, N = {N_PAIRS}, a panel of {PANEL} on n uniform pairs, margin "
        f"{MARGIN}, tolerated share {MAX_SHARE}, alpha {ALPHA}; PPI / people = the whole verdict "
        "(mean gap AND broken share); lambda m/b = mean lambda of the mean gap / of the mean square"
    )
    print(f"\nFalse PASS, broken share at its limit (two-point gaps); limit alpha + 2 MC SE = {limit:.4f}")
    print(HEADER)
    over = 0
    for judge in VALIDITY_JUDGES:
        for n in (100, 400):
            r = row("two-point", judge, n, args.studies, rng)
            flag = "  NOT REACHED" if max(r["ppi"], r["people"]) > limit else ""
            over += bool(flag)
            print(line("two-point", judge, n, r, flag), flush=True)
    print(f"rows over the limit: {over}")
    print("\nPower (share of PASS) of a sound study, same human budget")
    print(HEADER)
    for kind in ("zero", "narrow"):
        for judge in POWER_JUDGES:
            for n in (120, 200, 240, 400, 800, 1600):
                print(line(kind, judge, n, row(kind, judge, n, args.studies, rng)), flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s, load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
