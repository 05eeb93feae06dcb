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

Usage: ``PYTHONPATH=. nice python benchmarks/bench_cleaning.py [--studies N] [--seed S] [--rows ...]``.
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

PAIRS, BROKEN_SHARE, BROKEN_GAP, MARGIN, FDR = 200, 0.1, 1.0, 0.5, 0.1
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


def study(row: str, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """One simulated label frame and each pair's true gap."""
    rng = np.random.default_rng(seed)
    broken = rng.random(PAIRS) < BROKEN_SHARE
    if row == "good near the margin":
        good = rng.uniform(-MARGIN, MARGIN, PAIRS)
    elif row == "good spread":
        good = np.clip(rng.normal(0, 0.2, PAIRS), -MARGIN, MARGIN)
    else:
        good = np.zeros(PAIRS)
    gap = np.where(broken, BROKEN_GAP * rng.choice([-1.0, 1.0], PAIRS), good)
    pool = 20 if row == "unequal annotators" else 3
    sd = np.repeat([0.3, 0.5, 0.8, 1.2], 5) if pool == 20 else np.full(pool, 0.7)
    bias = rng.normal(0, 0.1, pool)
    who = np.array([rng.choice(pool, 3, replace=False) for _ in range(PAIRS)]).ravel()
    pair = np.repeat(np.arange(PAIRS), 3)
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
    return frame.drop(columns="diff"), gap


def one(args: tuple[str, int]) -> tuple[float, float, float, float]:
    """(FDP, recall, FDP and recall of the drops shown for any distribution) of one study."""
    from analysis.cleaning import frame_cleaning

    row, seed = args
    frame, gap = study(row, seed)
    ids = np.array([f"p{i:04d}" for i in range(PAIRS)])
    clean = frame_cleaning(frame, quality_items=list(ITEMS), margin=MARGIN, fdr=FDR).set_index("pair_id")
    clean = clean.reindex(ids)
    broken = np.abs(gap) > MARGIN + 1e-9
    drop = (clean["decision"] == "drop").to_numpy()
    out = []
    q_any = clean["q_any"].fillna(1.0).to_numpy() if "q_any" in clean else np.ones(PAIRS)  # older lists
    for chosen in (drop, drop & (q_any <= FDR)):
        out += [float((chosen & ~broken).sum() / max(chosen.sum(), 1)),
                float((chosen & broken).sum() / max(broken.sum(), 1))]  # fmt: skip
    return out[0], out[1], out[2], out[3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261206)
    parser.add_argument("--rows", nargs="*", default=list(ROWS), choices=ROWS)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    print(f"{'row':24} {'FDR drop':>9} {'SE':>6} {'recall':>7} {'FDR any':>8} {'recall':>7}  goal")
    with ProcessPoolExecutor(args.workers) as pool:
        for row in args.rows:
            start = time.time()
            jobs = [(row, args.seed + 100_000 * ROWS.index(row) + s) for s in range(args.studies)]
            res = np.array(list(pool.map(one, jobs, chunksize=20)))
            fdr, se = res[:, 0].mean(), res[:, 0].std(ddof=1) / math.sqrt(len(res))
            goal = "met" if fdr <= FDR + 2 * se else "NOT MET"
            print(f"{row:24} {fdr:9.4f} {se:6.4f} {res[:, 1].mean():7.3f} {res[:, 2].mean():8.4f} "
                  f"{res[:, 3].mean():7.3f}  {goal} ({time.time() - start:.0f} s)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
