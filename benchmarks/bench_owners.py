"""Monte Carlo check of the owners' intervals and verdict (analysis.owners), vectorized over studies.

Each study: G owners, each with 1-20 pairs (uniform) or a fixed count; owner g prefers chosen with its
own probability p_g ~ Beta around the population share (ties with probability 0.1, counted half); a
third-party annotator takes the owner's direction with probability `a` (the rate at which owners and
others agree) and else one of the other two directions. Per row, over the studies:

- coverage of the 1 - 2*alpha endorsement interval (the population share: E[p_g], pair counts drawn
  independently of p_g) and of the annotator's accuracy and Cohen's kappa intervals (their population
  values);
- the verdict's false pass rate at a population share of exactly 1/2, and its false fail rate;
- the mean width of the endorsement, kappa (where it has one) and accuracy intervals.

Every rate must lie within alpha + 2 Monte Carlo SE (one side of the interval each).

Two grids: ``base`` (5-40 owners; shares 0.5 and 0.7) and ``skew`` (10-80 owners whose shares are
Beta with mean 0.8 or 0.9 and sd 0.1, 0.15 or 0.2: strongly left-skewed); ``all`` runs both.

The endorsement's and the accuracy's intervals are the report's (``analysis.owners.share_interval``:
the jackknife interval united with the distribution-free betting interval, ``betting_ratio``);
``--jackknife-only`` measures the jackknife interval alone (the rule before). Kappa's is the report's
(``analysis.owners.jackknife_kappa``).

``--two-groups``: at a population share of exactly 1/2, owners form two groups (a few who mostly reject
chosen, and with whom the annotator agrees less often, TWO_GROUP_ACCURACY): the verdict's false pass
rate with and without the betting union, and the misses of the accuracy's interval (with and without
it) and of kappa's. ``--alt-test``: the alternative annotator test's false rate at its null's edge
(ALT_GRID).

``python benchmarks/bench_owners.py [--studies 2000] [--alpha 0.05] [--grid all|base|skew]
[--jackknife-only] [--two-groups] [--alt-test]``
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from typing import Any

import numpy as np
from scipy import stats

from analysis.judges import EPSILON
from analysis.owners import MIN_OWNERS, alt_test_p, jackknife_kappa, jackknife_ratio, share_interval

TIE = 0.1


def _joint(mean_chosen: float, accuracy: float) -> np.ndarray:
    """Population joint of (annotator direction, owner direction) given the owners' mean share."""
    owner = np.array([mean_chosen * (1 - TIE), TIE, (1 - mean_chosen) * (1 - TIE)])
    rater = np.full((3, 3), (1 - accuracy) / 2)
    np.fill_diagonal(rater, accuracy)
    return rater * owner[None, :]  # rows: annotator, columns: owner


