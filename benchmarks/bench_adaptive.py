"""Fixed, two-stage and sequential designs: power and validity of the calibrated "few broken pairs" test.

Run: nice python benchmarks/bench_adaptive.py [--studies 2000] [--pairs 80] [--pool 20] [--part designs]

Each simulated study runs a registered design of :mod:`analysis.design` on ``--pairs`` pairs rated by a
pool of ``--pool`` annotators (the j-th judgment of a pair goes to the pool's next annotator, so a pair
never meets the same annotator twice), computes the statistic ``T`` with the noise variance it estimates
itself and compares it with the critical value :func:`analysis.design.critical_values` gives for that
estimate (the value the report uses). The equivalence verdict also needs the mean gap inside the margin:
a TOST on the per-pair means (t on n - 1 df). Two generators of a judgment's gap:

``normal``
    The crossed model: the pair's true gap + an annotator effect on the gap N(0, 0.25^2) + noise
    N(0, 0.775) (the residual variance REML finds in the project's simulator).
``ratings``
    The project's rating model (:mod:`analysis.simulation`): latent quality N(4, 0.45^2) per pair,
    annotator bias N(0, 0.25^2), annotator-specific gap N(0, 0.25^2), noise SD 0.6 x U(0.7, 1.3) per
    annotator, ratings rounded and clipped to 1-5. A pair's latent gap is set so that its expected
    rating difference (over annotators in general) is the gap of the configuration: the claim is about
    rating differences, and near the ceiling a latent gap shows less.

Gap configurations: ``zero`` (every pair at 0: power), ``edge`` (ceil(10%) of pairs at +0.5, the rest 0:
the least favourable configuration of the claim "fewer than 10% beyond +-0.5"), ``edge051`` (10% at 0.51),
``broken20`` (20% at 0.6), ``normal`` (N(0, 0.304^2): 10% beyond in expectation), ``uniform``
(U(-0.556, 0.556)), ``skewed`` (exponential, P(g > 0.5) = 0.1).

Parts: ``designs`` (the table at 240 judgments: false PASS at each boundary and power at 0),
``budget`` (power against the budget: the smallest budget reaching 0.8, fixed and adaptive; ``--specs
sequential/3/5,two_stage/5/10/10`` names the designs, each at its own budget), ``looks``
(5 and 10 looks, stopping at the first PASS: group-sequential critical values against one critical value
used at every look, and an anytime-valid e-value test).
"""

from __future__ import annotations

import argparse
import functools
import math
import time
import zlib
from collections.abc import Callable

import numpy as np
from scipy import stats

from analysis.design import (
    Design,
    broken_statistic,
    critical_values,
    look_points,
    noise_ratio,
    sequential_is_valid,
    simulate_design,
)
from analysis.design_looks import INTERIM_SHARE, look_rule
from analysis.simulation import BIAS_SD, NOISE, NOISE_SPREAD, QUALITY_MEAN, QUALITY_SD

MARGIN, SHARE, ALPHA = 0.5, 0.1, 0.05
ANNOTATOR_GAP_SD = 0.25
RESIDUAL_VAR = 0.775
TAU0 = MARGIN / float(stats.norm.ppf(1 - SHARE / 2))

DESIGNS_240 = {
    "fixed 3": Design("fixed", 3, 3.0),
    "two-stage 2 + 8 x 10": Design("two_stage", 2, 3.0, 8),
    "sequential 1": Design("sequential", 1, 3.0),
}


def configurations(rng: np.random.Generator, s: int, n: int) -> dict[str, np.ndarray]:
    """Each configuration's true gaps, shape (s, n)."""
    k = math.ceil(SHARE * n - 1e-9)

    def two_point(value: float, count: int) -> np.ndarray:
        g = np.zeros((s, n))
        g[:, :count] = value
        return g

    return {
        "zero": np.zeros((s, n)),
        "edge": two_point(MARGIN, k),
        "edge051": two_point(0.51, k),
        "broken20": two_point(0.6, math.ceil(0.2 * n)),
        "normal": rng.normal(0.0, TAU0, (s, n)),
        "uniform": rng.uniform(-MARGIN / 0.9, MARGIN / 0.9, (s, n)),
        "skewed": rng.exponential(MARGIN / math.log(10), (s, n)),
    }


