"""False PASS of a sequential design whose judgments are given in batches, judged by its critical value.

Run: nice python benchmarks/bench_sequential_batches.py [--studies 2000] [--pairs 33] [--ratio 1.5]
     [--batches 1,5,20]

A registered sequential design's "few broken pairs" critical value (:func:`analysis.design.critical_values`)
is simulated for one judgment at a time: each pick sees every judgment before it. A queue planned ahead
(a crowd worker's items, or ``assign --needs-more`` giving many pairs at once) picks the B pairs with the
largest evidence from the same judgments instead. This benchmark draws `--studies` studies at the least
favourable configuration (ceil(10%) of the pairs at the margin, the rest at 0; normal noise of variance
``ratio x margin^2``), spends the budget in batches of B distinct pairs, and judges each study as the
report does (the statistic with the noise variance estimated from the same judgments, against the
critical value at its own noise estimate, 2,000 simulated studies each). A valid procedure passes at
most alpha + 2 MC SE (0.0597 at 2,000 studies).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from analysis.design import Design, broken_statistic, critical_values, noise_ratio


def batched(n: int, first: int, budget: float, ratio: float, batch: int, studies: int, seed: int):
    """Statistic and noise estimate of `studies` studies whose adaptive phase goes in batches."""
    rng = np.random.default_rng(seed)
    gaps = np.zeros((studies, n))
    gaps[:, : math.ceil(0.1 * n - 1e-9)] = 1.0
    sd = math.sqrt(ratio)
    sums, squares, counts = np.zeros((studies, n)), np.zeros((studies, n)), np.zeros((studies, n))
    rows = np.arange(studies)

    def add(r: np.ndarray, c: np.ndarray) -> None:
        y = gaps[r, c] + rng.normal(0.0, sd, r.size)
        np.add.at(sums, (r, c), y)
        np.add.at(squares, (r, c), y * y)
        np.add.at(counts, (r, c), 1)

    def noise() -> np.ndarray:
        df = np.maximum(counts - 1, 0).sum(1)
        return (squares - sums**2 / np.maximum(counts, 1)).sum(1) / df

    def evidence() -> np.ndarray:
        v = noise()[:, None]
        a = sums / v
        return -counts / (2 * v) + np.logaddexp(a, -a) - math.log(2.0)

    for _ in range(first):
        for pair in range(n):
            add(rows, np.full(studies, pair))
    spent, total = first * n, int(round(budget * n))
    while spent < total:
        b = min(batch, total - spent)
        top = np.argsort(-evidence(), axis=1, kind="stable")[:, :b]
        add(np.repeat(rows, b), top.ravel())
        spent += b
    return broken_statistic(evidence(), 0.1), noise()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--pairs", type=int, default=33)
    parser.add_argument("--first", type=int, default=3)
    parser.add_argument("--budget", type=float, default=6.0)
    parser.add_argument("--ratio", type=float, default=1.5, help="noise variance / margin^2")
    parser.add_argument("--batches", default="1,5,20")
    args = parser.parse_args()
    design = Design("sequential", args.first, args.budget)
    limit = 0.05 + 2 * math.sqrt(0.05 * 0.95 / args.studies)
    print(
        f"sequential {args.first} first, budget {args.budget:g}, {args.pairs} pairs, noise/margin^2 "
        f"{args.ratio:g}, {args.studies} studies per row; false-PASS limit {limit:.4f}"
    )
    print("batch  false PASS  MC SE   seconds")
    for batch in (int(b) for b in args.batches.split(",")):
        start = time.perf_counter()
        t, v = batched(args.pairs, args.first, args.budget, args.ratio, batch, args.studies, seed=batch)
        crit = np.array([critical_values(design, args.pairs, noise_ratio(x, 1.0), 0.1, 0.05)[0] for x in v])
        rate = float(np.mean(t < crit))
        se = math.sqrt(rate * (1 - rate) / args.studies)
        print(f"{batch:5d}  {rate:10.4f}  {se:.4f}  {time.perf_counter() - start:7.0f}", flush=True)


if __name__ == "__main__":
    main()
