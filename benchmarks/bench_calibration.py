"""Calibration of the report's verdicts, through `analysis.report.build_report` (the real verdict path).

Run: nice python benchmarks/bench_calibration.py [--studies 2000] [--jobs 2] [--rows all|name,name]
     [--out benchmarks/calibration.jsonl]

Each row simulates `--studies` studies with `analysis.simulation.simulate_frame` (the simulator's
model: per pair a latent quality N(4, 0.45) shared by both responses, chosen gets +gap; per annotator
a bias N(0, 0.25) and a noise SD 0.6 x U(0.7, 1.3); ratings rounded half to even and clipped to 1-5),
plus the heterogeneity a methods reviewer asks about: an annotator-specific gap (annotators differ in
how much of a gap they see, SD `ann_sd`) and a pair-specific gap (SD `pair_sd`). Rounding and clipping
shrink the gap, so for the rows "at the margin" the latent gap is solved (bisection on 2M
common-random-number draws over pairs AND annotators) such that the population mean of the rated
chosen - rejected difference equals the margin exactly. Every study goes through `build_report`
(one quality dimension, one rubric aspect, n_boot=200 bootstrap resamples for the reliability CI,
`extras=False`: the descriptive tables no verdict uses are skipped; every verdict is computed exactly
as in the app). Printed: the rate of each outcome with its Monte Carlo SE sqrt(p(1-p)/n), and for
comparison the old verdicts (per-pair TOST conditional on the panel; the pooled binomial preference
test over judgments).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.report import build_report
from analysis.simulation import BIAS_SD, NOISE, NOISE_SPREAD, latent_quality, rate, simulate_frame

ITEM = "correctness"
MARGIN = 0.5
ALPHA = 0.05


@dataclass(frozen=True)
class Row:
    """One benchmark row: a design and a truth."""

    name: str
    what: str
    n_pairs: int
    per_pair: int
    pool: int
    ann_sd: float = 0.0
    pair_sd: float = 0.0
    at_margin: bool = True
    pure_noise: bool = False
    preference_rate: float = 0.75
    preference_beta: float | None = None


ROWS = [
    Row("fixed_3x40", "false equivalence, gap = +margin, fixed panel 3 x 40 pairs", 40, 3, 3, ann_sd=0.25),
    Row("fixed_4x150", "false equivalence, gap = +margin, fixed panel 4 x 150 pairs", 150, 4, 4, ann_sd=0.25),
    Row(
        "pool_15x3x60",
        "false equivalence, gap = +margin, pool 15, 3 per pair, 60 pairs",
        60,
        3,
        15,
        ann_sd=0.25,
    ),
    Row(
        "pair_gap_3x40",
        "false equivalence, gap = +margin varying by pair (SD 0.3), fixed panel 3 x 40",
        40,
        3,
        3,
        ann_sd=0.1,
        pair_sd=0.3,
    ),
    Row(
        "power_pool20",
        "power at gap 0: pool 20, 3 per pair, 80 pairs",
        80,
        3,
        20,
        ann_sd=0.25,
        at_margin=False,
    ),
    Row(
        "preference_null",
        "false 'prefer chosen': rate 0.5, Beta(0.3, 0.3) per pair, 3 x 40",
        40,
        3,
        3,
        at_margin=False,
        preference_rate=0.5,
        preference_beta=0.3,
    ),
    Row(
        "pure_noise",
        "pure-noise quality ratings (uniform 1-5), 3 x 60: overall PASS",
        60,
        3,
        3,
        pure_noise=True,
        at_margin=False,
    ),
]


def realized_gap(
    gap: float, ann_sd: float, pair_sd: float, *, n: int = 2_000_000, seed: int = 12345
) -> float:
    """Population mean of the rated chosen - rejected difference for a latent gap (pairs and annotators)."""
    rng = np.random.default_rng(seed)  # common random numbers: smooth and monotone in `gap`
    base = latent_quality(rng.standard_normal(n)) + rng.normal(0.0, BIAS_SD, n)
    noise = NOISE * rng.uniform(*NOISE_SPREAD, n)
    g = gap + rng.normal(0.0, ann_sd, n) + rng.normal(0.0, pair_sd, n)
    chosen = rate(base + g + noise * rng.standard_normal(n), 1, 5)
    rejected = rate(base + noise * rng.standard_normal(n), 1, 5)
    return float((chosen - rejected).mean())


def solve_gap(target: float, ann_sd: float, pair_sd: float) -> float:
    """The latent gap whose realized population gap equals `target` (bisection)."""
    lo, hi = 0.0, 3 * target
    for _ in range(30):
        mid = (lo + hi) / 2
        if realized_gap(mid, ann_sd, pair_sd) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def one_chunk(args: tuple[Row, float, int, int]) -> list[dict[str, Any]]:
    """Simulate and analyse `count` studies of a row (a worker's share)."""
    row, gap, seed, count = args
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        frame = simulate_frame(
            rng,
            n_pairs=row.n_pairs,
            per_pair=row.per_pair,
            pool=row.pool,
            items=(ITEM,),
            quality_gap=gap,
            annotator_gap_sd=row.ann_sd,
            pair_gap_sd=row.pair_sd,
            pure_noise=row.pure_noise,
            rubric_aspects=1,
            preference_rate=row.preference_rate,
            preference_beta=row.preference_beta,
            lengths=False,
        )
        # the per-response rubric score given directly (item "rubric", a documented input form)
        frame["item"] = frame["item"].replace("rubric:0", "rubric")
        rep = build_report(
            frame, study=row.name, quality_items=[ITEM], margin=MARGIN, alpha=ALPHA, n_boot=200, extras=False
        )
        v = rep.validation
        out.append(
            {
                "overall_pass": rep.overall == "PASS",
                "equivalence_pass": rep.verdict("equivalence").passed,
                "panel_equivalent": bool(v.iut_panel.equivalent),
                "preference_pass": rep.verdict("preference").passed,
                "pooled_binomial": bool(v.preference_judgments.iloc[0]["p_greater"] < ALPHA),
                "reliability_pass": rep.verdict("reliability").passed,
                "df": float(v.crossed.iloc[0]["df"]),
            }
        )
    return out


def run_row(row: Row, studies: int, jobs: int, chunk: int, out: Path | None) -> dict[str, Any]:
    """All studies of a row, `chunk` at a time (each chunk its own seed); after each chunk the running
    figures are appended to `out` (marked partial), so a run cut short still reports what it did."""
    start = time.perf_counter()
    gap = solve_gap(MARGIN, row.ann_sd, row.pair_sd) if row.at_margin else 0.0
    results: list[dict[str, Any]] = []
    done, block = 0, 0
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        while done < studies:
            size = min(chunk, studies - done)
            parts = [
                (
                    row,
                    gap,
                    100_000 * (ROWS.index(row) + 1) + 100 * block + k,
                    size // jobs + (k < size % jobs),
                )
                for k in range(jobs)
            ]
            for part in pool.map(one_chunk, parts):
                results.extend(part)
            done += size
            block += 1
            if out is not None and done < studies:
                with out.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(_summary(row, gap, results, start) | {"partial": True}) + "\n")
    return _summary(row, gap, results, start)


