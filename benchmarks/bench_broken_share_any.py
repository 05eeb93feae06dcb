"""False PASS and power of "fewer than 10% of pairs beyond the margin", for any distribution of pair gaps.

Run: nice python benchmarks/bench_broken_share_any.py [--studies 2000] [--only boundary|power|ordinal]
     [--sizes 80,400,2000,5000]

Every row draws `--studies` whole studies at once (NumPy over studies) and applies the verdict's own
estimator, :func:`analysis.broken_share.mean_square` with :func:`analysis.broken_share.share_bounds`
(the functions ``validate_pairs`` calls), and, beside it, the old bound under a normal model of the pair
gaps (``M = mean^2 + pair variance`` bounded, then the largest normal share for that M; here with moment
estimates of the mean, the pair variance and the annotator variance in place of the crossed REML fit).

Two generators, each with the truth on the scale of what annotators report: a pair's true gap is the
expected chosen - rejected rating over the population of annotators (leniency, slope, noise, rounding,
the ceiling), computed exactly, and each pair's latent defect is solved so that its true gap is the one
the row asks for.

- ``simulator``: the project's rating model (analysis/simulation.py): latent quality N(4, 0.45) per pair,
  annotator bias N(0, 0.25), noise 0.6 x U(0.7, 1.3), an annotator-specific gap N(0, 0.25), ratings
  rounded and clipped to 1-5 (the ceiling at 5 is close).
- ``ordinal``: written for this benchmark: an ordinal model with thresholds 1.5..4.5, annotator
  leniency N(0, 0.3) and slope exp(N(0, 0.3)) on the latent scale, logistic noise (scale 0.4), latent
  quality N(4.3, 0.5) (a ceiling: many 5s).

Distributions of the true gaps at the boundary (exactly 10% of the pairs beyond +-0.5; stratified
quantiles in random order): ``normal`` (SD 0.304), ``two_point`` (10% at 0.51, the rest at 0: the
distribution the bound is tight for), ``two_point_sym`` (5% at +0.51, 5% at -0.51), ``uniform``
(U(-0.556, 0.556)), ``skewed`` (exponential, mean 0.217); and ``two_point_20`` (20% at 0.6: the case
the normal-model bound passed in 50-67% of studies). Power rows: every gap 0 (``zero``), and a normal
spread of SD 0.1 (``sd01``).
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.special import expit

from analysis.broken_share import mean_square, share_bounds

MARGIN, MAX_SHARE, ALPHA = 0.5, 0.1, 0.05
LOW, HIGH = 1, 5
THRESHOLDS = np.arange(LOW + 0.5, HIGH)
DELTAS = np.linspace(-4.5, 4.5, 1801)  # latent defect: > 0 lowers rejected, < 0 lowers chosen
BASE_POINTS = 64


@dataclass(frozen=True)
class Row:
    generator: str
    kind: str
    n: int
    pool: int
    per_pair: int = 3


# ------------------------------------------------------------------------------------- generators


class Simulator:
    """The project's rating model, with each pair's true gap set exactly."""

    name = "simulator"

    def __init__(self, annotator_gap_sd: float = 0.25) -> None:
        self.ann_sd = annotator_gap_sd
        self.bases = 4.0 + 0.45 * stats.norm.ppf((np.arange(BASE_POINTS) + 0.5) / BASE_POINTS)
        nodes, weights = np.polynomial.legendre.leggauss(8)
        self.sigmas, self.weights = 0.6 * (1.0 + 0.3 * nodes), weights / 2  # 0.6 x U(0.7, 1.3)
        b, d = self.bases[:, None], DELTAS[None, :]
        self.table = self._expected(b + np.minimum(d, 0.0), annotator_gap_sd**2) - self._expected(
            b - np.maximum(d, 0.0), 0.0
        )

    def _expected(self, x: np.ndarray, extra_var: float) -> np.ndarray:
        """E clip(rint(x + bias + gap + noise)) over the annotator population."""
        out = np.zeros_like(x)
        for sigma, w in zip(self.sigmas, self.weights, strict=True):
            s = math.sqrt(sigma**2 + 0.25**2 + extra_var)
            out += w * (LOW + sum(stats.norm.cdf((x - t) / s) for t in THRESHOLDS))
        return out

    def draw(
        self, rng: np.random.Generator, gaps: np.ndarray, per_pair: int, pool: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Differences (S, n, k), annotators (S, n, k) and the realized true gaps (S, n)."""
        s_, n = gaps.shape
        base_idx = rng.integers(0, BASE_POINTS, (s_, n))
        delta, true = _solve(self.table, base_idx, gaps)
        base = self.bases[base_idx]
        chosen, rejected = base + np.minimum(delta, 0.0), base - np.maximum(delta, 0.0)
        who = _assign(rng, s_, n, per_pair, pool)
        bias, noise = rng.normal(0, 0.25, (s_, pool)), 0.6 * rng.uniform(0.7, 1.3, (s_, pool))
        gap_effect = rng.normal(0, self.ann_sd, (s_, pool))
        b, sd, a = (np.take_along_axis(v[:, None, :], who.reshape(s_, 1, -1), 2).reshape(who.shape)
                    for v in (bias, noise, gap_effect))  # fmt: skip
        rc = np.clip(np.rint(chosen[..., None] + a + b + sd * rng.standard_normal(who.shape)), LOW, HIGH)
        rr = np.clip(np.rint(rejected[..., None] + b + sd * rng.standard_normal(who.shape)), LOW, HIGH)
        return rc - rr, who, true


