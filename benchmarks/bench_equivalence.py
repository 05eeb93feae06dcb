"""Benchmark: the full validation statistics on 20,000 pairs x 3 annotators, 3 quality dimensions.

Runs ``validate_frame`` and ``validate_pairs`` (paired TOST, Wilcoxon TOST, rubric superiority,
pair-level preference, Holm, intersection-union and the crossed random-effects TOST per dimension)
on a synthetic label frame of 20,000 pairs x 3 annotators x 2 responses x (3 quality items +
3 rubric aspects) = 720,000 rows, and prints wall time per stage and the peak resident memory (``ru_maxrss``).

Usage: ``python benchmarks/bench_equivalence.py [--pairs N] [--annotators K]``. Goal: <= 15 s.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.frames import validate_frame  # noqa: E402
from analysis.mixed import mixed_effect  # noqa: E402
from analysis.validation import validate_pairs  # noqa: E402

QUALITY = ("correctness", "relevance", "helpfulness")
ASPECTS = 3


def synthetic_frame(n_pairs: int, n_annotators: int, seed: int = 0) -> pd.DataFrame:
    """A label frame with equivalent quality and a rubric advantage for chosen (vectorized)."""
    rng = np.random.default_rng(seed)
    items = [*QUALITY, *(f"rubric:{k}" for k in range(ASPECTS))]
    n_items = len(items)
    shape = (n_pairs, n_annotators, 2, n_items)
    pair = np.broadcast_to(np.arange(n_pairs)[:, None, None, None], shape).ravel()
    ann = np.broadcast_to(np.arange(n_annotators)[None, :, None, None], shape).ravel()
    resp = np.broadcast_to(np.arange(2)[None, None, :, None], shape).ravel()
    item = np.broadcast_to(np.arange(n_items)[None, None, None, :], shape).ravel()
    quality = rng.normal(4.0, 0.5, n_pairs)[pair] + rng.normal(0, 0.6, pair.size)
    quality = np.clip(np.rint(quality), 1, 5)
    rubric = np.where(
        resp == 0, rng.choice(3, pair.size, p=[0.1, 0.3, 0.6]), rng.choice(3, pair.size, p=[0.5, 0.3, 0.2])
    )
    is_rubric = item >= len(QUALITY)
    judgment = pair * n_annotators + ann
    prefs = rng.choice([-2, -1, 0, 1, 2], n_pairs * n_annotators, p=[0.05, 0.1, 0.15, 0.4, 0.3])
    return pd.DataFrame(
        {
            "pair_id": pd.Series(np.char.add("p", pair.astype(str))),
            "annotator": pd.Series(np.char.add("a", ann.astype(str))),
            "response": np.where(resp == 0, "chosen", "rejected"),
            "item": np.asarray(items, dtype=object)[item],
            "value": np.where(is_rubric, rubric, quality).astype(float),
            "preference": prefs[judgment],
            "confidence": rng.integers(1, 4, n_pairs * n_annotators)[judgment].astype(float),
            "time_s": rng.gamma(4.0, 20.0, n_pairs * n_annotators)[judgment],
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--annotators", type=int, default=3)
    args = parser.parse_args()

    t0 = time.perf_counter()
    raw = synthetic_frame(args.pairs, args.annotators)
    t1 = time.perf_counter()
    frame = validate_frame(raw)
    t2 = time.perf_counter()
    result = validate_pairs(frame, quality_items=QUALITY, margin=0.5, alpha=0.05)
    t3 = time.perf_counter()
    one = mixed_effect(frame, "correctness", margin=0.5)
    t4 = time.perf_counter()

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes
    print(f"pairs={args.pairs} annotators={args.annotators} rows={len(frame):,}")
    print(f"generate synthetic frame : {t1 - t0:6.2f} s (not part of the goal)")
    print(f"validate_frame           : {t2 - t1:6.2f} s")
    print(f"validate_pairs (3 dims)  : {t3 - t2:6.2f} s  (crossed + per-pair TOST, Wilcoxon, rubric, pref.)")
    print(f"one more mixed_effect    : {t4 - t3:6.2f} s  [{one.model}]")
    print(f"total statistics         : {t3 - t1:6.2f} s  (goal <= 15 s)")
    print(f"peak RSS                 : {peak_mb:6.0f} MB")
    cols = ["dimension", "estimate", "ci_low", "ci_high", "p_value", "equivalent", "wilcoxon_equivalent"]
    print(result.equivalence[cols].to_string(index=False))
    print(f"IUT (crossed) equivalent={result.iut.equivalent} p={result.iut.pvalue:.3g}")
    print(
        result.crossed[["dimension", "estimate", "se", "df", "pair_var", "annotator_var"]].to_string(
            index=False
        )
    )


if __name__ == "__main__":
    main()
