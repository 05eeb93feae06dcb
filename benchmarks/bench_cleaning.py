"""Benchmark: the cleaning list's false discovery rate when the noise is not normal with one variance.

Each study: 200 pairs, 10% of them broken (true quality gap +-1.0, twice the margin 0.5), the rest
good; three quality dimensions; each judgment's chosen - rejected difference on every dimension is
the pair's gap + the annotator's bias (SD 0.1) + the judgment's noise (shared by the dimensions) +
N(0, 0.2) per dimension. The list runs as the report runs it (:func:`analysis.cleaning.frame_cleaning`,
fdr 0.1), so ``PYTHONPATH`` at a checkout measures that checkout. Rows:

- **normal**: a panel of 3 on every pair, noise N(0, 0.7), good pairs at 0;
- **integer**: the same, each rating rounded to 1..5 (a 1-5 scale);
- **heavy tails**: noise 0.7 x t(3) / sqrt(3) (Student's t with 3 degrees of freedom, variance 0.49);
- **unequal annotators**: 3 of a pool of 20 per pair, noise SD 0.3 / 0.5 / 0.8 / 1.2 (5 each);
- **good near the margin**: good pairs' gaps uniform on (-0.5, 0.5);
- **good spread**: good pairs' gaps N(0, 0.2) (clipped to the margin);
- **integer with slips**: as "integer", and 5% of the judgments slips (every rating uniform on 1..5):
  the heavy tails a bounded scale has.

Columns: the false discovery rate of "drop" (mean share of good pairs among a study's drops, 0 for a
study without drops) with its Monte Carlo SE, the share of broken pairs dropped (recall), and the same
two for the drops whose ``q_any`` (Benjamini-Hochberg over p values at the margin, valid for any
distribution of gaps) is at most 0.1. Goal: FDR <= 0.1 + 2 MC SE.

``--adaptive`` runs each study as the product runs it: 3 of a pool of 20 annotators per pair, then up
to 3 rounds in which every pair the list says "needs more judgments" gets one more annotator of the
pool (the Validation page's button, ``annotator assign --needs-more``) and the list is computed again.
It prints the final list's two FDRs and recalls, the FDR (and SE) of every pair dropped at some look
("ever": a researcher who acts on each look and never takes a drop back), the same for the drops shown
for any distribution, and the judgments per pair at the end (k); goal: the final and "ever" FDR <= 0.1 +
2 MC SE.

Usage: ``PYTHONPATH=. nice python benchmarks/bench_cleaning.py [--adaptive] [--studies N] [--seed S]
[--rows ...]``.
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

PAIRS, BROKEN_SHARE, BROKEN_GAP, MARGIN, FDR = 200, 0.1, 1.0, 0.5, 0.1
POOL, LOOKS = 20, 4  # the adaptive runs: a pool of 20, the first list and up to 3 rounds of more
ITEMS = ("correctness", "relevance", "helpfulness")
ROWS = (
    "normal",
    "integer",
    "heavy tails",
    "unequal annotators",
    "good near the margin",
    "good spread",
    "integer with slips",
)


def design(row: str, rng: np.random.Generator, pool: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each pair's true gap, each annotator's bias and noise SD."""
    broken = rng.random(PAIRS) < BROKEN_SHARE
    if row == "good near the margin":
        good = rng.uniform(-MARGIN, MARGIN, PAIRS)
    elif row == "good spread":
        good = np.clip(rng.normal(0, 0.2, PAIRS), -MARGIN, MARGIN)
    else:
        good = np.zeros(PAIRS)
    gap = np.where(broken, BROKEN_GAP * rng.choice([-1.0, 1.0], PAIRS), good)
    unequal = row == "unequal annotators"
    sd = np.repeat([0.3, 0.5, 0.8, 1.2], pool // 4) if unequal else np.full(pool, 0.7)
    return gap, rng.normal(0, 0.1, pool), sd


def judge(
    row: str, rng: np.random.Generator, truth: tuple, pair: np.ndarray, who: np.ndarray
) -> pd.DataFrame:
    """The label frame of one judgment per (pair, annotator), under the row's noise."""
    gap, bias, sd = truth
    shock = (
        rng.standard_t(3, len(pair)) / math.sqrt(3) if row == "heavy tails" else rng.normal(size=len(pair))
    )
    judged = gap[pair] + bias[who] + sd[who] * shock
    slips = row == "integer with slips"  # a judgment made without reading the responses
    slip = rng.random(len(pair)) < 0.05 if slips else np.zeros(len(pair), dtype=bool)
    frames = []
    for item in ITEMS:
        diff = judged + rng.normal(0, 0.2, len(pair))
        chosen, rejected = 3.5 + diff / 2, 3.5 - diff / 2
        if row.startswith("integer"):
            chosen = np.clip(np.round(chosen + rng.uniform(-0.5, 0.5, len(pair))), 1, 5)
            rejected = np.clip(np.round(rejected + rng.uniform(-0.5, 0.5, len(pair))), 1, 5)
        if slips:
            chosen = np.where(slip, rng.integers(1, 6, len(pair)), chosen)
            rejected = np.where(slip, rng.integers(1, 6, len(pair)), rejected)
        for response, value in (("chosen", chosen), ("rejected", rejected)):
            frames.append(pd.DataFrame({"pair_id": pair, "annotator": who, "response": response,
                                        "item": item, "value": value, "diff": diff}))  # fmt: skip
    frame = pd.concat(frames, ignore_index=True)
    frame["pair_id"] = "p" + frame["pair_id"].astype(str).str.zfill(4)
    frame["annotator"] = "a" + frame["annotator"].astype(str).str.zfill(2)
    frame["preference"] = np.sign(frame["diff"]).astype(int)
    frame["confidence"], frame["time_s"] = 2, 30.0
    return frame.drop(columns="diff")


def study(row: str, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """One simulated label frame (3 judgments per pair) and each pair's true gap."""
    rng = np.random.default_rng(seed)
    pool = 20 if row == "unequal annotators" else 3
    truth = design(row, rng, pool)
    who = np.array([rng.choice(pool, 3, replace=False) for _ in range(PAIRS)]).ravel()
    return judge(row, rng, truth, np.repeat(np.arange(PAIRS), 3), who), truth[0]


IDS = np.array([f"p{i:04d}" for i in range(PAIRS)])


def drops(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The list's drops, the drops shown for any distribution, and the pairs needing more judgments."""
    from analysis.cleaning import NEEDS_MORE, frame_cleaning

    clean = frame_cleaning(frame, quality_items=list(ITEMS), margin=MARGIN, fdr=FDR).set_index("pair_id")
    clean = clean.reindex(IDS)
    drop = (clean["decision"] == "drop").to_numpy()
    q_any = clean["q_any"].fillna(1.0).to_numpy() if "q_any" in clean else np.ones(PAIRS)  # older lists
    return drop, drop & (q_any <= FDR), (clean["decision"] == NEEDS_MORE).to_numpy()


def rates(chosen: np.ndarray, broken: np.ndarray) -> list[float]:
    """[share of good pairs among the chosen (0 without any), share of broken pairs chosen]."""
    return [float((chosen & ~broken).sum() / max(chosen.sum(), 1)),
            float((chosen & broken).sum() / max(broken.sum(), 1))]  # fmt: skip


def one(args: tuple[str, int]) -> list[float]:
    """(FDP, recall, FDP and recall of the drops shown for any distribution) of one study."""
    row, seed = args
    frame, gap = study(row, seed)
    broken = np.abs(gap) > MARGIN + 1e-9
    drop, drop_any, _ = drops(frame)
    return rates(drop, broken) + rates(drop_any, broken)


def adaptive(args: tuple[str, int]) -> list[float]:
    """One study run as the product runs it: 3 of a pool of 20 per pair, then up to ``LOOKS - 1``
    rounds that give each pair the list says "needs more judgments" one more annotator of the pool.

    Returns the final list's FDP and recall, the same for its drops shown for any distribution, the
    FDP of every pair dropped at some look (a researcher who acts on each look and never takes a drop
    back), the same for the drops shown for any distribution, and the judgments per pair at the end.
    """
    row, seed = args
    rng = np.random.default_rng(seed)
    truth = design(row, rng, POOL)
    broken = np.abs(truth[0]) > MARGIN + 1e-9
    raters = [list(rng.choice(POOL, 3, replace=False)) for _ in range(PAIRS)]
    frame = judge(row, rng, truth, np.repeat(np.arange(PAIRS), 3), np.array(raters).ravel())
    ever, ever_any = np.zeros(PAIRS, dtype=bool), np.zeros(PAIRS, dtype=bool)
    for look in range(LOOKS):
        drop, drop_any, more = drops(frame)
        ever, ever_any = ever | drop, ever_any | drop_any
        if look == LOOKS - 1 or not more.any():
            break
        pairs = np.flatnonzero(more)
        new = np.array([rng.choice(np.setdiff1d(np.arange(POOL), raters[i])) for i in pairs])
        for i, annotator in zip(pairs, new, strict=True):
            raters[i].append(annotator)
        frame = pd.concat([frame, judge(row, rng, truth, pairs, new)], ignore_index=True)
    per_pair = float(np.mean([len(r) for r in raters]))
    return (
        rates(drop, broken)
        + rates(drop_any, broken)
        + [rates(ever, broken)[0], rates(ever_any, broken)[0], per_pair]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261206)
    parser.add_argument("--rows", nargs="*", default=list(ROWS), choices=ROWS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--adaptive", action="store_true", help="the needs-more-judgments loop, repeated looks"
    )
    args = parser.parse_args()
    head = f"{'row':24} {'FDR drop':>9} {'SE':>6} {'recall':>7} {'FDR any':>8} {'recall':>7}"
    print(head + (f" {'ever':>7} {'SE':>6} {'ever any':>8} {'k':>5}" if args.adaptive else "") + "  goal")
    with ProcessPoolExecutor(args.workers) as pool:
        for row in args.rows:
            start = time.time()
            offset = 100_000 * ROWS.index(row) + (1_000_000 if args.adaptive else 0)
            jobs = [(row, args.seed + offset + s) for s in range(args.studies)]
            res = np.array(list(pool.map(adaptive if args.adaptive else one, jobs, chunksize=20)))
            se = res.std(axis=0, ddof=1) / math.sqrt(len(res))
            held = [res[:, c].mean() <= FDR + 2 * se[c] for c in ((0, 4) if args.adaptive else (0,))]
            goal = "met" if all(held) else "NOT MET"
            line = (f"{row:24} {res[:, 0].mean():9.4f} {se[0]:6.4f} {res[:, 1].mean():7.3f} "
                    f"{res[:, 2].mean():8.4f} {res[:, 3].mean():7.3f}")  # fmt: skip
            if args.adaptive:
                line += (
                    f" {res[:, 4].mean():7.4f} {se[4]:6.4f} {res[:, 5].mean():8.4f} {res[:, 6].mean():5.2f}"
                )
            print(f"{line}  {goal} ({time.time() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
