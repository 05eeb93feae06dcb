"""Benchmark: the prediction-powered equivalence verdict (PPI++ over every judged pair), Monte Carlo.

Studies come from :mod:`analysis.ppi_simulation` (vectorized over studies): ``N`` pairs with true
chosen - rejected gaps ``g ~ N(mean, 0.5)``, a judge's gap on every pair, and a fully crossed panel
of ``q`` annotators on a uniform random sample of ``n`` pairs (annotator SD 0.1, judgment noise SD
0.6). Each study gets the people-only verdict (crossed model TOST on the rated pairs, the report's
rule) and the prediction-powered one (:mod:`analysis.prediction_powered`).

Rows:
- **validity**: the true mean gap at +margin and at -margin (the least favourable nulls), for each
  judge of :data:`analysis.ppi_simulation.JUDGES`; the share of studies that PASS must be
  <= alpha + 2 MC SE.
- **fewer judgments**: a judge whose gap correlates 0.7 with the people's pair mean; people-only
  power at ``n0`` rated pairs against prediction-powered power at ``0.6 n0`` (40% fewer human
  judgments with the same panel), and the smallest ``n`` (steps of 5) at which the prediction-powered
  power reaches the people-only power at ``n0``.
- **useless judge**: power of both at the same ``n``; the difference must be within 0.05.
- **preference share** at its null (true share 0.5 over pairs and annotators; per-judgment score 1/0.5/0
  from a latent lean plus an annotator shift and noise): the one-sided PASS rate, 5 judges.
- **planner**: :func:`analysis.ppi_power.judge_plan` (what ``annotator power --judge`` computes) for the
  same designs, beside the measured numbers.
- **kernel check**: the vectorized crossed-model arithmetic against the REML fit
  (:func:`analysis.prediction_powered.prediction_powered_tost`) on the same drawn studies.

Usage: ``nice python benchmarks/bench_ppi.py [--studies N] [--seed S]`` (default 2,000 studies per
boundary and per power row).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.power import Plan
from analysis.ppi_power import judge_plan
from analysis.ppi_simulation import JUDGES, Design, balanced_crossed_mean, draw, simulate, verdicts
from analysis.prediction_powered import (
    PPIQuestion,
    combine_parts,
    power_tuned_lambda,
    prediction_powered_tost,
)

ALPHA = 0.05


def validity(studies: int, rng: np.random.Generator) -> None:
    bound = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / studies)
    print(f"\nValidity: share of PASS at the margin (bound alpha + 2 MC SE = {bound:.4f}; {studies} studies")
    print(f"{'design':28} {'judge':28} {'boundary':>8} {'people':>7} {'PPI':>7} {'lambda':>7} {'E/H':>6}")
    worst = 0.0
    for n_total, n, q, margin in (
        (2000, 20, 3, 0.5),
        (2000, 60, 3, 0.5),
        (2000, 100, 5, 0.3),
        (500, 200, 5, 0.3),
    ):
        for judge in JUDGES:
            for sign in (1, -1):
                design = Design(
                    n_total=n_total,
                    n_rated=n,
                    panel=q,
                    mean_gap=sign * margin,
                    judge=judge,
                    margin=margin,
                    category_shift=0.3 if "category" in judge else 0.0,
                )
                r = simulate(design, studies, rng)
                worst = max(worst, float(r["ppi"].mean()))
                flag = "" if r["ppi"].mean() <= bound else "  ABOVE BOUND"
                print(
                    f"N {n_total} n {n} q {q} m {margin:<5} {judge:28} {sign * margin:>+8.2f} "
                    f"{r['people'].mean():>7.4f} {r['ppi'].mean():>7.4f} {r['lam'].mean():>7.3f} "
                    f"{(r['effective'] / n).mean():>6.2f}{flag}"
                )
    print(f"worst prediction-powered false PASS: {worst:.4f} (bound {bound:.4f})")


def _power(design: Design, studies: int, seed: int) -> dict[str, float]:
    """Both powers of one design, from draws seeded by the design (common random numbers: the same
    design gives the same studies wherever it is asked for)."""
    key = [seed, design.n_total, design.n_rated, design.panel, round(1000 * design.margin)]
    r = simulate(design, studies, np.random.default_rng(key + [round(100 * design.judge_corr)]))
    return {
        "people": float(r["people"].mean()),
        "ppi": float(r["ppi"].mean()),
        "lam": float(r["lam"].mean()),
        "corr": float(np.nanmean(r["correlation"])),
        "eff": float((r["effective"] / design.n_rated).mean()),
    }


def fewer_judgments(studies: int, seed: int) -> None:
    se = math.sqrt(0.8 * 0.2 / studies)
    print(
        f"\nFewer judgments: judge gap correlating 0.7 with the people's pair mean, true gap 0, "
        f"{studies} studies per row (MC SE of a power near 0.8: {se:.4f})"
    )
    designs = [(5000, 5, 0.3, 0.7), (5000, 5, 0.25, 0.7), (5000, 5, 0.25, 0.8), (5000, 3, 0.3, 0.7)]
    designs += [(5000, 3, 0.3, 0.8)]
    for n_total, q, margin, corr in designs:
        base = Design(
            n_total=n_total,
            n_rated=10,
            panel=q,
            mean_gap=0.0,
            judge="tracking",
            margin=margin,
            judge_corr=corr,
        )
        n0, people0 = 0, 0.0
        for n in range(20, 401, 10):
            p = _power(replace(base, n_rated=n), studies, seed)["people"]
            if p >= 0.8:
                n0, people0 = n, p
                break
        if not n0:
            print(f"  N {n_total} q {q} margin {margin}: people-only power 0.8 not reached with 400 pairs")
            continue
        n1 = math.ceil(0.6 * n0)
        at = _power(replace(base, n_rated=n1), studies, seed)
        smallest = None
        for n in range(10, n0 + 1, 5):
            if _power(replace(base, n_rated=n), studies, seed)["ppi"] >= people0:
                smallest = n
                break
        reached = "reached" if at["ppi"] >= people0 - 2 * se else "NOT reached"
        pilot = Plan(n_total, q, q, margin, base.pair_sd**2, base.annotator_sd**2, base.noise_sd**2)
        plan = judge_plan(pilot, correlation=corr)
        print(
            f"  N {n_total} q {q} margin {margin} judge corr {corr} (measured {at['corr']:.3f}): people-only "
            f"power {people0:.4f} with {n0} pairs ({n0 * q} judgments); prediction-powered power "
            f"{at['ppi']:.4f} with {n1} pairs ({n1 * q} judgments, 40% fewer; lambda {at['lam']:.3f}, "
            f"E/H {at['eff']:.2f}): {reached}; smallest n with PPI power >= {people0:.4f}: "
            f"{smallest if smallest else '> ' + str(n0)}"
            + (f" ({100 * (1 - smallest / n0):.0f}% fewer judgments)" if smallest else "")
            + f"; the planner (`annotator power --judge`) says {plan.people_pairs} people-only, "
            f"{plan.judge_pairs} with the judge"
        )


def useless(studies: int, seed: int) -> None:
    print(
        f"\nUseless judge (pure noise): power at the same human budget, {studies} studies per row "
        "(target: within 0.05)"
    )
    for n_total, q, margin, n in (
        (5000, 5, 0.3, 50),
        (5000, 3, 0.3, 100),
        (2000, 3, 0.5, 20),
        (300, 5, 0.3, 50),
    ):
        p = _power(
            Design(n_total=n_total, n_rated=n, panel=q, mean_gap=0.0, judge="useless", margin=margin),
            studies,
            seed,
        )
        print(
            f"  N {n_total} q {q} margin {margin} n {n}: people-only {p['people']:.4f}, prediction-powered "
            f"{p['ppi']:.4f} (difference {p['ppi'] - p['people']:+.4f}; lambda {p['lam']:.3f})"
        )


def kernel_check(rng: np.random.Generator, studies: int = 100) -> None:
    print(f"\nKernel check: vectorized balanced ANOVA vs the REML fit on the same {studies} studies")
    design = Design(n_total=400, n_rated=40, panel=3, mean_gap=0.3, judge="biased toward chosen", margin=0.5)
    d, fl, fu = draw(design, studies, rng)
    fast = verdicts(design, d, fl, fu)
    n, q = d.shape[1], d.shape[2]
    est, se, same = [], [], 0
    started = time.perf_counter()
    for s in range(studies):
        pairs, annotators = np.repeat(np.arange(n), q).astype(str), np.tile(np.arange(q), n).astype(str)
        frame = pd.DataFrame({"pair_id": pairs, "annotator": annotators, "diff": d[s].ravel()})
        ids = np.arange(n + fu.shape[1]).astype(str)
        res = prediction_powered_tost(
            frame, pd.Series(np.concatenate([fl[s], fu[s]]), index=ids), PPIQuestion("q", design.margin)
        )
        est.append(abs(res.estimate - fast["estimate"][s]))
        se.append(abs(res.se / fast["se"][s] - 1))
        same += res.equivalent == bool(fast["ppi"][s])
    print(
        f"  max |estimate difference| {max(est):.2e}, max |SE ratio - 1| {max(se):.2e}, same PASS/no PASS "
        f"in {same} of {studies} studies (REML fits: {time.perf_counter() - started:.1f} s)"
    )


def preference_validity(studies: int, rng: np.random.Generator) -> None:
    """The prediction-powered preference share at its null (true share 0.5): one-sided PASS rate."""
    bound = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / studies)
    print(f"\nPreference share at the null (true share 0.5; bound {bound:.4f}; {studies} studies per row)")
    n_total, n, q = 2000, 60, 3
    for judge in ("tracking", "always chosen", "position-biased", "anti-correlated", "useless"):
        lean = rng.normal(0.0, 1.0, (studies, n_total))  # the pair's lean toward chosen
        first = np.where(rng.random((studies, n_total)) < 0.5, 1.0, 0.0)
        f = {
            "tracking": stats.norm.cdf(lean + rng.normal(0, 0.5, lean.shape)),
            "always chosen": np.full(lean.shape, 0.9) + rng.normal(0, 0.05, lean.shape),
            "position-biased": 0.8 * first + 0.1,
            "anti-correlated": 1.0 - stats.norm.cdf(lean),
            "useless": rng.random(lean.shape),
        }[judge]
        bias = rng.normal(0, 0.3, (studies, 1, q))
        x = lean[:, :n, None] + bias + rng.normal(0, 1.0, (studies, n, q))
        score = np.where(x > 0.2, 1.0, np.where(x < -0.2, 0.0, 0.5)) - 0.5  # ties count half
        fl, fu = f[:, :n] - 0.5, f[:, n:] - 0.5
        lam = power_tuned_lambda(score.mean(2), fl, fu)
        m, se_c, df_c = balanced_crossed_mean(score - lam[:, None, None] * fl[:, :, None], ALPHA)
        var, df, _ = combine_parts(se_c**2, df_c, lam, fu)
        est = m + lam * fu.mean(1)
        p_ppi = stats.t.sf(est / np.sqrt(var), df)
        pm, pse, pdf = balanced_crossed_mean(score, ALPHA)
        p_people = stats.t.sf(pm / pse, pdf)
        print(
            f"  N {n_total} {q} x {n} {judge:18} people {np.mean(p_people < ALPHA):.4f} prediction-powered "
            f"{np.mean(p_ppi < ALPHA):.4f} (lambda {lam.mean():.3f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261204)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    kernel_check(rng)
    validity(args.studies, rng)
    preference_validity(args.studies, np.random.default_rng(args.seed))
    fewer_judgments(args.studies, args.seed)
    useless(args.studies, args.seed)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
