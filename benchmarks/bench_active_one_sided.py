"""Benchmark: the rubric and preference verdicts over every pair of a drawn human sample, Monte Carlo.

When the tool drew the people's pairs (uniform or active, each pair's inclusion probability recorded),
the report's rubric and preference verdicts over every judged pair are the inverse-probability-weighted
PPI++ mean (:func:`analysis.active_ppi.weighted_superiority`, :func:`analysis.active_ppi.weighted_share`)
and its one-sided t test. Studies come from :mod:`analysis.active_simulation`, vectorized over studies.

Rows:
- **kernel check**: the vectorized one-sided verdict against the report's functions (REML components)
  on the same drawn studies, for preference judgments.
- **preference share at its null**: each pair's lean toward chosen symmetric around 0 (normal,
  heavy-tailed t with 3 df, two camps of pairs at +-1.5), so the share of judgments preferring chosen
  (a tie counts half) is exactly 0.5; judgments scored 1 / 0.5 / 0 (discrete); every judge of
  :data:`analysis.active_simulation.PREFERENCE_JUDGES`; a uniform draw, an active draw by an
  uncertainty unrelated to the judge's error, and one highest where its error is smallest.
- **rubric mean at its null**: true mean chosen - rejected difference 0 (pair gaps N(0, 0.5)), every
  judge of :data:`analysis.ppi_simulation.JUDGES`, the same three draws.

Goal for every row: the share of PASS (one-sided p < alpha) at the null <= alpha + 2 MC SE, with the
judge and for the weighted people-only estimate.
- **power at a true effect** (without ``--only``): leans shifted by 0.15 (preference), rubric gaps
  N(0.15, 0.5); a tracking and a useless judge, uniform and active draws; the share of PASS with the
  judge and people only on the same studies, and the effective sample size over the drawn pairs.

Usage: ``nice python benchmarks/bench_active_one_sided.py [--studies N] [--seed S] [--only TEXT]``
(default 2,000 studies per row; ``--only`` runs the rows whose label holds TEXT).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.active_ppi import weighted_share
from analysis.active_simulation import (
    LEANS,
    PREFERENCE_JUDGES,
    ActiveDesign,
    Drawn,
    draw_active,
    draw_preferences,
    one_sided_verdicts,
)
from analysis.ppi_simulation import JUDGES, Design

ALPHA = 0.05
DESIGNS = (
    Design(n_total=2000, n_rated=60, panel=3, mean_gap=0.0, judge="", alpha=ALPHA),
    Design(n_total=2000, n_rated=100, panel=5, mean_gap=0.0, judge="", alpha=ALPHA),
)
DRAWS = (("uniform", False, "random"), ("active", True, "random"), ("active, misleading", True, "misleading"))


def _frame(data: Drawn, s: int) -> tuple[pd.DataFrame, pd.Series, pd.Series]:
    """Study `s` as the report reads it: the scores of the drawn pairs, the judge's score and the
    recorded probability of every pair."""
    k, q = int(data.drawn[s].sum()), data.d.shape[2]
    ids = np.array([f"p{i}" for i in range(data.f.shape[1])])
    frame = pd.DataFrame(
        {
            "pair_id": np.repeat(ids[data.rows[s, :k]], q),
            "annotator": np.tile([f"a{j}" for j in range(q)], k),
            "score": data.d[s, :k].ravel() + 0.5,
        }
    )
    return frame, pd.Series(data.f[s] + 0.5, index=ids), pd.Series(data.probability[s], index=ids)


def kernel_check(rng: np.random.Generator, studies: int = 60) -> None:
    print(
        f"\nKernel check: vectorized one-sided verdict vs weighted_share (REML components), {studies} studies"
    )
    spec = ActiveDesign(Design(n_total=400, n_rated=40, panel=3, mean_gap=0.0, judge="tracking"))
    data = draw_preferences(spec, studies, rng)
    fast = one_sided_verdicts(spec, data)
    gaps, ratios, same = [], [], 0
    for s in range(studies):
        res = weighted_share(*_frame(data, s), alpha=ALPHA)
        gaps.append(abs(res.share - 0.5 - float(fast["estimate"][s])))
        ratios.append(abs(res.se / float(fast["se"][s]) - 1.0))
        same += (res.p_greater < ALPHA) == bool(fast["ppi"][s])
    print(
        f"  max |estimate difference| {max(gaps):.1e}, max |SE ratio - 1| {max(ratios):.1e}, "
        f"same verdict {same}/{studies}"
    )


def _row(label: str, res: dict[str, np.ndarray], bound: float) -> bool:
    ppi, people = float(np.mean(res["ppi"])), float(np.mean(res["people"]))
    met = ppi <= bound and people <= bound
    lam = float(np.nanmean(res["lam"]))
    print(
        f"  {label:64} people {people:.4f}  judge {ppi:.4f}  lambda {lam:.2f}  {'met' if met else 'NOT MET'}"
    )
    return met


Drawer = Callable[[ActiveDesign, int, np.random.Generator], Drawn]


def preference_rows() -> Iterator[tuple[str, ActiveDesign, Drawer]]:
    """The preference rows: label, design and how its studies are drawn."""
    for design in DESIGNS:
        for lean in LEANS:
            for judge in PREFERENCE_JUDGES:
                for draw_name, active, uncertainty in DRAWS:
                    spec = ActiveDesign(replace(design, judge=judge), active=active, uncertainty=uncertainty)
                    size = f"N {design.n_total} {design.panel} x {design.n_rated}"
                    yield (
                        f"{size} {lean:12} {judge:15} {draw_name}",
                        spec,
                        partial(draw_preferences, lean=lean),
                    )


def rubric_rows() -> Iterator[tuple[str, ActiveDesign, Drawer]]:
    """The rubric rows: label, design and how its studies are drawn."""
    for design in DESIGNS:
        for judge in JUDGES:
            for draw_name, active, uncertainty in DRAWS:
                spec = ActiveDesign(replace(design, judge=judge), active=active, uncertainty=uncertainty)
                label = f"N {design.n_total} {design.panel} x {design.n_rated} {judge:22} {draw_name}"
                yield label, spec, draw_active


def run_rows(
    title: str, rows: Iterator[tuple[str, ActiveDesign, Drawer]], studies: int, seed: int, only: str
) -> int:
    """Each row's false PASS rates (its own random stream, seeded by its label); the rows over the
    bound."""
    bound = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / studies)
    print(f"\n{title}, {studies} studies per row, goal <= {bound:.4f}")
    missed = 0
    for label, spec, drawer in rows:
        if only not in label:
            continue
        rng = np.random.default_rng([seed, zlib.crc32(label.encode())])
        parts = [
            one_sided_verdicts(spec, drawer(spec, min(250, studies - k), rng)) for k in range(0, studies, 250)
        ]
        res = {key: np.concatenate([p[key] for p in parts]) for key in ("ppi", "people", "lam")}
        missed += not _row(label, res, bound)
    return missed


def power_rows(studies: int, seed: int) -> None:
    """What a judge adds at a true effect: the share of PASS with the judge and people only, and the
    effective sample size over the drawn pairs (the same studies for both)."""
    print(f"\nPower at a true effect, {studies} studies per row (normal leans; rubric gaps N(0.15, 0.5))")
    sd = math.hypot(0.3, 1.0)
    lean = np.random.default_rng(0).normal(0.15, 1.0, 1_000_000)
    share = float(np.mean(0.5 * (stats.norm.sf((0.2 - lean) / sd) + stats.norm.sf((-0.2 - lean) / sd))))
    for design in DESIGNS:
        for what, judges in (("preference", ("tracking", "useless")), ("rubric", ("tracking", "useless"))):
            for judge in judges:
                for draw_name, active, _ in DRAWS[:2]:
                    spec = ActiveDesign(replace(design, judge=judge, mean_gap=0.15), active=active)
                    size = f"N {design.n_total} {design.panel} x {design.n_rated}"
                    label = f"{size} {what:10} {judge:9} {draw_name}"
                    rng = np.random.default_rng([seed, zlib.crc32(label.encode())])
                    drawer = draw_preferences if what == "preference" else draw_active
                    parts = [
                        one_sided_verdicts(spec, drawer(spec, min(250, studies - k), rng))
                        for k in range(0, studies, 250)
                    ]
                    res = {
                        k: np.concatenate([p[k] for p in parts])
                        for k in ("ppi", "people", "effective", "n_drawn")
                    }
                    print(
                        f"  {label:52} people {np.mean(res['people']):.4f}  judge {np.mean(res['ppi']):.4f}  "
                        f"E/H {np.nanmean(res['effective'] / res['n_drawn']):.2f}"
                        + (f"  (true share {share:.3f})" if what == "preference" else "")
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261207)
    parser.add_argument("--only", default="", help="run only the rows whose label holds this text")
    args = parser.parse_args()
    started = time.perf_counter()
    kernel_check(np.random.default_rng(args.seed))
    missed = run_rows(
        "Preference share at its null (0.5)", preference_rows(), args.studies, args.seed, args.only
    )
    missed += run_rows(
        "Rubric mean difference at its null (0)", rubric_rows(), args.studies, args.seed, args.only
    )
    if not args.only:
        power_rows(args.studies, args.seed)
    print(f"\nrows over the bound: {missed}; total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