def _share(
    num: np.ndarray, den: np.ndarray, alpha: float, jackknife_only: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The report's ``share_interval``, or (`jackknife_only`) ``jackknife_ratio``'s interval alone."""
    return (jackknife_ratio if jackknife_only else share_interval)(num, den, alpha=alpha)


def run_row(
    rng: np.random.Generator,
    *,
    studies: int,
    owners: int,
    pairs: str,
    share: float,
    spread: float,
    accuracy: float,
    alpha: float,
    jackknife_only: bool = False,
) -> dict[str, float]:
    """One row: coverage and verdict rates over `studies` simulated studies (the endorsement's interval
    and the accuracy's are the report's, ``share_interval``, or with `jackknife_only` ``jackknife_ratio``'s
    alone)."""
    s, g, m = studies, owners, 20
    n = rng.integers(1, 21, (s, g)) if pairs == "1-20" else np.full((s, g), int(pairs))
    present = np.arange(m)[None, None, :] < n[..., None]  # (S, G, 20)
    if spread > 0:  # Beta with mean `share` and sd `spread`
        k = share * (1 - share) / spread**2 - 1
        p = rng.beta(share * k, (1 - share) * k, (s, g))
    else:
        p = np.full((s, g), share)
    u = rng.random((s, g, m))
    owner_dir = np.where(u < TIE, 1, np.where(rng.random((s, g, m)) < p[..., None], 0, 2))
    same = rng.random((s, g, m)) < accuracy
    other = (owner_dir + rng.integers(1, 3, (s, g, m))) % 3
    rater_dir = np.where(same, owner_dir, other)
    score = np.array([1.0, 0.5, 0.0])[owner_dir]
    num = np.where(present, score, 0.0).sum(-1)
    est, lo, hi, _ = _share(num, n, alpha, jackknife_only)
    truth = TIE / 2 + (1 - TIE) * share  # a tie counts half
    cover_low = float(np.mean(lo > truth))
    cover_high = float(np.mean(hi < truth))
    enough = g >= MIN_OWNERS
    passed = enough & (lo > 0.5)
    failed = enough & (hi < 0.5)
    hit = np.where(present, rater_dir == owner_dir, False).sum(-1)
    _, alo, ahi, _ = _share(hit, n, alpha, jackknife_only)
    confusion = np.zeros((s, g, 3, 3))
    flat = (rater_dir * 3 + owner_dir).reshape(s, g, m)
    for cell in range(9):
        confusion[..., cell // 3, cell % 3] = np.where(present, flat == cell, False).sum(-1)
    _, klo, khi, _ = jackknife_kappa(confusion, alpha=alpha)
    kappa_true = float(jackknife_kappa(_joint(share, accuracy)[None])[0])
    return {
        "endorse_low_miss": cover_low,
        "endorse_high_miss": cover_high,
        "pass_rate": float(np.mean(passed)),
        "fail_rate": float(np.mean(failed)),
        "accuracy_low_miss": float(np.mean(alo > accuracy)),
        "accuracy_high_miss": float(np.mean(ahi < accuracy)),
        "kappa_low_miss": float(np.nanmean(klo > kappa_true)),
        "kappa_high_miss": float(np.nanmean(khi < kappa_true)),
        "kappa_undefined": float(np.mean(np.isnan(klo))),
        "endorse_width": float(np.mean(hi - lo)),
        "accuracy_width": float(np.mean(ahi - alo)),
        "kappa_width": float(np.nanmean(khi - klo)) if np.isfinite(klo).any() else float("nan"),
    }


#: Two groups of owners at a population share of exactly 1/2: a fraction `frac` of owners prefer chosen
#: with probability `low`, the rest with `high` (no ties), so most samples of few owners miss the low group.
TWO_GROUPS = [
    (owners, pairs, frac, high)
    for owners in (10, 20, 40)
    for pairs in ("20", "1-20")
    for frac, high in ((0.1, 0.55), (0.2, 0.6), (0.3, 0.65))
]


#: The rater's accuracy with the owners of the low group and of the rest in the two-group designs
#: (owners who disagree with the panel at different rates).
TWO_GROUP_ACCURACY = (0.35, 0.75)


def _two_group_confusion(
    rng: np.random.Generator, num: np.ndarray, n: np.ndarray, is_low: np.ndarray
) -> np.ndarray:
    """Per-owner confusion counts (S, G, 3, 3) of a rater who takes the owner's direction (chosen or
    rejected) with the owner group's TWO_GROUP_ACCURACY and else one of the other two at random."""
    accuracy = np.where(is_low, *TWO_GROUP_ACCURACY)
    confusion = np.zeros(num.shape + (3, 3))
    for column, count in ((0, num.astype(np.int64)), (2, (n - num).astype(np.int64))):
        same = rng.binomial(count, accuracy)
        first = rng.binomial(count - same, 0.5)
        others = [row for row in range(3) if row != column]
        confusion[..., column, column] = same
        confusion[..., others[0], column] = first
        confusion[..., others[1], column] = count - same - first
    return confusion


def _two_group_truth(frac: float, low: float, high: float) -> tuple[float, float]:
    """The population accuracy and kappa of the two-group design (pair counts independent of the group)."""
    joint = np.zeros((3, 3))
    for weight, p, accuracy in ((frac, low, TWO_GROUP_ACCURACY[0]), (1 - frac, high, TWO_GROUP_ACCURACY[1])):
        for column, share in ((0, p), (2, 1 - p)):
            joint[:, column] += weight * share * (1 - accuracy) / 2
            joint[column, column] += weight * share * (accuracy - (1 - accuracy) / 2)
    return float(np.trace(joint)), float(jackknife_kappa(joint[None])[0])


