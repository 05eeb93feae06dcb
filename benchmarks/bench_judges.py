"""Benchmark: error rates of the alternative annotator test's "can replace" verdict (Monte Carlo).

Studies are simulated whole (every annotator's ratings of every pair, or of the pairs an overlap
gives them) and :func:`analysis.judges.alt_test` runs on all of them at once (vectorised over
studies). The verdict is the report's: "can replace" when at least 3 annotators have 30 pairs and the
winning rate (Benjamini-Yekutieli at q = 0.05) is at least 0.5.

Model (one quality item on 1-5, both responses of a pair; or the preference direction):
- ratings: each response has a latent quality ``t ~ N(3.5, 0.8)``; an annotator rates
  ``round(t + e)``, ``e ~ N(0, 0.8)``, clipped to 1..5; a judge rates ``round(t + s z)``, ``z ~ N(0, 1)``;
- preference: each pair has a latent gap ``g ~ N(0.6, 1)``; an annotator's direction is that of
  ``g + e`` (a tie when ``|g + e| < 0.3``), ``e ~ N(0, 1)``; the consensus judge gives the direction
  of ``g``; the worse judge answers like one more annotator but reverses a share ``s`` of its answers
  (noise alone cannot make it worse than the annotators by 0.2: a random direction still ties often).

Rows:
- **null** (a judge worse than the annotators by epsilon, the least favourable case of "worse by
  more than epsilon"): ``s`` is set by bisection on a separate calibration sample (common random
  numbers, 2,000 studies, 15 halvings) so that ``rho_annotator - rho_judge = epsilon`` in the
  population; the share of studies declared "can replace" must be <= alpha + 2 SE.
- **power** (a judge equal to the human consensus: ``s = 0``, it rates the latent quality): the share
  declared "can replace" must be >= 0.8 at 5 annotators x 100 pairs.
- **peer** (shown, no bound): a judge exactly as good as one more annotator (``rho_h - rho_f = 0``).

Usage: ``nice python benchmarks/bench_judges.py [--studies N] [--seed S]`` (default 2,000 studies).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.judges import MIN_ANNOTATORS, MIN_ITEMS, alt_test  # noqa: E402

ALPHA = 0.05
CHUNK = 500
#: A judge exactly as good as one more annotator (the annotators' own noise; for the preference an
#: annotator's answer with a vanishing share reversed).
PEER = {"ratings": 0.8, "preference": 1e-9}


@dataclass(frozen=True)
class Design:
    kind: str  # "ratings" | "preference"
    annotators: int
    pairs: int
    overlap: int  # annotators per pair (= annotators: everyone rates every pair)
    epsilon: float


def _simulate(
    design: Design, studies: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Humans (S, m, n, r), the judge's latent truth (S, n, r) and its random numbers z (2, S, n, r):
    a standard normal and a uniform."""
    m, n = design.annotators, design.pairs
    if design.kind == "ratings":
        truth = rng.normal(3.5, 0.8, size=(studies, n, 2))
        humans = np.clip(np.round(truth[:, None] + rng.normal(0, 0.8, size=(studies, m, n, 2))), 1, 5)
    else:
        truth = rng.normal(0.6, 1.0, size=(studies, n, 1))
        humans = _direction(truth[:, None] + rng.normal(0, 1.0, size=(studies, m, n, 1)))
    if design.overlap < m:  # each pair goes to `overlap` annotators, balanced round robin
        start = rng.integers(0, m, size=(studies, 1))
        offset = (start + np.arange(n)[None, :] * design.overlap) % m  # (S, n)
        chosen = (offset[:, None, :] + np.arange(design.overlap)[None, :, None]) % m  # (S, k, n)
        rated = np.zeros((studies, m, n), dtype=bool)
        np.put_along_axis(rated, chosen, True, axis=1)
        humans = np.where(rated[..., None], humans, np.nan)
    return humans, truth, np.stack([rng.normal(size=truth.shape), rng.random(truth.shape)])


def _direction(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < 0.3, 0.0, np.sign(x))


def _judge(design: Design, truth: np.ndarray, z: np.ndarray, s: float) -> np.ndarray:
    if design.kind == "ratings":
        return np.clip(np.round(truth + s * z[0]), 1, 5)
    if s == 0:
        return _direction(truth)
    return _direction(truth + z[0]) * np.where(z[1] < s, -1.0, 1.0)


