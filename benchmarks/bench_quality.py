"""Quality control on simulated crowds: who gets flagged, and the verdicts with and without exclusion.

Setting: 20 annotators of whom 20% are spammers (every answer uniformly at random, a few
seconds each), 100 pairs, 3 annotators per pair, controls at 10% of each queue (about two per
annotator: one swapped repeat of a pair they rated, one gold / positive / duplicate control in turn),
over 50 seeds. Simulated at the frame level with the simulator's latent model
(analysis.simulation: latent quality and rubric, annotator bias and noise, rounded ratings; the
preference follows the observed rubric and quality differences through a logistic choice, as in
annotator/synthetic.py), because going through the database for 50 studies would take minutes.

Flags (the study.toml defaults of [exclusion] used in the README): gold accuracy < 0.7 (on >= 3
checks), self-consistency < 0.7 (on >= 1 repeat), MACE competence < 0.5 (crowd-kit), each alone,
any of them, and two of three. Verdicts: build_report on the full frame and on the frame without the
annotators excluded by "any", against the simulated truth (quality equivalent, chosen better on the
rubric, positive controls detected).

    python benchmarks/bench_quality.py [--seeds 50] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from typing import Any

import numpy as np
import pandas as pd

from analysis.competence import apply_exclusion, qc_table
from analysis.frames import REQUIRED_COLUMNS
from analysis.simulation import BIAS_SD, NOISE, NOISE_SPREAD, latent_quality, latent_rubric, rate
from analysis.vocabulary import CONTROL

ITEMS = ("correctness", "relevance", "helpfulness")
DEFECT_ITEM = {"positive": ("correctness",)}
THRESHOLDS = {"gold": 0.7, "consistency": 0.7, "competence": 0.5}


def _judge(
    rng: np.random.Generator, latent: dict[str, float], aspects: int, bias: float, noise: float, spam: bool
) -> tuple[dict[tuple[str, str], float], int, float]:
    """One judgment in chosen/rejected terms: scores, preference (-2..2), seconds."""
    scores: dict[tuple[str, str], float] = {}
    if spam:
        for response in ("chosen", "rejected"):
            for item in ITEMS:
                scores[(response, item)] = float(rng.integers(1, 6))
            for k in range(aspects):
                scores[(response, f"rubric:{k}")] = float(rng.integers(0, 3))
        return scores, int(rng.integers(-2, 3)), float(rng.lognormal(math.log(6.0), 0.4))
    for response in ("chosen", "rejected"):
        for item in ITEMS:
            scores[(response, item)] = float(
                rate(latent[f"{response}:{item}"] + bias + rng.normal(0, noise), 1, 5)
            )
        for k in range(aspects):
            value = latent[f"{response}:rubric:{k}"] + rng.normal(0, noise / 2)
            scores[(response, f"rubric:{k}")] = float(rate(value, 0, 2))
    rubric_diff = np.mean(
        [scores[("chosen", f"rubric:{k}")] - scores[("rejected", f"rubric:{k}")] for k in range(aspects)]
    )
    quality_diff = np.mean([scores[("chosen", i)] - scores[("rejected", i)] for i in ITEMS])
    u = float(rng.random())
    draw = 2.5 * rubric_diff + 0.5 * quality_diff + math.log(u / (1 - u))
    preference = (
        0 if abs(draw) < 0.5 else (2 if draw > 2.5 else 1) if draw > 0 else (-2 if draw < -2.5 else -1)
    )
    return scores, preference, float(rng.lognormal(math.log(75 * rng.uniform(0.6, 1.6)), 0.4))


def _pair_latents(
    rng: np.random.Generator, pairs: int, aspects: int, rubric_gap: float
) -> dict[str, dict[str, float]]:
    """The main pairs' latent truth: quality equal on both sides, chosen `rubric_gap` better on the rubric."""
    latents: dict[str, dict[str, float]] = {}
    for i in range(pairs):
        latent = {}
        for item in ITEMS:
            base = float(latent_quality(rng.standard_normal()))
            latent[f"chosen:{item}"] = latent[f"rejected:{item}"] = base
        for k in range(aspects):
            base = float(latent_rubric(rng.standard_normal()))
            latent[f"rejected:rubric:{k}"], latent[f"chosen:rubric:{k}"] = base, base + rubric_gap
        latents[f"p{i:03d}"] = latent
    return latents