def two_group_null(
    rng: np.random.Generator,
    *,
    studies: int,
    owners: int,
    pairs: str,
    frac: float,
    high: float,
    alpha: float,
    rater_rng: np.random.Generator | None = None,
) -> dict[str, float]:
    """At a share of exactly 1/2 with two groups of owners: the false pass rates of the report's verdict
    and of the jackknife interval's alone; the low group's owner probability; and (with `rater_rng`, a
    generator of its own so the endorsement's draws stay the same) the misses of the accuracy's interval
    (the report's and the jackknife's alone) and of kappa's, for a rater whose accuracy
    differs by group (TWO_GROUP_ACCURACY)."""
    low = (0.5 - (1 - frac) * high) / frac
    n = rng.integers(1, 21, (studies, owners)) if pairs == "1-20" else np.full((studies, owners), int(pairs))
    is_low = rng.random((studies, owners)) < frac
    p = np.where(is_low, low, high)
    num = rng.binomial(n, p).astype(float)
    report_low = share_interval(num, n, alpha=alpha)[1]
    jackknife_low = jackknife_ratio(num, n, alpha=alpha)[1]
    out = {
        "report": float(np.mean(report_low > 0.5)),
        "jackknife": float(np.mean(jackknife_low > 0.5)),
        "low": low,
    }
    if rater_rng is None:
        return out
    confusion = _two_group_confusion(rater_rng, num, n, is_low)
    accuracy, kappa = _two_group_truth(frac, low, high)
    hit = np.trace(confusion, axis1=-2, axis2=-1)
    for name, jackknife_only in (("accuracy", False), ("accuracy_jackknife", True)):
        _, lo, hi, _ = _share(hit, n, alpha, jackknife_only)
        out[f"{name}_low_miss"], out[f"{name}_high_miss"] = (
            float(np.mean(lo > accuracy)),
            float(np.mean(hi < accuracy)),
        )
    _, klo, khi, _ = jackknife_kappa(confusion, alpha=alpha)
    out["kappa_low_miss"], out["kappa_high_miss"] = (
        float(np.nanmean(klo > kappa)),
        float(np.nanmean(khi < kappa)),
    )
    out["kappa_width"] = float(np.nanmean(khi - klo))
    return out


def _print_two_groups(
    rng: np.random.Generator, studies: int, chunk: int, alpha: float, limit: float, seed: int
) -> None:
    print(
        "owners pairs frac_low p_low p_high | false pass: report jackknife-only | accuracy miss lo/hi:"
        " report jackknife-only | kappa miss lo/hi | kappa width"
    )
    rater_rng = np.random.default_rng([seed, 1])
    over = [0, 0, 0, 0, 0]
    for owners, pairs, frac, high in TWO_GROUPS:
        sizes = [min(chunk, studies - done) for done in range(0, studies, chunk)]
        parts = [
            two_group_null(
                rng,
                studies=k,
                owners=owners,
                pairs=pairs,
                frac=frac,
                high=high,
                alpha=alpha,
                rater_rng=rater_rng,
            )
            for k in sizes
        ]
        r = {key: float(np.average([part[key] for part in parts], weights=sizes)) for key in parts[0]}
        acc = (r["accuracy_low_miss"], r["accuracy_high_miss"])
        jackknife = (r["accuracy_jackknife_low_miss"], r["accuracy_jackknife_high_miss"])
        kappa = (r["kappa_low_miss"], r["kappa_high_miss"])
        for i, rate in enumerate((r["report"], r["jackknife"], max(acc), max(jackknife), max(kappa))):
            over[i] += rate > limit
        print(
            f"{owners:>6} {pairs:>5} {frac:>8.2f} {r['low']:.2f} {high:.2f} | {r['report']:.4f} "
            f"{r['jackknife']:.4f} | {acc[0]:.4f} {acc[1]:.4f} {jackknife[0]:.4f} {jackknife[1]:.4f} | "
            f"{kappa[0]:.4f} {kappa[1]:.4f} | {r['kappa_width']:.3f}",
            flush=True,
        )
    print(
        f"rows over the limit {limit:.4f} of {len(TWO_GROUPS)}: verdict {over[0]}, jackknife-only {over[1]}, "
        f"accuracy {over[2]}, accuracy jackknife-only {over[3]}, kappa {over[4]}"
    )