def _rounded_mean(mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """E[clip(round(mu + N(0, sd^2)), 1, 5)] (elementwise)."""
    out = np.ones(np.broadcast(mu, sd).shape)
    for v in range(2, 6):  # E = 1 + sum_v P(X >= v - 0.5)
        out += stats.norm.sf((v - 0.5 - mu) / sd)
    return out


def _expected_difference(q: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Expected rating difference of a pair (latent quality q, latent gap g) over annotators in general."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(9)
    weights = weights / weights.sum()
    spreads = np.linspace(*NOISE_SPREAD, 7)
    total = np.zeros(np.broadcast(q, g).shape)
    for b, wb in zip(nodes * math.hypot(BIAS_SD, 0.0), weights, strict=True):
        for a, wa in zip(nodes * ANNOTATOR_GAP_SD, weights, strict=True):
            for f in spreads:
                sd = np.full_like(total, NOISE * f)
                diff = _rounded_mean(q + g + a + b, sd) - _rounded_mean(q + b + 0 * g, sd)
                total += wb * wa * diff / len(spreads)
    return total


@functools.lru_cache(maxsize=1)
def _difference_grid() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expected rating differences on a grid of latent quality (rows) and latent gap (columns)."""
    q = np.linspace(1.5, 6.5, 101)
    g = np.linspace(-3.0, 3.0, 241)
    return q, g, _expected_difference(q[:, None], g[None, :])


def _latent_gap(q: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The latent gap whose expected rating difference is `target`, per pair (interpolated on the grid;
    the difference grows with the latent gap)."""
    grid_q, grid_g, diff = _difference_grid()
    row = np.clip(np.rint((q - grid_q[0]) / (grid_q[1] - grid_q[0])).astype(int), 0, len(grid_q) - 1)
    out = np.empty(len(q))
    for i in np.unique(row):
        at = row == i
        out[at] = np.interp(target[at], diff[i], grid_g)
    return out


Judge = Callable[[np.random.Generator, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def generator(name: str, gaps: np.ndarray, pool: int, rng: np.random.Generator) -> Judge:
    """The judge of a generator: one judgment's gap for (study, pair, judgments so far)."""
    s, n = gaps.shape
    start = rng.integers(0, pool, (s, n))
    effect = rng.normal(0.0, ANNOTATOR_GAP_SD, (s, pool))
    if name == "normal":
        sd = math.sqrt(RESIDUAL_VAR)

        def judge_normal(g: np.random.Generator, r: np.ndarray, c: np.ndarray, k: np.ndarray) -> np.ndarray:
            who = (start[r, c] + k.astype(np.int64)) % pool
            return gaps[r, c] + effect[r, who] + g.normal(0.0, sd, r.size)

        return judge_normal
    quality = QUALITY_MEAN + QUALITY_SD * rng.standard_normal((s, n))
    latent = np.where(gaps == 0, 0.0, gaps)
    nonzero = gaps != 0
    if nonzero.any():
        _, grid_g, _ = _difference_grid()
        for _ in range(50):  # near the ceiling a large gap cannot show: such a pair's quality is redrawn
            latent[nonzero] = _latent_gap(quality[nonzero], gaps[nonzero])
            stuck = nonzero & (np.abs(latent) >= grid_g[-1] - 1e-9)
            if not stuck.any():
                break
            quality[stuck] = QUALITY_MEAN + QUALITY_SD * rng.standard_normal(int(stuck.sum()))
    bias = rng.normal(0.0, BIAS_SD, (s, pool))
    noise = NOISE * rng.uniform(*NOISE_SPREAD, (s, pool))

    def judge_ratings(g: np.random.Generator, r: np.ndarray, c: np.ndarray, k: np.ndarray) -> np.ndarray:
        who = (start[r, c] + k.astype(np.int64)) % pool
        base = quality[r, c] + bias[r, who]
        sd = noise[r, who]
        chosen = np.clip(np.rint(base + latent[r, c] + effect[r, who] + g.normal(0, 1, r.size) * sd), 1, 5)
        rejected = np.clip(np.rint(base + g.normal(0, 1, r.size) * sd), 1, 5)
        return chosen - rejected

    return judge_ratings


def run(
    design: Design, gaps: np.ndarray, gen: str, pool: int, rng: np.random.Generator, n_sim: int = 2000
) -> dict[str, float]:
    """Simulate studies of one design and configuration; the verdict with the report's critical values."""
    s, n = gaps.shape
    stats_ = _Recorder()
    judge = stats_.wrap(generator(gen, gaps, pool, rng), s, n)
    t, log_var, counts = simulate_design(gaps, design, RESIDUAL_VAR, MARGIN, SHARE, rng, judge=judge)
    crit = final_critical(design, n, np.exp(log_var[:, -1]) / MARGIN**2, ALPHA, n_sim)
    few = t[:, -1] < crit
    means = stats_.sums / np.maximum(counts, 1)
    m = means.mean(axis=1)
    se = means.std(axis=1, ddof=1) / math.sqrt(n)
    q = float(stats.t.ppf(1 - ALPHA, n - 1))
    tost = (m - q * se > -MARGIN) & (m + q * se < MARGIN)
    share = (np.abs(gaps) >= MARGIN - 1e-12).mean(axis=1)
    return {
        "few": float(few.mean()),
        "overall": float((few & tost).mean()),
        "tost": float(tost.mean()),
        "judgments": float(counts.sum(axis=1).mean()),
        "share": float(share.mean()),
        "in_null": float((share >= SHARE - 1e-9).mean()),
        "false_in_null": float((few & tost & (share >= SHARE - 1e-9)).mean()),
    }


#: Spacing (log noise ratio) of the grid the benchmark reads the one-look critical value off (linearly
#: interpolated; the report reads it at its own estimate on a 2% grid: the critical values use common
#: random numbers across noise levels, so they are smooth in the noise ratio).
CRIT_GRID = 0.1


def final_critical(design: Design, n: int, ratios: np.ndarray, alpha: float, n_sim: int) -> np.ndarray:
    """The one-look critical value of the registered design at each study's noise ratio estimate."""
    x = np.log(np.where(ratios > 0, ratios, np.nan))
    out = np.full(len(x), -np.inf)
    ok = np.isfinite(x)
    if not ok.any():
        return out
    lo, hi = math.floor(np.min(x[ok]) / CRIT_GRID), math.ceil(np.max(x[ok]) / CRIT_GRID)
    grid = np.arange(lo, hi + 1) * CRIT_GRID
    values = [critical_values(design, n, round(math.exp(g), 6), SHARE, alpha, n_sim)[-1] for g in grid]
    out[ok] = np.interp(x[ok], grid, values)
    return out


class _Recorder:
    """Keeps the per-pair sums of the judgments a judge hands out (the verdict's inputs)."""

    def wrap(self, judge: Judge, s: int, n: int) -> Judge:
        self.sums = np.zeros((s, n))
        self.squares = np.zeros((s, n))
        self.counts = np.zeros((s, n))

        def recorded(g: np.random.Generator, r: np.ndarray, c: np.ndarray, k: np.ndarray) -> np.ndarray:
            y = judge(g, r, c, k)
            self.sums[r, c] += y
            self.squares[r, c] += y * y
            self.counts[r, c] += 1
            return y

        return recorded

    def noise_var(self) -> np.ndarray:
        k = self.counts
        df = np.maximum(k - 1, 0).sum(axis=1)
        ss = (self.squares - np.where(k > 0, self.sums**2 / np.maximum(k, 1), 0.0)).sum(axis=1)
        return ss / np.maximum(df, 1)


def _se(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 1e-12) / n)


def part_designs(args: argparse.Namespace) -> None:
    """Every design at 240 judgments: false PASS per configuration, power at 0."""
    limit = ALPHA + 2 * _se(ALPHA, args.studies)
    print(f"false PASS limit alpha + 2 MC SE = {limit:.4f} ({args.studies} studies per row)")
    print(
        "| design | generator | configuration | true share at or beyond the margin (mean) | judgments | "
        "few broken | mean TOST | overall PASS (SE) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for gen in args.generators:
        for name, design in DESIGNS_240.items():
            for cfg in args.configs:
                rng = np.random.default_rng(zlib.crc32(f"{name}|{gen}|{cfg}".encode()))
                gaps = configurations(rng, args.studies, args.pairs)[cfg]
                t0 = time.perf_counter()
                r = run(design, gaps, gen, args.pool, rng, args.calibration)
                se = _se(r["overall"], args.studies)
                print(
                    f"| {name} | {gen} | {cfg} | {r['share']:.3f} | {r['judgments']:.0f} | {r['few']:.4f} | "
                    f"{r['tost']:.4f} | {r['overall']:.4f} ({se:.4f}) |  "
                    f"<!-- {time.perf_counter() - t0:.0f} s -->",
                    flush=True,
                )


def _budget_designs(budget: float) -> dict[str, Design]:
    designs = {
        "two-stage 2 + 8": Design("two_stage", 2, budget, 8),
        "sequential 1": Design("sequential", 1, budget),
    }
    if budget == int(budget):
        designs = {f"fixed {int(budget)}": Design("fixed", int(budget), budget)} | designs
    return designs


def parse_spec(spec: str) -> tuple[str, Design]:
    """A design named on the command line: ``kind/first_stage/budget[/second_stage]``.

    >>> parse_spec("sequential/3/6")
    ('sequential 3', Design(kind='sequential', first_stage=3, budget=6.0, second_stage=4, looks=1))
    >>> parse_spec("two_stage/5/10/10")[0]
    'two-stage 5 + 10'
    """
    kind, first, budget, *rest = spec.split("/")
    design = Design(kind, int(first), float(budget), *(int(x) for x in rest))  # type: ignore[arg-type]
    if kind == "sequential":
        return f"sequential {first}", design
    if kind == "two_stage":
        return f"two-stage {first} + {design.second_stage}", design
    return f"fixed {first}", design


def part_budget(args: argparse.Namespace) -> None:
    """Overall PASS against the budget: judgments per pair at ``--pairs`` pairs (``--budgets``), then
    pairs at 3 per pair (``--pair-counts``); the smallest budget reaching 0.8 is read off these rows.
    ``--specs`` names the designs instead (at ``--pairs`` pairs, each at its own budget); a sequential
    design outside the region where its test was shown valid (:func:`sequential_is_valid`) is refused."""
    print("| design | pairs | budget per pair | judgments | configuration | few broken | overall PASS (SE) |")
    print("|---|---|---|---|---|---|---|")
    sizes = [(args.pairs, b) for b in args.budgets] + [(p, 3.0) for p in args.pair_counts]
    points = [(n, b, _budget_designs(b)) for n, b in sizes]
    if args.specs:
        named = [parse_spec(spec) for spec in args.specs]
        for name, design in named:
            if design.kind == "sequential" and not sequential_is_valid(design.first_stage, design.budget):
                raise SystemExit(f"--specs: {name} at budget {design.budget:g} is outside the valid region")
        points = [(args.pairs, design.budget, {name: design}) for name, design in named]
    for n_pairs, budget, designs in points:
        for name, design in designs.items():
            if args.designs and name.split()[0] not in args.designs:
                continue
            for cfg in args.configs:
                rng = np.random.default_rng(zlib.crc32(f"{name}|{n_pairs}|{budget}|{cfg}".encode()))
                gaps = configurations(rng, args.studies, n_pairs)[cfg]
                t0 = time.perf_counter()
                r = run(design, gaps, args.generators[0], args.pool, rng, args.calibration)
                print(
                    f"| {name} | {n_pairs} | {budget:g} | {r['judgments']:.0f} | {cfg} | {r['few']:.4f} | "
                    f"{r['overall']:.4f} ({_se(r['overall'], args.studies):.4f}) |  "
                    f"<!-- {time.perf_counter() - t0:.0f} s -->",
                    flush=True,
                )


def _tost(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The mean-gap TOST on the per-pair means (t on n - 1 df), per study."""
    means = sums / np.maximum(counts, 1)
    n = means.shape[1]
    m = means.mean(axis=1)
    se = means.std(axis=1, ddof=1) / math.sqrt(n)
    q = float(stats.t.ppf(1 - ALPHA, n - 1))
    return (m - q * se > -MARGIN) & (m + q * se < MARGIN)


def looks_run(
    design: Design, gaps: np.ndarray, gen: str, pool: int, rng: np.random.Generator, n_sim: int
) -> dict[str, float]:
    """Simulate studies of a design with its registered looks, stopping at the first look where the
    equivalence verdict (mean TOST and the few-broken test of :mod:`analysis.design_looks`) passes."""
    s, n = gaps.shape
    looks = design.looks
    few = np.zeros((s, looks), dtype=bool)
    tost = np.zeros((s, looks), dtype=bool)

    def record(look: int, sums: np.ndarray, counts: np.ndarray, s2: np.ndarray) -> None:
        ratio = s2 / MARGIN**2
        tost[:, look] = _tost(sums, counts)
        ok = np.isfinite(ratio) & (ratio > 0)
        if look == looks - 1:  # the last look: the one-look test at (1 - INTERIM_SHARE) alpha
            one = Design(design.kind, design.first_stage, design.budget, design.second_stage, 1)
            crit = final_critical(one, n, np.where(ok, ratio, np.nan), ALPHA * (1 - INTERIM_SHARE), n_sim)
            plug = np.where(ok, s2, 1.0)
        else:
            plug, crit = np.ones(s), np.full(s, -np.inf)
            grid = np.array(
                [noise_ratio(float(v), 1.0) if o else -1.0 for v, o in zip(ratio, ok, strict=True)]
            )
            for r in np.unique(grid[ok]):
                at = grid == r
                p, c = look_rule(design, n, r, look + 1, SHARE, ALPHA, n_sim)
                plug[at], crit[at] = (p if p is not None else r) * MARGIN**2, c
        ev = -(MARGIN**2) * counts / (2 * plug[:, None])
        a = MARGIN * sums / plug[:, None]
        ev = np.where(counts > 0, ev + np.logaddexp(a, -a) - math.log(2.0), 0.0)
        few[:, look] = ok & (broken_statistic(ev, SHARE) < crit)

    judge = generator(gen, gaps, pool, rng)
    simulate_design(gaps, design, RESIDUAL_VAR, MARGIN, SHARE, rng, judge=judge, on_look=record)
    passed = few & tost
    points = np.array(look_points(design, n))
    stop = np.where(passed.any(axis=1), points[np.argmax(passed, axis=1)], points[-1])
    return {
        "overall": float(passed.any(axis=1).mean()),
        "few": float(few.any(axis=1).mean()),
        "early": float(passed[:, :-1].any(axis=1).mean()),
        "judgments": float(stop.mean()),
    }


def part_looks(args: argparse.Namespace) -> None:
    """1, 5 and 10 registered looks, stopping at the first PASS: false PASS at the boundary, power at 0."""
    limit = ALPHA + 2 * _se(ALPHA, args.studies)
    print(f"false PASS limit alpha + 2 MC SE = {limit:.4f} ({args.studies} studies per row)")
    print(
        "| design | generator | looks | configuration | few broken at some look | overall PASS at some look "
        "(SE) | passed before the last look | judgments at stop (mean) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    base = {
        "fixed 3": Design("fixed", 3, 3.0),
        "two-stage 2 + 8 x 10": Design("two_stage", 2, 3.0, 8),
        "sequential 1": Design("sequential", 1, 3.0),
    }
    for gen in args.generators:
        for name, plain in base.items():
            if args.designs and name.split()[0] not in args.designs:
                continue
            for looks in args.looks:
                design = Design(plain.kind, plain.first_stage, plain.budget, plain.second_stage, looks)
                for cfg in args.configs:
                    rng = np.random.default_rng(zlib.crc32(f"{name}|{gen}|{looks}|{cfg}".encode()))
                    gaps = configurations(rng, args.studies, args.pairs)[cfg]
                    t0 = time.perf_counter()
                    if looks == 1:
                        r = run(design, gaps, gen, args.pool, rng, args.calibration)
                        r |= {"early": 0.0}
                    else:
                        r = looks_run(design, gaps, gen, args.pool, rng, args.calibration)
                    print(
                        f"| {name} | {gen} | {looks} | {cfg} | {r['few']:.4f} | {r['overall']:.4f} "
                        f"({_se(r['overall'], args.studies):.4f}) | {r['early']:.4f} | "
                        f"{r['judgments']:.0f} |  "
                        f"<!-- {time.perf_counter() - t0:.0f} s -->",
                        flush=True,
                    )


def main() -> None:
    """Print the tables of the chosen parts."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=2000)
    ap.add_argument("--calibration", type=int, default=2000, help="simulated studies per critical value")
    ap.add_argument("--pairs", type=int, default=80)
    ap.add_argument("--pool", type=int, default=20)
    ap.add_argument("--part", default="designs", choices=["designs", "budget", "looks"])
    ap.add_argument("--generators", default="normal,ratings", type=lambda v: v.split(","))
    ap.add_argument(
        "--configs", default="zero,edge,edge051,broken20,normal,uniform,skewed", type=lambda v: v.split(",")
    )
    ap.add_argument("--budgets", default="4,6,8,10", type=lambda v: [float(x) for x in v.split(",") if x])
    ap.add_argument("--pair-counts", default="", type=lambda v: [int(x) for x in v.split(",") if x])
    ap.add_argument("--looks", default="1,5,10", type=lambda v: [int(x) for x in v.split(",")])
    ap.add_argument("--designs", default="", type=lambda v: [x for x in v.split(",") if x])
    ap.add_argument(
        "--specs", default="", type=lambda v: [x for x in v.split(",") if x],
        help="designs as kind/first_stage/budget[/second_stage], comma-separated (part budget)",
    )  # fmt: skip
    args = ap.parse_args()
    if args.part == "designs":
        part_designs(args)
    elif args.part == "budget":
        part_budget(args)
    else:
        part_looks(args)


if __name__ == "__main__":
    main()