def _main_queues(
    rng: np.random.Generator, names: list[str], pair_ids: list[str], per_pair: int
) -> dict[str, list[str]]:
    """The main assignments: balanced load, distinct annotators per pair."""
    load = dict.fromkeys(names, 0)
    queue: dict[str, list[str]] = {n: [] for n in names}
    for pair_id in pair_ids:
        picked = sorted(names, key=lambda n: (load[n], rng.random()))[:per_pair]
        for n in picked:
            load[n] += 1
            queue[n].append(pair_id)
    return queue


def _pool_control(kind: str, latent: dict[str, float]) -> dict[str, Any] | None:
    """Turn a copy of a pair's latent truth into a gold, positive or duplicate control (in place);
    its expected answers, or None (a duplicate needs none)."""
    if kind == "positive":
        for item in DEFECT_ITEM["positive"]:
            latent[f"rejected:{item}"] -= 2.0
        return {"worse_on": list(DEFECT_ITEM["positive"])}
    if kind == "duplicate":
        for key in list(latent):
            if key.startswith("chosen:"):
                latent["rejected:" + key.removeprefix("chosen:")] = latent[key]
        return None
    return {
        "preference": 1,
        "scores": {r: {i: round(latent[f"{r}:{i}"]) for i in ITEMS} for r in ("chosen", "rejected")},
    }


def _add_controls(
    rng: np.random.Generator,
    queue: dict[str, list[str]],
    latents: dict[str, dict[str, float]],
    pairs: int,
    control_rate: float,
) -> tuple[dict[str, dict[str, Any]], dict[str, str], dict[str, str]]:
    """Append controls to every queue (alternately a swapped repeat of one of their pairs and a gold,
    positive or duplicate control in turn): (expected answers, swap sources, control kinds)."""
    expected: dict[str, dict[str, Any]] = {}
    sources: dict[str, str] = {}
    controls: dict[str, str] = {}
    kinds = ("gold", "positive", "duplicate")
    pool_index = 0
    for n in queue:
        extra = round(control_rate * len(queue[n]) / (1 - control_rate))
        for c in range(extra):
            if c % 2 == 0:  # a swapped repeat of one of their pairs
                source = str(rng.choice(queue[n]))
                control_id = f"swap-{source}"
                sources[control_id], controls[control_id] = source, "swap"
                latents[control_id] = latents[source]
            else:
                kind = kinds[pool_index % 3]
                source = f"p{int(rng.integers(pairs)):03d}"
                control_id = f"{kind}-{pool_index:03d}"
                pool_index += 1
                latent = dict(latents[source])
                known = _pool_control(kind, latent)
                if known is not None:
                    expected[control_id] = known
                latents[control_id] = latent
                controls[control_id] = kind
            queue[n].append(control_id)
    return expected, sources, controls


#: The label frame's contract columns, and which control a row belongs to.
FRAME_COLUMNS = [*REQUIRED_COLUMNS, CONTROL]


def simulate_crowd(
    seed: int,
    *,
    annotators: int = 20,
    spam_share: float = 0.2,
    pairs: int = 100,
    per_pair: int = 3,
    control_rate: float = 0.1,
    aspects: int = 2,
    rubric_gap: float = 1.0,
) -> tuple[pd.DataFrame, dict[str, dict[str, Any]], dict[str, str], set[str]]:
    """One simulated crowd: (label frame with `control`, expected answers, swap sources, spammers)."""
    rng = np.random.default_rng(seed)
    names = [f"w{j:02d}" for j in range(annotators)]
    spammers = set(rng.choice(names, size=round(spam_share * annotators), replace=False).tolist())
    bias = {n: rng.normal(0, BIAS_SD) for n in names}
    noise = {n: NOISE * rng.uniform(*NOISE_SPREAD) for n in names}
    latents = _pair_latents(rng, pairs, aspects, rubric_gap)
    queue = _main_queues(rng, names, list(latents), per_pair)
    expected, sources, controls = _add_controls(rng, queue, latents, pairs, control_rate)
    rows = []
    for n in names:
        for pair_id in queue[n]:
            scores, preference, seconds = _judge(
                rng, latents[pair_id], aspects, bias[n], noise[n], n in spammers
            )
            for (response, item), value in scores.items():
                rows.append(
                    (pair_id, n, response, item, value, preference, 2.0, seconds, controls.get(pair_id, ""))
                )
    frame = pd.DataFrame(rows, columns=FRAME_COLUMNS)
    return frame, expected, sources, spammers


