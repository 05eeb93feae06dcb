"""Benchmark: the prediction-powered equivalence verdict in the tool's pool design (3 of 20 per pair).

A study: ``N`` pairs with true chosen - rejected gaps ``g ~ N(mean, 0.5)``, a judge's gap on every
pair (:data:`analysis.ppi_simulation.JUDGES`), people on a uniform random sample of ``n`` pairs, each
rated by 3 annotators drawn from a pool of 20 with balanced loads, ``d = g + a_j + e`` (annotator SD
0.1 or 0.3, judgment noise SD 0.6, normal). Both verdicts come from the report's own code,
:func:`analysis.prediction_powered.prediction_powered_tost` on each study: the people-only crossed-model
TOST (REML, Satterthwaite df, few-annotator guard) on the rated pairs and the prediction-powered one
(PPI++ power-tuned lambda, the human correction in the crossed model). No kernel: every study is a
REML fit (two per study), spread over worker processes.

Common random numbers per design: study ``s`` draws its pairs, annotators, sample order, assignment
and noise from ``(seed, design, s)`` and each judge from its own stream, so the sample of ``n`` pairs
is the first ``n`` of one random order and every ``n`` and judge sees the same people.

Balanced loads: the sampled pairs are taken in blocks of 20; block ``b`` uses a fresh random order
``p_b`` of the pool and pair ``i`` of the block gets annotators ``p_b[(3i + j) mod 20]``, j = 0..2
(distinct within a pair; loads differ by at most 1).

The tracking judge is ``g + noise`` with the noise of :mod:`analysis.ppi_simulation` for a target
correlation with the people's pair mean, whose variance here is ``0.25 + (s2_annotator + 0.36) / 3``
(3 different annotators per pair). The measured correlation is printed.

Usage: ``nice -n 10 python benchmarks/bench_ppi_pool.py [--studies 2000] [--seed 40] [--workers 2]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass, replace
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.power import Plan
from analysis.ppi_power import judge_plan
from analysis.ppi_simulation import Design, judge_gaps
from analysis.prediction_powered import PPIQuestion, prediction_powered_tost

ALPHA = 0.05
POOL = 20
PER_PAIR = 3
PAIR_SD = 0.5
NOISE_SD = 0.6
N_TOTAL = 5000
N_MAX = 300  # the most rated pairs a study can have
JUDGE_IDS = {"tracking": 1, "biased toward chosen": 2, "anti-correlated": 3, "useless": 4}


@dataclass(frozen=True)
class PoolDesign:
    """One pool design: margin, annotator SD, true mean gap and an id that seeds its studies."""

    key: int
    margin: float
    annotator_sd: float
    mean_gap: float = 0.0
    n_total: int = N_TOTAL


def draw_people(design: PoolDesign, seed: int, s: int, n: int) -> tuple[np.ndarray, pd.DataFrame]:
    """Study `s`: the true gaps of all pairs (sampled pairs first) and the people's judgments of the
    first `n` sampled pairs (``pair_id, annotator, diff``); the draws do not depend on `n`."""
    n_max = N_MAX
    rng = np.random.default_rng([seed, design.key, s])
    g = design.mean_gap + rng.normal(0, PAIR_SD, design.n_total)  # i.i.d.: the first n are a uniform sample
    bias = rng.normal(0, design.annotator_sd, POOL)
    blocks = -(-n_max // POOL)
    ann = np.concatenate(
        [
            rng.permutation(POOL)[(PER_PAIR * np.arange(POOL)[:, None] + np.arange(PER_PAIR)) % POOL]
            for _ in range(blocks)
        ]
    )[:n_max]
    pairs = np.repeat(np.arange(n_max), PER_PAIR)
    ann_flat = ann.ravel()
    d = g[pairs] + bias[ann_flat] + rng.normal(0, NOISE_SD, n_max * PER_PAIR)
    keep = slice(0, n * PER_PAIR)
    return g, pd.DataFrame({"pair_id": pairs[keep], "annotator": ann_flat[keep], "diff": d[keep]})


def judge_for(design: PoolDesign, judge: str, corr: float, g: np.ndarray, seed: int, s: int) -> pd.Series:
    """The judge's gap on every pair (its own random stream)."""
    rng = np.random.default_rng([seed, design.key, s, JUDGE_IDS[judge], int(round(corr * 100))])
    sim = Design(
        n_total=design.n_total,
        n_rated=2,
        panel=PER_PAIR,
        mean_gap=design.mean_gap,
        judge=judge,
        judge_corr=corr,
        pair_sd=PAIR_SD,
        annotator_sd=design.annotator_sd,
        noise_sd=math.sqrt(NOISE_SD**2 + design.annotator_sd**2),  # the pool's pair-mean variance
        margin=design.margin,
    )
    return pd.Series(judge_gaps(sim, g, np.zeros_like(g), rng), index=np.arange(design.n_total))