#: The alternative annotator test at its null's edge, mean d = epsilon (d: annotator agrees with the owner
#: minus model agrees): (owners, pairs, fraction of owners far from the rest, annotator and model
#: agreement with them: the model far better, or far worse); the other owners' gap makes the
#: population's mean d exactly epsilon.
ALT_GRID = [
    (owners, pairs, frac, *far)
    for far in ((0.3, 0.8), (0.8, 0.3))
    for owners in (10, 20, 40)
    for pairs in ("20", "1-20")
    for frac in ((0.0, 0.1, 0.2, 0.3) if far[0] < far[1] else (0.1, 0.2, 0.3))
]


def alt_test_null(
    rng: np.random.Generator,
    *,
    studies: int,
    owners: int,
    pairs: str,
    frac: float,
    low: tuple[float, float],
    epsilon: float,
    shift: float = 0.0,
) -> tuple[float, float]:
    """The share of studies in which one annotator's test (p < alpha = 0.05, before Benjamini-Yekutieli)
    says the model beats the annotator, with the report's ``alt_test_p`` and with the t test alone, when
    the population's mean d is epsilon - `shift`: owners in the far group with agreement `low`
    (annotator, model), the rest with annotator 0.75 and the model at the gap that makes that mean."""
    n = rng.integers(1, 21, (studies, owners)) if pairs == "1-20" else np.full((studies, owners), int(pairs))
    gap = (epsilon - shift - frac * (low[0] - low[1])) / (1 - frac)
    far = rng.random((studies, owners)) < frac
    annotator = np.where(far, low[0], 0.75)
    model = np.where(far, low[1], 0.75 - gap)
    d = (rng.binomial(n, annotator) - rng.binomial(n, model)).astype(float)
    est, _, _, se = jackknife_ratio(d, n)
    t_only = stats.t.cdf((est - epsilon) / se, owners - 1)
    return float(np.mean(alt_test_p(d, n, epsilon) < 0.05)), float(np.mean(t_only < 0.05))


def _print_alt_test(rng: np.random.Generator, studies: int, chunk: int, limit: float) -> None:
    epsilon = EPSILON["crowd"]
    print(
        f"alternative annotator test, epsilon {epsilon}: one annotator's 'beaten' rate, report / t test alone"
    )
    print(
        "owners pairs frac_far annotator model (far owners) | false rate at mean d = epsilon | power at -0.1"
    )
    over = [0, 0]
    sizes = [min(chunk, studies - done) for done in range(0, studies, chunk)]
    for owners, pairs, frac, low_a, low_m in ALT_GRID:
        row = partial(
            alt_test_null, rng, owners=owners, pairs=pairs, frac=frac, low=(low_a, low_m), epsilon=epsilon
        )
        parts = [row(studies=k) for k in sizes]
        rate = [float(np.average([part[i] for part in parts], weights=sizes)) for i in (0, 1)]
        over = [count + (value > limit) for count, value in zip(over, rate, strict=True)]
        power = ""
        if frac == 0:
            parts = [row(studies=k, shift=0.2) for k in sizes]
            power = " / ".join(
                f"{np.average([part[i] for part in parts], weights=sizes):.4f}" for i in (0, 1)
            )
        print(
            f"{owners:>6} {pairs:>5} {frac:>8.2f} {low_a:.2f} {low_m:.2f} | "
            f"{rate[0]:.4f} / {rate[1]:.4f} | {power}",
            flush=True,
        )
    print(f"rows over the limit {limit:.4f} of {len(ALT_GRID)}: report {over[0]}, t test alone {over[1]}")


BASE_GRID = [
    (owners, pairs, share, spread, accuracy)
    for owners in (5, 10, 20, 40)
    for pairs in ("1-20", "1", "20")
    for share, spread in ((0.5, 0.0), (0.5, 0.15), (0.7, 0.15))
    for accuracy in (0.5, 0.8)
]
#: Owners whose shares are strongly left-skewed (Beta with mean 0.8-0.9, sd 0.1-0.2), 10-80 owners.
SKEW_GRID = [
    (owners, pairs, share, spread, accuracy)
    for share in (0.8, 0.9)
    for spread in (0.1, 0.15, 0.2)
    for owners in (10, 20, 40, 80)
    for pairs in ("1-20", "1", "20")
    for accuracy in (0.5, 0.8)
]
GRIDS = {"base": BASE_GRID, "skew": SKEW_GRID, "all": BASE_GRID + SKEW_GRID}