def flags(table: pd.DataFrame) -> dict[str, set[str]]:
    """Who each rule flags (the thresholds of THRESHOLDS)."""
    gold = set(table.loc[(table.gold_checks >= 3) & (table.gold_accuracy < THRESHOLDS["gold"]), "annotator"])
    consistency = set(
        table.loc[
            (table.swap_checks >= 1) & (table.self_consistency < THRESHOLDS["consistency"]), "annotator"
        ]
    )
    competence = set(table.loc[table.competence < THRESHOLDS["competence"], "annotator"])
    every = gold | consistency | competence
    two = {a for a in every if (a in gold) + (a in consistency) + (a in competence) >= 2}
    return {
        "gold": gold,
        "consistency": consistency,
        "competence": competence,
        "any": every,
        "two_of_three": two,
        "competence_or_consistency": competence | consistency,
        "competence_and_any_control": competence & (gold | consistency),
    }


def _verdicts(frame: pd.DataFrame) -> dict[str, str]:
    from analysis.report import ReportSettings, build_report

    report = build_report(frame, study="bench", settings=ReportSettings(n_boot=200, extras=False))
    return {v.key: v.status for v in report.verdicts} | {"overall": report.overall}


def run(seeds: int, *, verdicts: bool = True) -> dict[str, Any]:
    """Flag rates per rule and verdict rates with and without exclusion over `seeds` crowds."""
    spam_hits: dict[str, list[float]] = {}
    good_hits: dict[str, list[float]] = {}
    with_all: list[dict[str, str]] = []
    without: list[dict[str, str]] = []
    started = time.perf_counter()
    for seed in range(seeds):
        frame, expected, sources, spammers = simulate_crowd(seed)
        table = qc_table(frame, expected=expected, sources=sources, seed=seed)
        goods = set(table["annotator"]) - spammers
        for rule, flagged in flags(table).items():
            spam_hits.setdefault(rule, []).append(len(flagged & spammers) / len(spammers))
            good_hits.setdefault(rule, []).append(len(flagged & goods) / len(goods))
        if verdicts:
            excluded = apply_exclusion(
                table,
                min_gold_accuracy=THRESHOLDS["gold"],
                min_self_consistency=THRESHOLDS["consistency"],
                min_competence=THRESHOLDS["competence"],
            )
            out = set(excluded.loc[excluded["excluded"], "annotator"])
            with_all.append(_verdicts(frame))
            without.append(_verdicts(frame[~frame["annotator"].isin(out)]))
    result: dict[str, Any] = {
        "seeds": seeds,
        "seconds": round(time.perf_counter() - started, 1),
        "spammers_flagged": {k: float(np.mean(v)) for k, v in spam_hits.items()},
        "good_flagged": {k: float(np.mean(v)) for k, v in good_hits.items()},
    }
    if verdicts:
        result["verdicts_all"] = _rates(with_all)
        result["verdicts_excluded"] = _rates(without)
    return result


def _rates(runs: list[dict[str, str]]) -> dict[str, dict[str, float]]:
    keys = sorted({k for r in runs for k in r})
    return {
        k: pd.Series([r.get(k, "") for r in runs]).value_counts(normalize=True).round(3).to_dict()
        for k in keys
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--no-verdicts", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    result = run(args.seeds, verdicts=not args.no_verdicts)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            handle.write(text)


if __name__ == "__main__":
    main()
