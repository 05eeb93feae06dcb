"""How much power any valid "few broken pairs" bound can have: the most powerful test, given the truth.

Run: nice python benchmarks/bench_broken_bound.py [--pairs 80] [--per-pair 3] [--pool 20] [--fits 40]

The equivalence verdict requires that the share of pairs whose true gap lies beyond +-margin is
below ``max_broken_share`` with 1 - alpha confidence. Under the crossed model's normal pair gaps with
mean 0 the share is ``2 Phi(-margin / tau)``, so the requirement is ``tau < tau0 = margin /
z_(1 - max_share / 2)`` (0.304 for margin 0.5 and 10%). The data about tau are the n per-pair mean
differences ``x_i = p_i + e_i``, with ``e_i`` the judgment noise of a mean of k judgments (variance
``v = residual_var / k``). For an oracle that knows the mean (0) and v exactly, the x_i are
N(0, tau^2 + v) and the uniformly most powerful level-alpha test of ``tau >= tau0`` against
``tau = 0`` rejects for small ``sum x_i^2`` (a chi-square test on n df, Neyman-Pearson for a normal
scale family): its power ``P(chi2_n < (1 + tau0^2 / v) chi2_(alpha, n))`` bounds the power of every
level-alpha bound on the broken share, including the one the report uses (which must also estimate
v, the mean and the annotator effects). v is the mean REML residual variance of `--fits` large
simulated studies of the simulator's model (benchmarks/bench_calibration.py) divided by k.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

from analysis.mixed import mixed_effect
from analysis.simulation import SimDesign, SimEffects, simulate_frame

ITEM = "correctness"


def residual_variance(per_pair: int, pool: int, fits: int, seed: int = 7) -> float:
    """Mean REML residual variance of the per-judgment difference in the simulator at gap 0."""
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(fits):
        frame = simulate_frame(
            rng,
            SimDesign(
                n_pairs=2000, per_pair=per_pair, pool=pool, items=(ITEM,), rubric_aspects=0, lengths=False
            ),
            SimEffects(quality_gap=0.0, annotator_gap_sd=0.25),
        )
        values.append(mixed_effect(frame, ITEM, margin=0.5).residual_var)
    return float(np.mean(values))


def oracle_power(n_pairs: int, v: float, tau0: float, alpha: float) -> float:
    """Power at tau = 0 of the most powerful level-alpha test of tau >= tau0 (known mean and v)."""
    critical = (tau0**2 + v) * stats.chi2.ppf(alpha, n_pairs)
    return float(stats.chi2.cdf(critical / v, n_pairs))


def main() -> None:
    """Print the oracle's power for the design, with the residual variance it rests on."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=80)
    ap.add_argument("--per-pair", type=int, default=3)
    ap.add_argument("--pool", type=int, default=20)
    ap.add_argument("--fits", type=int, default=40)
    ap.add_argument("--margin", type=float, default=0.5)
    ap.add_argument("--max-share", type=float, default=0.1)
    ap.add_argument("--alpha", type=float, default=0.05)
    args = ap.parse_args()
    tau0 = args.margin / float(stats.norm.ppf(1 - args.max_share / 2))
    resid = residual_variance(args.per_pair, args.pool, args.fits)
    print(f"tau0 (pair SD at which {args.max_share:.0%} of pairs lie beyond +-{args.margin}): {tau0:.3f}")
    print(
        f"residual variance of one judgment's difference "
        f"(mean of {args.fits} fits of 2,000 pairs): {resid:.3f}"
    )
    for pairs, k in [(args.pairs, args.per_pair), (args.pairs, 5), (200, args.per_pair)]:
        v = resid / k
        power = oracle_power(pairs, v, tau0, args.alpha)
        print(
            f"{pairs} pairs x {k} judgments: noise variance of a pair mean {v:.3f}; "
            f"most powerful test's power at tau = 0: {power:.3f}"
        )
    needed = next(k for k in range(1, 50) if oracle_power(args.pairs, resid / k, tau0, args.alpha) >= 0.8)
    pairs_needed = next(
        n for n in range(10, 100_000, 10) if oracle_power(n, resid / args.per_pair, tau0, args.alpha) >= 0.8
    )
    print(
        f"for 0.8 at tau = 0: {needed} judgments per pair at {args.pairs} pairs, "
        f"or {pairs_needed} pairs at {args.per_pair}"
    )


if __name__ == "__main__":
    main()