def _without_guard() -> None:
    """The counterfactual ``--no-guard``: the few-annotator guard never widens (REML-Satterthwaite only)."""
    import analysis.mixed

    def unguarded(fit: object, se: float, df: float, alpha: float) -> tuple[float, float, bool]:
        return se, df, False

    analysis.mixed.guarded_se = unguarded  # type: ignore[assignment]


def run_chunk(args: tuple[PoolDesign, str, float, int, int, range]) -> np.ndarray:
    """Both verdicts for studies `studies` at `n` rated pairs: rows (people PASS, PPI PASS, lambda,
    correlation, effective pairs / n)."""
    design, judge, corr, n, seed, studies = args
    out = np.empty((len(studies), 5))
    for row, s in enumerate(studies):
        g, people = draw_people(design, seed, s, n)
        f = judge_for(design, judge, corr, g, seed, s)
        r = prediction_powered_tost(people, f, PPIQuestion("quality", design.margin, ALPHA))
        out[row] = (r.people_equivalent, r.equivalent, r.lam, r.correlation, r.effective_pairs / n)
    return out


class Runner:
    """Runs (design, judge, n) cells over a worker pool and caches them."""

    def __init__(self, studies: int, seed: int, workers: int, guard: bool) -> None:
        self.studies, self.seed = studies, seed
        self.pool = Pool(workers, initializer=None if guard else _without_guard)
        self.cache: dict[tuple[PoolDesign, str, float, int], np.ndarray] = {}
        self.chunk = max(studies // (8 * workers), 10)

    def cell(self, design: PoolDesign, judge: str, corr: float, n: int) -> np.ndarray:
        key = (design, judge, corr, n)
        if key not in self.cache:
            t0 = time.time()
            tasks = [
                (design, judge, corr, n, self.seed, range(a, min(a + self.chunk, self.studies)))
                for a in range(0, self.studies, self.chunk)
            ]
            self.cache[key] = np.concatenate(self.pool.map(run_chunk, tasks))
            r = self.cache[key]
            print(
                f"  [cell m {design.margin} sa {design.annotator_sd} gap {design.mean_gap:+.2f} {judge} "
                f"r {corr} n {n}: people {r[:, 0].mean():.4f} PPI {r[:, 1].mean():.4f} "
                f"lambda {r[:, 2].mean():.3f} corr {np.nanmean(r[:, 3]):.3f} E/H {r[:, 4].mean():.2f}; "
                f"{time.time() - t0:.0f} s, load {os.getloadavg()[0]:.1f}]",
                flush=True,
            )
        return self.cache[key]


def pool_plan(design: PoolDesign) -> Plan:
    """The planner's input for a design: its variance components and the pool of every study."""
    return Plan(
        n_pairs=design.n_total,
        per_pair=PER_PAIR,
        pool=POOL,
        margin=design.margin,
        pair_var=PAIR_SD**2,
        annotator_var=design.annotator_sd**2,
        residual_var=NOISE_SD**2,
        alpha=ALPHA,
    )


def fewer_judgments(run: Runner, design: PoolDesign, corrs: tuple[float, ...], start: int) -> None:
    """People-only n0 (steps of 10) for power 0.8 at gap 0; the judges' power at 0.6 n0; the smallest
    n (steps of 5) with the prediction-powered power >= the people-only power at n0; the planner."""
    mc2 = 2 * math.sqrt(0.8 * 0.2 / run.studies)
    n0 = start
    while run.cell(design, "useless", 0.0, n0)[:, 0].mean() < 0.8:
        n0 += 10
    while n0 > 10 and run.cell(design, "useless", 0.0, n0 - 10)[:, 0].mean() >= 0.8:
        n0 -= 10
    useless = run.cell(design, "useless", 0.0, n0)
    people = float(useless[:, 0].mean())
    print(
        f"\nmargin {design.margin}, annotator SD {design.annotator_sd}: people only {people:.4f} "
        f"at n0 = {n0}; "
        f"useless judge at n0 {useless[:, 1].mean():.4f} (difference {useless[:, 1].mean() - people:+.4f}, "
        f"lambda {useless[:, 2].mean():.3f})"
    )
    plan = pool_plan(design)
    for corr in corrs:
        n_less = round(0.6 * n0)
        at_less = run.cell(design, "tracking", corr, n_less)
        n_eq = 5 * math.ceil(n_less / 5)
        while n_eq < n0 and run.cell(design, "tracking", corr, n_eq)[:, 1].mean() < people:
            n_eq += 5
        while n_eq > 5 and run.cell(design, "tracking", corr, n_eq - 5)[:, 1].mean() >= people:
            n_eq -= 5
        eq_power = run.cell(design, "tracking", corr, n_eq)[:, 1].mean()
        met = "yes" if at_less[:, 1].mean() >= people - mc2 else "no"
        planned = judge_plan(plan, correlation=corr)
        print(
            f"  judge r {corr} (measured {np.nanmean(at_less[:, 3]):.3f}): PPI {at_less[:, 1].mean():.4f} at "
            f"{n_less} (40% fewer met within 2 MC SE {mc2:.3f}: {met}; lambda {at_less[:, 2].mean():.3f}, "
            f"E/H {at_less[:, 4].mean():.2f}); smallest n with PPI >= people: {n_eq} ({eq_power:.4f}, "
            f"{100 * (1 - n_eq / n0):.0f}% fewer); planner people / judge {planned.people_pairs} / "
            f"{planned.judge_pairs} ({planned.people_power:.3f} / {planned.judge_power:.3f})",
            flush=True,
        )


def planner_check(run: Runner, design: PoolDesign, corr: float = 0.7) -> None:
    """What `annotator power --judge` plans for this design (people only, and with a judge correlating
    `corr`) and the power the report's verdict reaches at those numbers of rated pairs."""
    plan = pool_plan(design)
    planned = judge_plan(plan, correlation=corr)
    floor = 0.8 - 2 * math.sqrt(0.8 * 0.2 / run.studies)
    for what, n, power, judge, column in (
        ("people only", planned.people_pairs, planned.people_power, "useless", 0),
        (f"judge r {corr}", planned.judge_pairs, planned.judge_power, "tracking", 1),
    ):
        if n is None:
            print(f"  margin {design.margin}, annotator SD {design.annotator_sd}, {what}: not reachable")
            continue
        measured = run.cell(design, judge, corr if judge == "tracking" else 0.0, n)[:, column].mean()
        print(
            f"  margin {design.margin}, annotator SD {design.annotator_sd}, {what}: planned {n} pairs "
            f"(planned power {power:.4f}), measured {measured:.4f} "
            f"({'reached' if measured >= floor else 'NOT reached'}: >= 0.8 - 2 MC SE = {floor:.4f})",
            flush=True,
        )
    if planned.people_pairs and planned.judge_pairs:
        print(
            f"  planned saving with the judge: {100 * (1 - planned.judge_pairs / planned.people_pairs):.0f}%"
        )


def validity(run: Runner, design: PoolDesign, n: int) -> None:
    """False PASS at gap = +margin and -margin for each judge (bound alpha + 2 MC SE)."""
    bound = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / run.studies)
    print(
        f"\nValidity, margin {design.margin}, annotator SD {design.annotator_sd}, n {n} (bound {bound:.4f})"
    )
    for judge in JUDGE_IDS:
        for sign in (1, -1):
            r = run.cell(replace(design, mean_gap=sign * design.margin), judge, 0.7, n)
            ppi = r[:, 1].mean()
            print(
                f"  {judge:22} gap {sign * design.margin:+.2f}: people {r[:, 0].mean():.4f} PPI {ppi:.4f} "
                f"lambda {r[:, 2].mean():.3f} E/H {r[:, 4].mean():.2f} "
                f"{'met' if ppi <= bound else 'ABOVE BOUND'}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--parts", default="main,annotator03,validity,margin025,planner")
    parser.add_argument(
        "--no-guard",
        action="store_true",
        help="counterfactual, not the report's verdict: the few-annotator guard switched off in the workers",
    )
    args = parser.parse_args()
    parts = args.parts.split(",")
    t0 = time.time()
    print(
        f"{args.studies} studies per cell, seed {args.seed}, N {N_TOTAL}, pool {POOL}, {PER_PAIR} per pair"
        + (", WITHOUT the few-annotator guard (counterfactual)" if args.no_guard else "")
    )
    run = Runner(args.studies, args.seed, args.workers, not args.no_guard)
    base = PoolDesign(key=1, margin=0.3, annotator_sd=0.1)
    margin025 = PoolDesign(key=3, margin=0.25, annotator_sd=0.1)
    annotator03 = PoolDesign(key=4, margin=0.3, annotator_sd=0.3)
    for part in parts:  # in the order given
        if part == "main":
            fewer_judgments(run, base, (0.7, 0.8), 50)
        elif part == "validity":
            validity(run, replace(base, key=2), 30)
        elif part == "margin025":
            fewer_judgments(run, margin025, (0.7, 0.8), 70)
        elif part == "annotator03":
            fewer_judgments(run, annotator03, (0.7,), 80)
        elif part == "planner":
            print("\nThe planner's numbers of rated pairs and the power reached there")
            for design in (base, margin025, annotator03):
                planner_check(run, design)
        else:
            parser.error(f"unknown part {part!r}")
    print(f"\n{time.time() - t0:.0f} s, load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
