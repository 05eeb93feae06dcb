"""Calibration of the equivalence claim: how often does the report call a study equivalent when the
true quality gap sits exactly on the margin? (It must be at most alpha.)

Run: python benchmarks/bench_calibration.py [--studies 200] [--pairs 40] [--annotators 3] [--margin 0.5]

Model (the simulator's, in numpy): per pair a latent quality N(4, 0.45) shared by both responses,
chosen gets +gap; per annotator a bias N(0, 0.25) and a noise SD 0.6 x U(0.7, 1.3); ratings are
rounded (half to even, as Python's round) and clipped to 1-5. Rounding and clipping shrink the gap, so
the latent gap is first solved (bisection on 4M common-random-number draws) such that the *realized*
expected difference of the rated scores equals the margin exactly. Each simulated study (40 pairs x 3
annotators) then goes through the report's own code, `analysis.validation.validate_pairs` (paired TOST
on per-pair means, mixed model off), and the false-equivalence rate is printed with its Monte Carlo SE
sqrt(p(1-p)/n). Both boundaries (+margin and -margin) are run; a larger run with
`analysis.equivalence.tost_paired` on the same per-pair means narrows the SE.
"""

import argparse
import math
import time

import numpy as np
import pandas as pd

from analysis.equivalence import tost_paired
from analysis.validation import validate_pairs

ITEM = "correctness"


def _ratings(
    rng: np.random.Generator, n_pairs: int, annotators: int, gap: float
) -> tuple[np.ndarray, np.ndarray]:
    latent = rng.normal(4.0, 0.45, (n_pairs, 1))
    bias = rng.normal(0.0, 0.25, (1, annotators))
    noise = 0.6 * rng.uniform(0.7, 1.3, (1, annotators))
    chosen = np.clip(np.rint(latent + gap + bias + noise * rng.standard_normal((n_pairs, annotators))), 1, 5)
    rejected = np.clip(np.rint(latent + bias + noise * rng.standard_normal((n_pairs, annotators))), 1, 5)
    return chosen, rejected


def realized_gap(gap: float, *, n: int = 4_000_000, seed: int = 12345) -> float:
    """The expected chosen - rejected difference of the rated (rounded, clipped) scores."""
    rng = np.random.default_rng(seed)  # common random numbers: smooth and monotone in `gap`
    total, done = 0.0, 0
    while done < n:
        m = min(500_000, n - done)
        latent = rng.normal(4.0, 0.45, m) + rng.normal(0.0, 0.25, m)
        noise = 0.6 * rng.uniform(0.7, 1.3, m)
        chosen = np.clip(np.rint(latent + gap + noise * rng.standard_normal(m)), 1, 5)
        rejected = np.clip(np.rint(latent + noise * rng.standard_normal(m)), 1, 5)
        total += float((chosen - rejected).sum())
        done += m
    return total / n


def solve_gap(target: float) -> float:
    """The latent gap whose realized gap equals `target` (bisection)."""
    lo, hi = (0.0, 3 * target) if target > 0 else (3 * target, 0.0)
    for _ in range(40):
        mid = (lo + hi) / 2
        if realized_gap(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _frame(chosen: np.ndarray, rejected: np.ndarray) -> pd.DataFrame:
    n_pairs, annotators = chosen.shape
    pair = np.repeat([f"p{i:03d}" for i in range(n_pairs)], annotators)
    annotator = np.tile([f"a{j}" for j in range(annotators)], n_pairs)
    rows = []
    for response, values in (("chosen", chosen), ("rejected", rejected)):
        rows.append(
            pd.DataFrame(
                {
                    "pair_id": pair,
                    "annotator": annotator,
                    "response": response,
                    "item": ITEM,
                    "value": values.ravel(),
                    "preference": 0,
                    "confidence": 2,
                    "time_s": 60.0,
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def false_equivalence(
    gap: float, *, studies: int, pairs: int, annotators: int, margin: float, alpha: float, seed: int
) -> tuple[float, float]:
    """Share of studies the report calls equivalent (validate_pairs), and the realized mean gap."""
    rng = np.random.default_rng(seed)
    hits, gaps = 0, []
    for _ in range(studies):
        chosen, rejected = _ratings(rng, pairs, annotators, gap)
        gaps.append(float((chosen - rejected).mean()))
        result = validate_pairs(
            _frame(chosen, rejected), quality_items=[ITEM], margin=margin, alpha=alpha, mixed=False
        )
        hits += bool(result.equivalence["equivalent"].iloc[0])
    return hits / studies, float(np.mean(gaps))


def false_equivalence_fast(
    gap: float, *, studies: int, pairs: int, annotators: int, margin: float, alpha: float, seed: int
) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(studies):
        chosen, rejected = _ratings(rng, pairs, annotators, gap)
        x, y = chosen.mean(axis=1), rejected.mean(axis=1)
        if np.std(x - y) == 0:
            hits += abs(float((x - y).mean())) < margin
            continue
        hits += bool(tost_paired(x, y, low=-margin, high=margin, alpha=alpha).equivalent)
    return hits / studies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--fast-studies", type=int, default=20_000)
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--annotators", type=int, default=3)
    parser.add_argument("--margin", type=float, default=0.5)
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args()
    common = {"pairs": args.pairs, "annotators": args.annotators, "margin": args.margin, "alpha": args.alpha}
    print(
        f"{args.pairs} pairs x {args.annotators} annotators, margin +-{args.margin}, alpha {args.alpha}; "
        f"1-5 ratings rounded and clipped"
    )
    for sign in (+1, -1):
        target = sign * args.margin
        start = time.perf_counter()
        latent = solve_gap(target)
        check = realized_gap(latent, seed=999)
        print(
            f"\ntrue gap {target:+g}: latent gap {latent:+.4f} (a latent {target:+g} would realize "
            f"{realized_gap(target):+.4f}); realized on fresh draws {check:+.4f} "
            f"({time.perf_counter() - start:.1f} s)"
        )
        start = time.perf_counter()
        rate, mean_gap = false_equivalence(latent, studies=args.studies, seed=1 if sign > 0 else 2, **common)
        se = math.sqrt(rate * (1 - rate) / args.studies)
        verdict = "<= alpha" if rate <= args.alpha else "> alpha"
        print(
            f"  report (validate_pairs), {args.studies} studies: false-equivalence rate {rate:.3f} "
            f"(MC SE {se:.3f}) {verdict}; mean realized gap in these studies {mean_gap:+.3f} "
            f"({time.perf_counter() - start:.1f} s)"
        )
        start = time.perf_counter()
        fast = false_equivalence_fast(latent, studies=args.fast_studies, seed=3 if sign > 0 else 4, **common)
        se_fast = math.sqrt(fast * (1 - fast) / args.fast_studies)
        print(
            f"  tost_paired on the same per-pair means, {args.fast_studies:,} studies: rate {fast:.4f} "
            f"(MC SE {se_fast:.4f}) {'<= alpha' if fast <= args.alpha else '> alpha'} "
            f"({time.perf_counter() - start:.1f} s)"
        )


if __name__ == "__main__":
    main()
