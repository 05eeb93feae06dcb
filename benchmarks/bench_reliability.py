"""The reliability verdict's default threshold: how often it passes panels of known reliability.

Run from the repository root: `python benchmarks/bench_reliability.py [--studies 200] [--pairs 60]`.
Each row simulates studies (analysis.simulation.simulate_frame: 3 annotators per pair, three quality
dimensions, the simulator's latent model) at one rating-noise level, runs `build_report` with the
default `reliability_threshold` and prints the mean Krippendorff's alpha over the quality dimensions
and the share of studies whose reliability verdict passes, with its Monte Carlo standard error.
The goal: pure-noise ratings fail, moderately reliable panels (alpha about 0.4-0.5 on 60+
pairs) pass.
"""

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.report import ReportSettings, build_report  # noqa: E402
from analysis.simulation import SimDesign, SimEffects, simulate_frame  # noqa: E402

QUALITY = ("correctness", "relevance", "helpfulness")
ROWS: tuple[tuple[str, SimEffects], ...] = (
    ("pure noise (uniform 1-5)", SimEffects(pure_noise=True)),
    ("noise SD 0.6 (the simulator's default)", SimEffects(noise=0.6)),
    ("noise SD 0.45", SimEffects(noise=0.45)),
    ("noise SD 0.3", SimEffects(noise=0.3)),
    ("noise SD 0.2", SimEffects(noise=0.2)),
)


def row(studies: int, pairs: int, effects: SimEffects, seed: int) -> tuple[float, float, float]:
    """Mean alpha, pass rate and its standard error over `studies` simulated studies."""
    alphas, passes = [], 0
    for i in range(studies):
        frame = simulate_frame(np.random.default_rng(seed + i), SimDesign(n_pairs=pairs), effects)
        report = build_report(frame, study="bench", settings=ReportSettings(n_boot=200, extras=False))
        table = report.agreement
        alphas.append(float(table[table["item"].isin(QUALITY)]["krippendorff_alpha"].mean()))
        passes += report.verdict("reliability").passed
    rate = passes / studies
    return float(np.mean(alphas)), rate, math.sqrt(rate * (1 - rate) / studies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--pairs", type=int, default=60)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"{args.studies} studies per row, {args.pairs} pairs x 3 annotators, default threshold")
    print("| panel | mean alpha (quality) | reliability PASS | SE |")
    print("|---|---|---|---|")
    for k, (name, effects) in enumerate(ROWS):
        start = time.perf_counter()
        alpha, rate, se = row(args.studies, args.pairs, effects, seed=10_000 * k)
        print(f"| {name} | {alpha:.3f} | {rate:.3f} | {se:.3f} |  ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
