"""Benchmark: how often a rating judge that never reads the responses is declared "can replace" (Monte
Carlo, vectorised over studies as in ``bench_judge_baseline.py``).

Ratings (one quality dimension, scored like the report: negative RMSE over both responses): each pair
has a latent quality ~ N(4, 0.5) (``spread`` 0.5: most ratings are 4) or N(3.5, 1.0); 3 of a pool of
5 annotators rate both responses ``round(quality + N(0, noise))`` clipped to 1-5 (the responses of a
pair share the quality: both are good).

Judges: **always 4** (the most common rating) and **always the people's mean** (never reads a
response); power rows: **peer** (one more annotator's ratings) and **close** (the latent quality plus
N(0, 0.3), rounded). Content-blind judges built as the report does (:func:`constant_ratings`: the
people's mean and every rating they gave); the rule: the alt-test and beating every one of them by the
margin. Goal for a content-blind judge: "can replace" <= alpha + 2 MC SE.

Usage: ``nice python benchmarks/bench_judge_ratings.py [--studies N] [--seed S]`` (default 2,000).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.judge_baseline import SAME_RATING, BlindJudge, replace_verdict  # noqa: E402

ALPHA, CHUNK, POOL, PER_PAIR = 0.05, 100, 5, 3
WIDTHS = (6, 7, 7, 8, 13, 11, 10)


def simulate(
    studies: int, n: int, noise: float, spread: float, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Humans (S, pool, n, 2) with NaN where an annotator did not rate a pair; each pair's quality."""
    quality = rng.normal(3.5 if spread > 0.5 else 4, spread, (studies, n))
    ratings = np.clip(np.round(quality[:, None, :, None] + rng.normal(0, noise, (studies, POOL, n, 2))), 1, 5)
    rank = rng.random((studies, POOL, n)).argsort(1).argsort(1)
    rated = rank < PER_PAIR
    humans = np.where(rated[..., None], ratings, np.nan)
    peer = np.clip(np.round(quality[..., None] + rng.normal(0, noise, (studies, n, 2))), 1, 5)
    close = np.clip(np.round(quality[..., None] + rng.normal(0, 0.3, (studies, n, 2))), 1, 5)
    return {"humans": humans, "peer": peer, "close": close}


def constants(humans: np.ndarray) -> list[BlindJudge]:
    """:func:`analysis.judge_baseline.constant_ratings` per study (batched): the mean, and 1..5."""
    s, _, n, r = humans.shape
    mean = np.nanmean(humans.reshape(s, -1), axis=1)[:, None, None] * np.ones((s, n, r))
    ones = np.ones((s, n))
    return [
        BlindJudge(SAME_RATING, (ones,), (mean,)),
        *(BlindJudge(f"{SAME_RATING} {v}", (ones,), (np.full((s, n, r), float(v)),)) for v in range(1, 6)),
    ]


def judge(name: str, sim: dict[str, np.ndarray]) -> np.ndarray:
    h = sim["humans"]
    s, _, n, r = h.shape
    if name == "always 4":
        return np.full((s, n, r), 4.0)
    if name == "always the people's mean":
        return np.nanmean(h.reshape(s, -1), axis=1)[:, None, None] * np.ones((s, n, r))
    return sim[name]


def run(
    name: str, n: int, noise: float, spread: float, epsilon: float, studies: int, seed: int
) -> tuple[float, float, float]:
    """(share "can replace"; the same with the people's mean as the only constant, the rule before
    every rating was a baseline; share passing the alt-test alone)."""
    rng = np.random.default_rng(seed)
    can, mean_only, passes = [], [], []
    for lo in range(0, studies, CHUNK):
        sim = simulate(min(CHUNK, studies - lo), n, noise, spread, rng)
        blinds = constants(sim["humans"])
        f = judge(name, sim)
        v = replace_verdict(sim["humans"], f, blinds, scoring="neg_rmse", epsilon=epsilon, q=ALPHA)
        before = replace_verdict(sim["humans"], f, blinds[:1], scoring="neg_rmse", epsilon=epsilon, q=ALPHA)
        can.append(v.can_replace)
        mean_only.append(before.can_replace)
        passes.append(v.passes_alt_test)
    return tuple(float(np.concatenate(x).mean()) for x in (can, mean_only, passes))  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261206)
    args = parser.parse_args()
    limit = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / args.studies)
    print(f"{args.studies} studies per row; goal for a content-blind judge: can replace <= {limit:.4f}")
    head = ("judge", "pairs", "noise", "spread", "epsilon", "can replace", "mean only", "alt-test")
    print(f"{head[0]:<26}" + "".join(f"{h:>{w}}" for h, w in zip(head[1:], WIDTHS, strict=True)) + "  goal")
    for name in ("always 4", "always the people's mean", "peer", "close"):
        for n, noise, spread in ((60, 0.7, 0.5), (150, 0.7, 0.5), (150, 0.4, 0.5), (150, 0.7, 1.0)):
            for epsilon in (0.1, 0.2):
                can, before, passes = run(name, n, noise, spread, epsilon, args.studies, args.seed)
                goal = ("met" if can <= limit else "NOT MET") if name.startswith("always") else ""
                cells = (
                    f"{n}",
                    f"{noise}",
                    f"{spread}",
                    f"{epsilon}",
                    f"{can:.4f}",
                    f"{before:.4f}",
                    f"{passes:.4f}",
                )
                row = "".join(f"{c:>{w}}" for c, w in zip(cells, WIDTHS, strict=True))
                print(f"{name:<26}{row}  {goal}", flush=True)


if __name__ == "__main__":
    main()
