"""Benchmark: how often a judge that never reads the responses is declared "can replace" (Monte Carlo).

Studies are simulated whole and :func:`analysis.judge_baseline.replace_verdict` (the report's rule:
the alt-test and the content-blind baseline) runs on all of them at once (vectorised over studies).

Model (the preference, scored by its direction): each pair has P(chosen) ~ Beta(3, 1); each annotator
rates every pair, a tie with probability 0.1, else chosen with probability P(chosen). The judge is
shown each pair once in a random order (chosen first with probability 1/2); each pair's chosen
response is the longer one with probability 1/2, independent of everything else (length unrelated to
quality).

Judges:
- **first position**: picks the response it was shown first;
- **longer**: picks the longer response;
- **peer** (power): answers like one more annotator;
- **consensus** (power): picks chosen when P(chosen) > 1/2.

What the tool knows (the baselines it can build): the judge's orders recorded or not, the responses'
lengths in the label frame or not. A content-blind judge the tool has no record for (order not
recorded, lengths not given) is the hard case: its baseline is then a fair coin (scored by the
expectation of its alignment wins), and the judge must not beat it by chance.

Rows: ``can replace`` (passes the alt-test and beats every content-blind judge by the margin 0.05) next
to ``passes`` (the alt-test alone, the verdict before the baseline). Goal for a content-blind judge:
``can replace`` <= alpha + 2 MC SE. Power rows are shown with no goal.

Usage: ``nice python benchmarks/bench_judge_baseline.py [--studies N] [--seed S]`` (default 2,000).
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

from analysis.judge_baseline import (  # noqa: E402
    BASELINE_MARGIN,
    FIRST_POSITION,
    LONGER,
    BlindJudge,
    preference_blind,
    replace_verdict,
)

ALPHA = 0.05
CHUNK = 500


@dataclass(frozen=True)
class Case:
    judge: str  # first position | longer | peer | consensus
    orders_recorded: bool
    lengths_known: bool


CASES = [
    Case("first position", False, False),
    Case("first position", False, True),
    Case("first position", True, True),
    Case("longer", False, False),
    Case("longer", True, True),
    Case("peer", True, True),
    Case("consensus", True, True),
]
DESIGNS = [(3, 60), (5, 100)]
EPSILONS = [0.1, 0.15, 0.2]


def simulate(studies: int, m: int, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Humans (S, m, n, 1) in {-1, 0, 1}; per pair P(chosen), the judge's order and the longer side."""
    p = rng.beta(3, 1, size=(studies, n))
    tie = rng.random((studies, m, n)) < 0.1
    chosen = rng.random((studies, m, n)) < p[:, None, :]
    humans = np.where(tie, 0.0, np.where(chosen, 1.0, -1.0))[..., None]
    first = np.where(rng.random((studies, n)) < 0.5, 1.0, -1.0)  # +1: chosen shown first
    longer = np.where(rng.random((studies, n)) < 0.5, 1.0, -1.0)  # +1: chosen is longer
    peer_tie = rng.random((studies, n)) < 0.1
    peer = np.where(peer_tie, 0.0, np.where(rng.random((studies, n)) < p, 1.0, -1.0))
    return {"humans": humans, "p": p, "first": first, "longer": longer, "peer": peer}


def judge_picks(case: Case, sim: dict[str, np.ndarray]) -> np.ndarray:
    if case.judge == "first position":
        return sim["first"]
    if case.judge == "longer":
        return sim["longer"]
    if case.judge == "peer":
        return sim["peer"]
    return np.where(sim["p"] > 0.5, 1.0, -1.0)


def blinds(case: Case, sim: dict[str, np.ndarray]) -> list[BlindJudge]:
    """The content-blind judges the tool builds from what it knows (as the report does)."""
    orders = sim["first"] if case.orders_recorded else np.full(sim["first"].shape, np.nan)
    out = [preference_blind(FIRST_POSITION, orders)]
    if case.lengths_known:
        out.append(preference_blind(LONGER, sim["longer"]))
    return out


def run(
    case: Case, m: int, n: int, epsilon: float, studies: int, seed: int, margin: float
) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    can, passes, gaps = [], [], []
    for lo in range(0, studies, CHUNK):
        sim = simulate(min(CHUNK, studies - lo), m, n, rng)
        f = judge_picks(case, sim)[..., None]
        v = replace_verdict(
            sim["humans"], f, blinds(case, sim), scoring="accuracy", epsilon=epsilon, q=ALPHA, margin=margin
        )
        can.append(v.can_replace)
        passes.append(v.passes_alt_test)
        gaps.append(np.nanmean(v.alt.rho_annotator - v.alt.rho_judge))
    rate = float(np.concatenate(can).mean())
    return {
        "can": rate,
        "passes": float(np.concatenate(passes).mean()),
        "gap": float(np.mean(gaps)),
        "se": math.sqrt(ALPHA * (1 - ALPHA) / studies),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--margin", type=float, default=BASELINE_MARGIN)
    args = parser.parse_args()
    print(f"{args.studies} studies per row; alpha = q = {ALPHA}; margin {args.margin:g}")
    print(
        "| judge | orders recorded | lengths known | annotators x pairs | epsilon | rho_h - rho_f | "
        "passes alt-test | can replace | bound | ok |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    failed, k = 0, 0
    for case in CASES:
        blind = case.judge in ("first position", "longer")
        for m, n in DESIGNS:
            for epsilon in EPSILONS:
                k += 1
                r = run(case, m, n, epsilon, args.studies, args.seed + k, args.margin)
                bound = ALPHA + 2 * r["se"]
                ok = r["can"] <= bound if blind else True
                failed += not ok
                print(
                    f"| {case.judge} | {'yes' if case.orders_recorded else 'no'} | "
                    f"{'yes' if case.lengths_known else 'no'} | {m} x {n} | {epsilon:g} | {r['gap']:+.3f} | "
                    f"{r['passes']:.4f} | {r['can']:.4f} | "
                    f"{f'<= {bound:.4f}' if blind else '(power)'} | {'yes' if ok else 'NO'} |",
                    flush=True,
                )
    print(f"{time.perf_counter() - start:.0f} s; {failed} row(s) outside their bound")


if __name__ == "__main__":
    main()
