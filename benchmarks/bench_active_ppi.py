"""Benchmark: prediction-powered verdicts on a human sample the tool draws (uniform or active), Monte Carlo.

Studies come from :mod:`analysis.active_simulation` (vectorized over studies, in chunks): ``N`` pairs
with true gaps ``g ~ N(mean, 0.5)``, a judge's gap on every pair and the uncertainty it reports, each
pair drawn into the human sample with its recorded inclusion probability (Poisson sampling, expected
size ``n``; active: proportional to the judge's uncertainty, floored at 0.2 of the uniform one), a
fully crossed panel of ``q`` annotators on the drawn pairs (annotator SD 0.1, judgment noise SD 0.6),
and the inverse-probability-weighted PPI++ verdict (:mod:`analysis.active_ppi`).

Rows:
- **kernel check**: the vectorized verdict against :func:`analysis.active_ppi.weighted_ppi_tost` (REML
  components) on the same drawn studies.
- **validity**: the true mean gap at +margin and -margin, active draw, every judge of
  :data:`analysis.ppi_simulation.JUDGES` with an uncertainty unrelated to its error ("random") and one
  highest where its error is smallest ("misleading"), and the judge that knows its errors; the share of
  PASS must be <= alpha + 2 MC SE.
- **fewer judgments at r = 0.7**: the people-only verdict on a uniform sample of ``n0`` pairs (the
  report's crossed model; ``n0`` the smallest multiple of 10 with power >= 0.8 at true gap 0) against
  the smallest expected sample (steps of 5) at which the prediction-powered verdict reaches that power:
  the unweighted uniform PPI++ of the report, the weighted one on a uniform draw, and on an active draw;
  for a judge that knows its errors (log error SD spread 0.8) and a homoscedastic one.

Usage: ``nice python benchmarks/bench_active_ppi.py [--studies N] [--seed S] [--only PART]`` (default
2,000 studies per row).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.active_ppi import MIN_SHARE, weighted_ppi_tost
from analysis.active_simulation import ActiveDesign, draw_active, simulate_active, weighted_verdicts
from analysis.ppi_simulation import JUDGES, Design, balanced_crossed_mean, draw, simulate, verdicts
from analysis.prediction_powered import PPIQuestion

ALPHA = 0.05


def kernel_check(rng: np.random.Generator, studies: int = 60) -> None:
    print(f"\nKernel check: vectorized weighted verdict vs the REML-component function on {studies} studies")
    spec = ActiveDesign(
        Design(n_total=400, n_rated=40, panel=3, mean_gap=0.3, judge="knows its errors", margin=0.5)
    )
    data = draw_active(spec, studies, rng)
    fast = weighted_verdicts(spec, data)
    est, se, same = [], [], 0
    q = data.d.shape[2]
    for s in range(studies):
        ids = np.array([f"p{i}" for i in range(data.f.shape[1])])
        k = int(data.drawn[s].sum())
        rows = data.rows[s, :k]
        frame = pd.DataFrame(
            {
                "pair_id": np.repeat(ids[rows], q),
                "annotator": np.tile([f"a{j}" for j in range(q)], k),
                "diff": data.d[s, :k].ravel(),
            }
        )
        res = weighted_ppi_tost(
            frame,
            pd.Series(data.f[s], index=ids),
            pd.Series(data.probability[s], index=ids),
            PPIQuestion("q", spec.design.margin),
        )
        est.append(abs(res.estimate - fast["estimate"][s]))
        se.append(abs(res.se / fast["se"][s] - 1))
        same += res.equivalent == bool(fast["ppi"][s])
    print(
        f"  max |estimate difference| {max(est):.2e}, max |SE ratio - 1| {max(se):.2e} (REML vs ANOVA "
        f"components), same PASS/no PASS in {same} of {studies} studies"
    )


def validity(studies: int, rng: np.random.Generator, min_share: float = MIN_SHARE) -> None:
    bound = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / studies)
    print(
        f"\nValidity (active draw, floor {min_share:g}): share of PASS at the margin (bound {bound:.4f}; "
        f"{studies} studies per row)"
    )
    print(
        f"{'design':28} {'judge':28} {'uncertainty':11} {'gap':>6} {'PPI':>7} {'people':>7} "
        f"{'lambda':>7} {'E/n':>5}"
    )
    worst = 0.0
    cases = [("knows its errors", "own")] + [(j, u) for j in JUDGES for u in ("random", "misleading")]
    for n_total, n, q, margin in ((2000, 60, 3, 0.5), (2000, 100, 5, 0.3)):
        for judge, uncertainty in cases:
            for sign in (1, -1):
                design = Design(
                    n_total=n_total, n_rated=n, panel=q, mean_gap=sign * margin, judge=judge, margin=margin,
                    category_shift=0.3 if "category" in judge else 0.0,
                )  # fmt: skip
                spec = ActiveDesign(
                    design, min_share=min_share, uncertainty="random" if uncertainty == "own" else uncertainty
                )
                r = simulate_active(spec, studies, rng)
                rate = float(r["ppi"].mean())
                worst = max(worst, rate)
                flag = "" if rate <= bound else "  ABOVE BOUND"
                print(
                    f"N {n_total} n {n} q {q} m {margin:<5} {judge:28} {uncertainty:11} "
                    f"{sign * margin:>+6.2f} "
                    f"{rate:>7.4f} {r['people'].mean():>7.4f} {np.nanmean(r['lam']):>7.3f} "
                    f"{np.nanmean(r['effective'] / r['n_drawn']):>5.2f}{flag}",
                    flush=True,
                )
    print(f"worst weighted prediction-powered false PASS: {worst:.4f} (bound {bound:.4f})")


def _rate(spec: ActiveDesign, studies: int, seed: int, key: str = "ppi") -> float:
    """Power of one design with draws seeded by the design (common random numbers)."""
    d = spec.design
    rng = np.random.default_rng(
        [seed, d.n_total, d.n_rated, d.panel, round(1000 * d.margin), int(spec.active)]
    )
    return float(simulate_active(spec, studies, rng, chunk=100)[key].mean())


def _people(design: Design, studies: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(
        [seed, design.n_total, design.n_rated, design.panel, round(1000 * design.margin)]
    )
    r = simulate(design, studies, rng)
    return {"people": float(r["people"].mean()), "ppi": float(r["ppi"].mean())}


def _smallest(power_at: callable[[int], float], target: float, high: int) -> int | None:  # type: ignore[valid-type]
    """The smallest n (multiple of 5, up to `high`) with power_at(n) >= target, by bisection."""
    low = 5
    if power_at(high) < target:
        return None
    while high - low > 5:
        mid = 5 * round((low + high) / 10)
        mid = min(max(mid, low + 5), high - 5)
        if power_at(mid) >= target:
            high = mid
        else:
            low = mid
    return high


def fewer_judgments(studies: int, seed: int) -> None:
    print(
        f"\nFewer judgments at judge correlation 0.7, true gap 0, {studies} studies per row (target: the "
        "people-only power with >= 40% fewer human judgments)"
    )
    for n_total, q, margin in ((2000, 5, 0.3), (2000, 3, 0.3)):
        plain = Design(n_total=n_total, n_rated=10, panel=q, mean_gap=0.0, judge="tracking", margin=margin)
        n0, people0 = 0, 0.0
        for n in range(20, 401, 10):
            people0 = _people(replace(plain, n_rated=n), studies, seed)["people"]
            if people0 >= 0.8:
                n0 = n
                break
        if not n0:
            print(f"  N {n_total} q {q} margin {margin}: people-only 0.8 not reached with 400 pairs")
            continue
        print(
            f"  N {n_total} q {q} margin {margin}: people-only power {people0:.4f} with {n0} pairs",
            flush=True,
        )
        variants: list[tuple[str, str, Callable[[int], float]]] = [
            (
                "tracking",
                "unweighted uniform PPI++ (the report without a draw)",
                lambda n, p=plain: _people(replace(p, n_rated=n), studies, seed)["ppi"],
            )
        ]
        for judge in ("tracking", "knows its errors"):
            base = replace(plain, judge=judge)
            variants.append(
                (
                    judge,
                    "weighted, uniform draw",
                    lambda n, b=base: _rate(ActiveDesign(replace(b, n_rated=n), active=False), studies, seed),
                )
            )
            for share in (0.2, 0.5, 0.8) if judge == "knows its errors" else (MIN_SHARE,):
                variants.append(
                    (
                        judge,
                        f"weighted, active draw (floor {share:g})",
                        lambda n, b=base, m=share: _rate(
                            ActiveDesign(replace(b, n_rated=n), active=True, min_share=m), studies, seed
                        ),
                    )
                )
        for judge, name, power_at in variants:
            found = _smallest(power_at, people0, n0)
            saved = f"{100 * (1 - found / n0):.0f}% fewer" if found else f"none found below {n0}"
            print(f"    judge '{judge}', {name}: {found if found else '-'} pairs ({saved})", flush=True)


def rubric_validity(studies: int, rng: np.random.Generator) -> None:
    """The prediction-powered rubric test (one-sided, mean rubric gap > 0) on a uniform sample: PASS
    rate at the null (true mean 0) for every judge, and power at a true mean of 0.15 next to people-only."""
    bound = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / studies)
    print(f"\nRubric test at its null (true mean gap 0; bound {bound:.4f}; {studies} studies per row)")
    for n_total, n, q in ((2000, 60, 3), (2000, 100, 5)):
        for judge in JUDGES:
            for mean, label in ((0.0, "null"), (0.15, "power at 0.15")):
                design = Design(
                    n_total=n_total, n_rated=n, panel=q, mean_gap=mean, judge=judge,
                    category_shift=0.3 if "category" in judge else 0.0,
                )  # fmt: skip
                d, fl, fu = draw(design, studies, rng)
                r = verdicts(design, d, fl, fu)
                ppi = stats.t.sf(r["estimate"] / r["se"], r["df"]) < ALPHA
                pm, pse, pdf = balanced_crossed_mean(d, ALPHA)
                people = stats.t.sf(pm / pse, pdf) < ALPHA
                flag = "  ABOVE BOUND" if label == "null" and ppi.mean() > bound else ""
                print(
                    f"  N {n_total} {q} x {n} {judge:28} {label:14} prediction-powered {ppi.mean():.4f} "
                    f"people-only {people.mean():.4f} (lambda {np.mean(r['lam']):.3f}){flag}",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--only", choices=["kernel", "validity", "fewer", "rubric"], default=None)
    parser.add_argument(
        "--min-share", type=float, default=MIN_SHARE, help="the active draw's floor (validity)"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"load average at start: {os.getloadavg()}")
    if args.only in (None, "kernel"):
        kernel_check(np.random.default_rng(args.seed))
    if args.only in (None, "validity"):
        validity(args.studies, np.random.default_rng(args.seed + 1), args.min_share)
    if args.only in (None, "fewer"):
        fewer_judgments(args.studies, args.seed)
    if args.only in (None, "rubric"):
        rubric_validity(args.studies, np.random.default_rng(args.seed + 2))
    print(f"\ntotal {time.perf_counter() - started:.0f} s; load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