def _summary(row: Row, gap: float, results: list[dict[str, Any]], start: float) -> dict[str, Any]:
    n = len(results)
    summary: dict[str, Any] = {"row": row.name, "what": row.what, "studies": n, "latent_gap": gap}
    for key in (
        "overall_pass",
        "equivalence_pass",
        "panel_equivalent",
        "preference_pass",
        "pooled_binomial",
        "reliability_pass",
    ):
        p = sum(r[key] for r in results) / n
        summary[key] = p
        summary[f"{key}_se"] = math.sqrt(p * (1 - p) / n)
    summary["median_df"] = float(np.median([r["df"] for r in results]))
    summary["seconds"] = time.perf_counter() - start
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rows", default="all")
    parser.add_argument("--chunk", type=int, default=250, help="studies per block (running figures saved)")
    parser.add_argument("--out", type=Path, default=None, help="append JSON lines (per block and per row)")
    args = parser.parse_args()
    rows = ROWS if args.rows == "all" else [r for r in ROWS if r.name in args.rows.split(",")]
    print(
        f"margin +-{MARGIN}, alpha {ALPHA}, {args.studies} studies per row; "
        "limit for false rates: alpha + 2 SE"
    )
    for row in rows:
        s = run_row(row, args.studies, args.jobs, args.chunk, args.out)
        line = (
            f"{row.name:16} {row.what}\n    overall PASS {s['overall_pass']:.4f} "
            f"({s['overall_pass_se']:.4f}); equivalence verdict {s['equivalence_pass']:.4f} "
            f"({s['equivalence_pass_se']:.4f}); per-pair TOST "
            f"(this panel) {s['panel_equivalent']:.4f}; preference verdict {s['preference_pass']:.4f} "
            f"({s['preference_pass_se']:.4f}); pooled binomial {s['pooled_binomial']:.4f}; reliability "
            f"{s['reliability_pass']:.4f}; median df {s['median_df']:.1f}; latent gap {s['latent_gap']:.4f}; "
            f"{s['seconds']:.0f} s"
        )
        print(line, flush=True)
        if args.out is not None:
            with args.out.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(s) + "\n")


if __name__ == "__main__":
    main()