class Ordinal:
    """A second generator: ordinal thresholds, annotator leniency and slope, logistic noise, a ceiling."""

    name = "ordinal"
    scale = 0.4

    def __init__(self) -> None:
        self.bases = 4.3 + 0.5 * stats.norm.ppf((np.arange(BASE_POINTS) + 0.5) / BASE_POINTS)
        nodes, weights = np.polynomial.hermite_e.hermegauss(12)
        weights = weights / weights.sum()
        lenient, slope = np.meshgrid(0.3 * nodes, np.exp(0.3 * nodes))
        self.lenient, self.slope = lenient.ravel(), slope.ravel()
        self.weights = np.outer(weights, weights).ravel()
        b, d = self.bases[:, None], DELTAS[None, :]
        self.table = self._expected(b + np.minimum(d, 0.0)) - self._expected(b - np.maximum(d, 0.0))

    def _rating_cdf_sum(self, x: np.ndarray, lenient: np.ndarray, slope: np.ndarray) -> np.ndarray:
        latent = slope * (x - 3.0) + 3.0 + lenient
        return LOW + sum(expit((latent - t) / self.scale) for t in THRESHOLDS)

    def _expected(self, x: np.ndarray) -> np.ndarray:
        out = np.zeros_like(x)
        for le, sl, w in zip(self.lenient, self.slope, self.weights, strict=True):
            out += w * self._rating_cdf_sum(x, le, sl)
        return out

    def draw(
        self, rng: np.random.Generator, gaps: np.ndarray, per_pair: int, pool: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s_, n = gaps.shape
        base_idx = rng.integers(0, BASE_POINTS, (s_, n))
        delta, true = _solve(self.table, base_idx, gaps)
        base = self.bases[base_idx]
        chosen, rejected = base + np.minimum(delta, 0.0), base - np.maximum(delta, 0.0)
        who = _assign(rng, s_, n, per_pair, pool)
        lenient = rng.normal(0, 0.3, (s_, pool))
        slope = np.exp(rng.normal(0, 0.3, (s_, pool)))
        le, sl = (np.take_along_axis(v[:, None, :], who.reshape(s_, 1, -1), 2).reshape(who.shape)
                  for v in (lenient, slope))  # fmt: skip

        def rate(x: np.ndarray) -> np.ndarray:
            latent = sl * (x[..., None] - 3.0) + 3.0 + le + rng.logistic(0.0, self.scale, who.shape)
            return LOW + (latent[..., None] > THRESHOLDS).sum(axis=-1)

        return (rate(chosen) - rate(rejected)).astype(float), who, true


def _solve(table: np.ndarray, base_idx: np.ndarray, gaps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pair, the latent defect whose expected observed gap is the target, and the gap reached."""
    flat_b, flat_g = base_idx.ravel(), gaps.ravel()
    delta, true = np.empty(flat_g.size), np.empty(flat_g.size)
    for b in np.unique(flat_b):
        m = flat_b == b
        delta[m] = np.interp(flat_g[m], table[b], DELTAS)
        true[m] = np.interp(delta[m], DELTAS, table[b])
    return delta.reshape(gaps.shape), true.reshape(gaps.shape)


def _assign(rng: np.random.Generator, s_: int, n: int, per_pair: int, pool: int) -> np.ndarray:
    """`per_pair` different annotators of the pool for every pair (S, n, k)."""
    return np.argsort(rng.random((s_, n, pool)), axis=-1)[..., :per_pair]


def target_gaps(kind: str, rng: np.random.Generator, s_: int, n: int) -> np.ndarray:
    """The true gaps of each study's pairs: stratified quantiles of the distribution, in random order."""
    u = (np.argsort(rng.random((s_, n)), axis=-1) + 0.5) / n
    share = round(MAX_SHARE * n) / n
    if kind == "zero":
        return np.zeros((s_, n))
    if kind == "sd01":
        return 0.1 * stats.norm.ppf(u)
    if kind == "normal":
        return MARGIN / stats.norm.ppf(1 - MAX_SHARE / 2) * stats.norm.ppf(u)
    if kind == "uniform":
        w = MARGIN / (1 - MAX_SHARE)
        return -w + 2 * w * u
    if kind == "skewed":
        return -MARGIN / math.log(1 / MAX_SHARE) * np.log1p(-u)
    if kind == "two_point":
        return np.where(u < share, 0.51, 0.0)
    if kind == "two_point_sym":
        return np.where(u < share / 2, 0.51, np.where(u > 1 - share / 2, -0.51, 0.0))
    if kind == "two_point_20":
        return np.where(u < round(0.2 * n) / n, 0.6, 0.0)
    raise ValueError(kind)


# ----------------------------------------------------------------------------------------- bounds


def _worst_normal_share(m: np.ndarray) -> np.ndarray:
    """The old bound's last step: the largest normal share beyond +-margin over all (mean, SD) with
    mean^2 + SD^2 = m (interpolated from a grid)."""
    grid = np.linspace(0.0, 6.0, 3001)
    mus = np.linspace(0.0, 1.0, 41)[None, :] * np.sqrt(grid)[:, None]
    sds = np.sqrt(np.maximum(grid[:, None] - mus**2, 1e-12))
    share = stats.norm.cdf((-MARGIN - mus) / sds) + stats.norm.sf((MARGIN - mus) / sds)
    return np.interp(m, grid, share.max(axis=1))


def verdicts(d: np.ndarray, who: np.ndarray, pool: int) -> tuple[np.ndarray, np.ndarray]:
    """Per study: the new bound below 10% (the verdict's functions), and the old normal-model one."""
    s_, n, k = d.shape
    pair = np.repeat(np.arange(s_ * n), k)
    annotator = (who + pool * np.arange(s_)[:, None, None]).ravel()
    est = mean_square(
        d.ravel(), pair, annotator, np.repeat(np.arange(s_), n), floor_mean_square=MAX_SHARE * MARGIN**2
    )
    upper, _, _ = share_bounds(est.estimate, est.se, margin=MARGIN, alpha=ALPHA)
    new = upper < MAX_SHARE
    # the old bound (moment estimates in place of the crossed REML fit)
    means = d.mean(axis=2)
    mean, s2 = means.mean(axis=1), means.var(axis=1, ddof=1)
    s2a = np.maximum(est.annotator_var, 0.0)
    residual = np.maximum(est.noise_var - s2a, 0.0)
    weight = 1.0 / k - 1.0 / pool
    noise = residual / k + s2a * weight
    se2 = s2 / n + s2a / pool
    z = stats.norm.ppf(1 - ALPHA)
    spread_up = s2 * ((n - 1) / stats.chi2.ppf(ALPHA, n - 1) - 1.0)
    mean_part = z * np.sqrt(4 * mean * mean * se2 + 2 * se2 * se2)
    m_up = np.maximum(mean * mean - se2 + s2 - noise + np.hypot(spread_up, mean_part), 0.0)
    old = _worst_normal_share(m_up) < MAX_SHARE
    return new, old


# ------------------------------------------------------------------------------------------- rows


def run_row(row: Row, generator: Simulator | Ordinal, studies: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    chunk = max(1, min(studies, 600_000 // (row.n * row.per_pair)))
    new, old, share = [], [], []
    done = 0
    while done < studies:
        s_ = min(chunk, studies - done)
        gaps = target_gaps(row.kind, rng, s_, row.n)
        d, who, true = generator.draw(rng, gaps, row.per_pair, row.pool)
        a, b = verdicts(d, who, row.pool)
        new.append(a)
        old.append(b)
        share.append((np.abs(true) > MARGIN).mean(axis=1))
        done += s_
    return {
        "new": float(np.concatenate(new).mean()),
        "old": float(np.concatenate(old).mean()),
        "share": float(np.concatenate(share).mean()),
    }


BOUNDARY = ("normal", "two_point", "two_point_sym", "uniform", "skewed", "two_point_20")


def rows_for(only: str, sizes: list[int], kinds: tuple[str, ...] = BOUNDARY) -> list[Row]:
    rows: list[Row] = []
    if only in ("all", "boundary"):
        rows += [Row("simulator", kind, n, pool) for kind in kinds for n in sizes for pool in (5, 20)]
    if only in ("all", "power"):
        rows += [
            Row("simulator", kind, n, pool) for kind in ("zero", "sd01") for n in sizes for pool in (5, 20)
        ]
        rows += [Row("simulator", "zero", n, 20, k) for n in (80, 400) for k in (5, 10)]
    if only in ("all", "ordinal"):
        rows += [
            Row("ordinal", kind, n, pool) for kind in ("two_point", "skewed", "normal") for n in (400, 2000)
            for pool in (5, 20)
        ]  # fmt: skip
        rows += [Row("ordinal", "zero", n, 20) for n in (400, 2000)]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--only", choices=("all", "boundary", "power", "ordinal"), default="all")
    ap.add_argument("--sizes", default="80,400,2000,5000")
    ap.add_argument("--seed", type=int, default=20261204)
    ap.add_argument("--kinds", default=",".join(BOUNDARY), help="boundary distributions to run")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    generators: dict[str, Simulator | Ordinal] = {}
    limit = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / args.studies)
    print(f"{args.studies} studies per row; margin {MARGIN}, max share {MAX_SHARE}, alpha {ALPHA}; "
          f"false PASS limit alpha + 2 MC SE = {limit:.4f}")  # fmt: skip
    print("| generator | true gaps | pairs | pool | per pair | true share beyond | PASS (any distribution) "
          "| PASS (old normal model) | requirement | met | seconds |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for i, row in enumerate(rows_for(args.only, sizes, tuple(args.kinds.split(",")))):
        if row.generator not in generators:
            generators[row.generator] = Simulator() if row.generator == "simulator" else Ordinal()
        start = time.perf_counter()
        res = run_row(row, generators[row.generator], args.studies, args.seed + i)
        se = math.sqrt(max(res["new"] * (1 - res["new"]), 1e-12) / args.studies)
        at_boundary = res["share"] >= MAX_SHARE - 1e-9
        requirement = f"<= {limit:.4f}" if at_boundary else "power, reported"
        met = ("yes" if res["new"] <= limit else "NO") if at_boundary else "-"
        print(
            f"| {row.generator} | {row.kind} | {row.n} | {row.pool} | {row.per_pair} | {res['share']:.3f} | "
            f"{res['new']:.4f} ({se:.4f}) | {res['old']:.4f} | {requirement} | {met} | "
            f"{time.perf_counter() - start:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