def _row_spec(text: str) -> tuple[int, str, float, float, float]:
    """OWNERS:PAIRS:SHARE:SPREAD:ACC, e.g. 40:1-20:0.7:0.15:0.5."""
    owners, pairs, share, spread, accuracy = text.split(":")
    return int(owners), pairs, float(share), float(spread), float(accuracy)


def _chunked_row(rng: np.random.Generator, studies: int, chunk: int, **row: Any) -> dict[str, float]:
    """run_row over `studies` studies in chunks of at most `chunk` (memory), rates averaged by size."""
    sizes = [min(chunk, studies - done) for done in range(0, studies, chunk)]
    parts = [run_row(rng, studies=size, **row) for size in sizes]
    return {key: float(np.average([part[key] for part in parts], weights=sizes)) for key in parts[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--chunk", type=int, default=10_000, help="studies simulated at once (memory)")
    parser.add_argument("--grid", choices=sorted(GRIDS), default="all", help="the rows run without --rows")
    parser.add_argument(
        "--two-groups",
        action="store_true",
        help="only the false pass rates at a share of 1/2 with two groups of owners (TWO_GROUPS)",
    )
    parser.add_argument(
        "--alt-test", action="store_true", help="only the alternative annotator test's false rate (ALT_GRID)"
    )
    parser.add_argument(
        "--jackknife-only",
        action="store_true",
        help="the shares' intervals without the betting union (jackknife_ratio alone: the old rule)",
    )
    parser.add_argument(
        "--rows", type=_row_spec, nargs="*", help="only these rows, OWNERS:PAIRS:SHARE:SPREAD:ACC (else all)"
    )
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    limit = args.alpha + 2 * np.sqrt(args.alpha * (1 - args.alpha) / args.studies)
    print(f"{args.studies} studies per row; each miss rate must be <= alpha + 2 MC SE = {limit:.4f}")
    header = (
        "owners pairs  share spread acc | endorse miss lo/hi | pass  fail | accuracy miss lo/hi |"
        " kappa miss lo/hi | ok kappa-ok | width endorse kappa accuracy"
    )
    if args.alt_test:
        _print_alt_test(rng, args.studies, args.chunk, limit)
        return
    if args.two_groups:
        _print_two_groups(rng, args.studies, args.chunk, args.alpha, limit, args.seed)
        return
    print(header)
    start = time.perf_counter()
    worst = worst_kappa = 0.0
    over = near = 0
    rows = args.rows or GRIDS[args.grid]
    for owners, pairs, share, spread, accuracy in rows:
        r = _chunked_row(
            rng,
            args.studies,
            args.chunk,
            owners=owners,
            pairs=pairs,
            share=share,
            spread=spread,
            accuracy=accuracy,
            alpha=args.alpha,
            jackknife_only=args.jackknife_only,
        )
        rates = [r["endorse_low_miss"], r["endorse_high_miss"], r["fail_rate"]]
        rates += [r["accuracy_low_miss"], r["accuracy_high_miss"]]
        if share == 0.5:
            rates.append(r["pass_rate"])
        kappa = max(r["kappa_low_miss"], r["kappa_high_miss"])
        worst, worst_kappa = max(worst, *rates), max(worst_kappa, kappa)
        over += max(*rates, kappa) > limit
        near += max(*rates, kappa) > limit - 0.005
        print(
            f"{owners:>6} {pairs:>5} {share:>6.2f} {spread:>6.2f} {accuracy:>3.1f} | "
            f"{r['endorse_low_miss']:.4f} {r['endorse_high_miss']:.4f} | "
            f"{r['pass_rate']:.4f} {r['fail_rate']:.4f} | "
            f"{r['accuracy_low_miss']:.4f} {r['accuracy_high_miss']:.4f} | "
            f"{r['kappa_low_miss']:.4f} {r['kappa_high_miss']:.4f} | "
            f"{'yes' if max(rates) <= limit else 'NO'} {'yes' if kappa <= limit else 'NO'} | "
            f"{r['endorse_width']:.3f} {r['kappa_width']:.3f} {r['accuracy_width']:.3f}",
            flush=True,
        )
    print(
        f"worst rate of the shares and the verdict {worst:.4f}, of kappa {worst_kappa:.4f} "
        f"(limit {limit:.4f}); rows over the limit {over} of {len(rows)}, within 0.005 of it or over "
        f"{near}; {time.perf_counter() - start:.1f} s"
    )


if __name__ == "__main__":
    main()