def _run(design: Design, humans: np.ndarray, judge: np.ndarray) -> tuple[np.ndarray, float]:
    """Per study: declared "can replace"; and the mean of rho_annotator - rho_judge over annotators."""
    scoring = "neg_rmse" if design.kind == "ratings" else "accuracy"
    verdicts, gaps = [], []
    for lo in range(0, len(humans), CHUNK):
        result = alt_test(
            humans[lo : lo + CHUNK],
            judge[lo : lo + CHUNK],
            epsilon=design.epsilon,
            q=ALPHA,
            scoring=scoring,  # type: ignore[arg-type]
            min_items=MIN_ITEMS,
        )
        verdicts.append((result.n_tested >= MIN_ANNOTATORS) & (result.winning_rate >= 0.5))
        weights = result.n_items.astype(float)
        gaps.append(((result.rho_annotator - result.rho_judge) * weights).sum() / weights.sum())
    return np.concatenate(verdicts), float(np.mean(gaps))


def calibrate(design: Design, rng: np.random.Generator, studies: int = 2000) -> float:
    """The judge's s at which rho_annotator - rho_judge = epsilon (bisection, common random numbers)."""
    humans, truth, z = _simulate(design, studies, rng)
    lo, hi = (0.0, 6.0) if design.kind == "ratings" else (1e-9, 1.0)
    for _ in range(15):
        mid = (lo + hi) / 2
        _, gap = _run(design, humans, _judge(design, truth, z, mid))
        lo, hi = (mid, hi) if gap < design.epsilon else (lo, mid)
    return (lo + hi) / 2


def row(design: Design, case: str, studies: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    s = calibrate(design, rng) if case == "null" else 0.0 if case == "power" else PEER[design.kind]
    humans, truth, z = _simulate(design, studies, rng)
    verdicts, gap = _run(design, humans, _judge(design, truth, z, s))
    rate = float(verdicts.mean())
    se = math.sqrt(ALPHA * (1 - ALPHA) / studies)
    ok = rate <= ALPHA + 2 * se if case == "null" else rate >= 0.8 if case == "power" else True
    return {"case": case, "design": design, "s": s, "gap": gap, "rate": rate, "se": se, "ok": ok}


DESIGNS = [
    ("null", Design("ratings", 5, 100, 5, 0.1)),
    ("null", Design("ratings", 5, 100, 5, 0.2)),
    ("null", Design("ratings", 3, 50, 3, 0.2)),
    ("null", Design("ratings", 10, 100, 10, 0.15)),
    ("null", Design("ratings", 10, 100, 3, 0.1)),
    ("null", Design("preference", 5, 100, 5, 0.1)),
    ("null", Design("preference", 5, 100, 5, 0.2)),
    ("power", Design("ratings", 5, 100, 5, 0.1)),
    ("power", Design("ratings", 5, 100, 5, 0.2)),
    ("power", Design("preference", 5, 100, 5, 0.1)),
    ("power", Design("preference", 5, 100, 5, 0.2)),
    ("power", Design("ratings", 3, 50, 3, 0.1)),
    ("power", Design("ratings", 10, 100, 3, 0.1)),
    ("peer", Design("ratings", 5, 100, 5, 0.1)),
    ("peer", Design("ratings", 5, 100, 5, 0.2)),
    ("peer", Design("preference", 5, 100, 5, 0.1)),
    ("peer", Design("preference", 5, 100, 5, 0.2)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20251201)
    args = parser.parse_args()
    print(
        f"{args.studies} studies per row; alpha = q = {ALPHA}; verdict needs {MIN_ANNOTATORS} annotators x "
        f"{MIN_ITEMS} pairs and winning rate >= 0.5"
    )
    print(
        "| case | item | annotators x pairs (overlap) | epsilon | judge noise s | rho_h - rho_f | "
        "'can replace' | bound | ok |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    failed = 0
    for k, (case, design) in enumerate(DESIGNS):
        r = row(design, case, args.studies, args.seed + k)
        bound = {"null": f"<= {ALPHA + 2 * float(r['se']):.4f}", "power": ">= 0.8"}.get(case, "(shown)")
        failed += not r["ok"]
        print(
            f"| {case} | {design.kind} | {design.annotators} x {design.pairs} ({design.overlap}) | "
            f"{design.epsilon:g} | {float(r['s']):.3f} | {float(r['gap']):+.3f} | {float(r['rate']):.4f} | "
            f"{bound} | {'yes' if r['ok'] else 'NO'} |",
            flush=True,
        )
    print(f"{time.perf_counter() - start:.0f} s; {failed} row(s) outside their bound")


if __name__ == "__main__":
    main()
