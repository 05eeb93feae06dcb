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

from analysis.report import ReportSettings, build_report, replicated_pairs
from analysis.simulation import (
    BIAS_SD,
    NOISE,
    NOISE_SPREAD,
    SimDesign,
    SimEffects,
    latent_quality,
    rate,
    simulate_frame,
)

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
    # what buys the power of power_pool20 back under the broken-share bound: judgments or pairs
    Row(
        "power_pool20_5",
        "power at gap 0: pool 20, 5 per pair, 80 pairs",
        80,
        5,
        20,
        ann_sd=0.25,
        at_margin=False,
    ),
    Row(
        "power_pool20_200",
        "power at gap 0: pool 20, 3 per pair, 200 pairs",
        200,
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
            SimDesign(
                n_pairs=row.n_pairs,
                per_pair=row.per_pair,
                pool=row.pool,
                items=(ITEM,),
                rubric_aspects=1,
                lengths=False,
            ),
            SimEffects(
                quality_gap=gap,
                annotator_gap_sd=row.ann_sd,
                pair_gap_sd=row.pair_sd,
                pure_noise=row.pure_noise,
                preference_rate=row.preference_rate,
                preference_beta=row.preference_beta,
            ),
        )
        # the per-response rubric score given directly (item "rubric", a documented input form)
        frame["item"] = frame["item"].replace("rubric:0", "rubric")
        rep = build_report(
            frame,
            study=row.name,
            settings=ReportSettings(
                quality_items=[ITEM], margin=MARGIN, alpha=ALPHA, n_boot=200, extras=False
            ),
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


# ------------------------------------------------------------------------------------ verdicts v2
#
# The rows below call the functions that decide (validate_pairs and the report's verdict functions),
# not build_report: the reliability verdict (a bootstrap of Krippendorff's alpha, the slow part) is
# computed only when the overall result depends on it, i.e. when every other verdict passed and no
# positive control passed. The overall result is the same as build_report's.


@dataclass(frozen=True)
class Row2:
    """A design and a truth for the verdicts over annotators, broken pairs, ceilings and cleaning."""

    name: str
    what: str
    n_pairs: int
    per_pair: int
    pool: int
    effects: SimEffects = SimEffects()
    requirement: str = "false"  # false | power | power80 | cleaning
    positive_controls: int = 0


NULL_EFFECTS = SimEffects(
    preference_rate=0.5, preference_logit_sd=1.0, rubric_gap=0.0, rubric_leniency_sd=0.3
)
ROWS2 = [
    Row2(
        "pref_ann_3x40",
        "no true preference or rubric effect; annotators differ (preference logit SD 1, rubric leniency "
        "SD 0.3); fixed panel 3 x 40",
        40, 3, 3,
        NULL_EFFECTS,
    ),
    Row2(
        "pref_ann_5x40",
        "the same, fixed panel 5 x 40",
        40, 5, 5,
        NULL_EFFECTS,
    ),
    Row2(
        "pref_ann_3x100",
        "the same, fixed panel 3 x 100",
        100, 3, 3,
        NULL_EFFECTS,
    ),
    Row2("broken_3x60", "20% of pairs broken (rejected 1.5 worse), fixed panel 3 x 60", 60, 3, 3,
         SimEffects(broken_share=0.2)),
    Row2("broken_pool20", "20% broken, pool 20, 3 per pair, 100 pairs: overall PASS", 100, 3, 20,
         SimEffects(broken_share=0.2)),
    Row2("clean_3x60_sd01", "none broken, pair-gap SD 0.1, fixed panel 3 x 60: power", 60, 3, 3,
         SimEffects(pair_gap_sd=0.1), "power"),
    Row2("clean_pool20_sd01", "none broken, pair-gap SD 0.1, pool 20 x 3 x 100: power", 100, 3, 20,
         SimEffects(pair_gap_sd=0.1), "power"),
    Row2(
        "ceiling_controls",
        "ceiling: latent U(4.7, 5), truly equal, pool 20 x 3 x 80, 10 positive controls (defect 1.5)",
        80, 3, 20,
        SimEffects(quality_uniform=(4.7, 5.0), control_defect=1.5),
        "power80",
        positive_controls=10,
    ),
    Row2(
        "ceiling_invisible",
        "the same ceiling study, controls whose defect is invisible (defect 0): overall PASS",
        80, 3, 20,
        SimEffects(quality_uniform=(4.7, 5.0), control_defect=0.0),
        positive_controls=10,
    ),
    Row2("cleaning_3", "cleaning list: 20% broken (gap 1.5), fixed panel 3 x 100", 100, 3, 3,
         SimEffects(broken_share=0.2), "cleaning"),
    Row2("cleaning_5", "cleaning list: 20% broken (gap 1.5), fixed panel 5 x 100", 100, 5, 5,
         SimEffects(broken_share=0.2), "cleaning"),
]  # fmt: skip


def one_study2(row: Row2, rng: np.random.Generator) -> dict[str, Any]:
    """One study of a v2 row through the functions that decide, computing only what the row's figures
    need: the preference rows the rubric and preference tests (crossed and panel), the cleaning rows the
    cleaning list, the others the overall result, stopping at the first verdict that does not pass (the
    overall result is then not PASS, as in build_report)."""
    import pandas as pd

    from analysis import verdicts as rp
    from analysis.aggregates import judgment_differences, judgments, pair_means_from_differences
    from analysis.agreement import agreement_table
    from analysis.broken_share import broken_share
    from analysis.cleaning import frame_cleaning
    from analysis.crossed_mean import crossed_mean
    from analysis.equivalence import preference_pairs, superiority_paired
    from analysis.frames import split_controls
    from analysis.mixed import mixed_effect
    from analysis.validation import preference_scores, validate_pairs

    design = SimDesign(
        n_pairs=row.n_pairs, per_pair=row.per_pair, pool=row.pool, items=(ITEM,), rubric_aspects=1,
        positive_controls=row.positive_controls, lengths=False,
    )  # fmt: skip
    frame = simulate_frame(rng, design, row.effects)
    broken = set(frame.attrs["broken"])
    frame["item"] = frame["item"].replace("rubric:0", "rubric")
    main, controls = split_controls(frame)
    out: dict[str, Any] = dict.fromkeys(KEYS2, math.nan)
    if row.requirement == "cleaning":
        clean = frame_cleaning(main, quality_items=[ITEM], margin=MARGIN, fdr=0.1)
        drop = set(clean.loc[clean["decision"] == "drop", "pair_id"])
        out.update(
            drops=len(drop), false_drops=len(drop - broken), true_drops=len(drop & broken),
            broken=len(broken), needs_more=int((clean["decision"] == "needs more judgments").sum()),
        )  # fmt: skip
        return out
    if row.name.startswith("pref_"):
        d = judgment_differences(main, "rubric")
        per = judgments(main)
        rc = crossed_mean(d["diff"], d["pair_id"], d["annotator"], item="rubric", alpha=ALPHA)
        pc = crossed_mean(
            preference_scores(per) - 0.5, per["pair_id"], per["annotator"], item="p", alpha=ALPHA
        )
        pm = pair_means_from_differences(d)
        # Holm over the two: the smaller p is tested at alpha/2, the larger at alpha if the first rejects
        p = sorted([(rc.p_greater, "rubric"), (pc.p_greater, "preference")])
        holm = {p[0][1]: min(1.0, 2 * p[0][0]), p[1][1]: min(1.0, max(2 * p[0][0], p[1][0]))}
        panel_r = superiority_paired(pm["chosen"], pm["rejected"], alpha=ALPHA).p_t
        panel_p = preference_pairs(per["pair_id"], per["preference"], alpha=ALPHA).p_greater
        q = sorted([(panel_r, "rubric"), (panel_p, "preference")])
        holm_panel = {q[0][1]: min(1.0, 2 * q[0][0]), q[1][1]: min(1.0, max(2 * q[0][0], q[1][0]))}
        out.update(
            rubric_pass=holm["rubric"] < ALPHA, preference_pass=holm["preference"] < ALPHA,
            panel_rubric=holm_panel["rubric"] < ALPHA, panel_preference=holm_panel["preference"] < ALPHA,
        )  # fmt: skip
        return out
    # the equivalence verdict first (mean TOST and the broken share), with the functions validate_pairs calls
    d = judgment_differences(main, ITEM)
    res = mixed_effect(main, ITEM, margin=MARGIN, alpha=ALPHA, differences=d)
    share = broken_share(d, margin=MARGIN, alpha=ALPHA)
    out.update(mean_tost_pass=res.equivalent, few_broken=share.below)
    out["overall_pass"] = False
    table = rp.positive_control_table(controls, [ITEM], ALPHA, MARGIN)
    sens = rp.sensitivity_verdict(table, controls, 5, False, ALPHA, MARGIN)
    out["sensitivity_pass"] = sens.passed
    if not (res.equivalent and share.below) or sens.status not in ("pass", "not_assessed"):
        out["equivalence_pass"] = False
        return out
    v = validate_pairs(main, quality_items=[ITEM], margin=MARGIN, alpha=ALPHA)
    verdicts = [
        rp.sample_size_verdict(row.n_pairs, replicated_pairs(main), 20),
        rp.equivalence_verdict(v, pd.DataFrame(), [ITEM], ALPHA, 0.8),
        rp.rubric_verdict(v, ALPHA),
        rp.preference_verdict(v, ALPHA),
    ]
    out.update(
        equivalence_pass=verdicts[1].passed,
        rubric_pass=verdicts[2].passed,
        preference_pass=verdicts[3].passed,
    )
    if all(x.passed for x in verdicts):
        if sens.passed:
            rel = rp.reliability_verdict(pd.DataFrame({"item": []}), [ITEM], 0.1, ALPHA, sens)
        else:
            agreement = agreement_table(
                main[main["item"] == ITEM], quality_items=[ITEM], n_boot=200, seed=0, confidence=1 - 2 * ALPHA
            )
            rel = rp.reliability_verdict(agreement, [ITEM], 0.1, ALPHA, sens)
        overall, _ = rp.overall_result([*verdicts, rel, sens])
        out["overall_pass"] = overall == "PASS"
    return out


def chunk2(args: tuple[Row2, int, int]) -> list[dict[str, Any]]:
    row, seed, count = args
    rng = np.random.default_rng(seed)
    return [one_study2(row, rng) for _ in range(count)]


KEYS2 = (
    "overall_pass", "equivalence_pass", "mean_tost_pass", "few_broken", "rubric_pass", "preference_pass",
    "panel_rubric", "panel_preference", "sensitivity_pass",
)  # fmt: skip


def summary2(row: Row2, results: list[dict[str, Any]], start: float) -> dict[str, Any]:
    n = len(results)
    out: dict[str, Any] = {"row": row.name, "what": row.what, "studies": n}
    for key in KEYS2:
        values = [float(r[key]) for r in results if not (isinstance(r[key], float) and math.isnan(r[key]))]
        if values:
            p = sum(values) / len(values)
            out[key], out[f"{key}_se"] = p, math.sqrt(p * (1 - p) / len(values))
    if row.requirement == "cleaning":
        fdp = [r["false_drops"] / max(r["drops"], 1) for r in results]
        recall = [r["true_drops"] / max(r["broken"], 1) for r in results]
        out["fdr"], out["fdr_se"] = float(np.mean(fdp)), float(np.std(fdp, ddof=1) / math.sqrt(n))
        out["recall"] = float(np.mean(recall))
        out["good_dropped"] = float(
            np.mean([r["false_drops"] / max(row.n_pairs - r["broken"], 1) for r in results])
        )
        out["needs_more_share"] = float(np.mean([r["needs_more"] / row.n_pairs for r in results]))
    out["seconds"] = time.perf_counter() - start
    return out


def run_row2(row: Row2, studies: int, chunk: int, out: Path | None) -> dict[str, Any]:
    """The studies of a v2 row in one process, `chunk` at a time (running figures appended to `out`)."""
    start = time.perf_counter()
    results: list[dict[str, Any]] = []
    block = 0
    while len(results) < studies:
        size = min(chunk, studies - len(results))
        results.extend(chunk2((row, 500_000 + 1000 * ROWS2.index(row) + block, size)))
        block += 1
        if out is not None:
            partial = {"partial": len(results) < studies}
            with out.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(summary2(row, results, start) | partial) + "\n")
    return summary2(row, results, start)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rows", default="all")
    parser.add_argument("--chunk", type=int, default=250, help="studies per block (running figures saved)")
    parser.add_argument("--out", type=Path, default=None, help="append JSON lines (per block and per row)")
    parser.add_argument("--v2", action="store_true", help="the rows over annotators, broken pairs, ceilings")
    args = parser.parse_args()
    if args.v2:
        names = [r.name for r in ROWS2] if args.rows == "all" else args.rows.split(",")
        for name in names:  # in the order given
            s2 = run_row2(next(r for r in ROWS2 if r.name == name), args.studies, args.chunk, args.out)
            print(json.dumps(s2), flush=True)
        return
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
