"""Benchmark science: accuracy-CI coverage by simulation, and `models import` / `export dataset` at scale.

Run: python benchmarks/bench_science.py [--pairs 20000] [--annotators 3] [--reps 2000] [--skip-scale]

1. Coverage: for each (pairs n, true accuracy p), `reps` simulated models answer n pairs right with
   probability p; `analysis.science.accuracy_table` (Wilson, nominal 95%) gives each one's interval
   and the share that covers p is printed (goal: >= 93% everywhere). The same for the paired-bootstrap
   CI of a model-minus-model accuracy difference (`paired_comparisons`, 500 reps per cell).
2. Scale: a complete study of `--pairs` pairs (bulk-inserted as in bench_analyze.py), auto-resolved
   with `annotator adjudicate --auto`; then `annotator models import` of a JSONL and of a Parquet file
   with one prediction per pair, and `annotator export dataset`, each timed as a subprocess with its
   peak RSS (/usr/bin/time -v).
"""

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.science import accuracy_table, paired_comparisons

STUDY = "bench"  # the study bench_analyze.build creates


def coverage(reps: int, seed: int = 0) -> pd.DataFrame:
    """Coverage of the 95% accuracy interval per (n, p)."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in (30, 100, 500, 2000):
        for p in (0.6, 0.8, 0.9, 0.97):
            correct = (rng.random((reps, n)) < p).astype(float)
            outcome = pd.DataFrame(
                {
                    "source": np.repeat([f"m{r}" for r in range(reps)], n),
                    "kind": "model",
                    "pair_id": np.tile([f"p{i}" for i in range(n)], reps),
                    "category": "",
                    "correct": correct.ravel(),
                }
            )
            table = accuracy_table(outcome, by_category=False)
            covered = ((table["ci_low"] <= p) & (p <= table["ci_high"])).mean()
            rows.append({"n": n, "p": p, "coverage": float(covered), "reps": reps})
    return pd.DataFrame(rows)


def difference_coverage(reps: int, seed: int = 1) -> pd.DataFrame:
    """Coverage of the paired-bootstrap 95% CI of accuracy(a) - accuracy(b) (correlated models)."""
    rng = np.random.default_rng(seed)
    rows = []
    for n, pa, pb in ((100, 0.85, 0.75), (500, 0.8, 0.8), (2000, 0.9, 0.85)):
        hits = 0
        for _ in range(reps):
            shared = rng.random(n)  # a pair's difficulty, shared by both models
            a = (0.5 * shared + 0.5 * rng.random(n) < pa).astype(float)
            b = (0.5 * shared + 0.5 * rng.random(n) < pb).astype(float)
            truth = _true_rate(pa) - _true_rate(pb)
            ids = [f"p{i}" for i in range(n)]
            outcome = pd.concat(
                [
                    pd.DataFrame(
                        {"source": "a", "kind": "model", "pair_id": ids, "category": "", "correct": a}
                    ),
                    pd.DataFrame(
                        {"source": "b", "kind": "model", "pair_id": ids, "category": "", "correct": b}
                    ),
                ]
            )
            row = paired_comparisons(outcome, n_boot=500, seed=int(rng.integers(1 << 30))).iloc[0]
            hits += row["ci_low"] <= truth <= row["ci_high"]
        rows.append(
            {"n": n, "acc_a": _true_rate(pa), "acc_b": _true_rate(pb), "coverage": hits / reps, "reps": reps}
        )
    return pd.DataFrame(rows)


def _true_rate(threshold: float) -> float:
    """P(0.5 U1 + 0.5 U2 < t) for independent uniforms (the triangular distribution on [0, 1])."""
    return 2 * threshold**2 if threshold <= 0.5 else 1 - 2 * (1 - threshold) ** 2


def run(command: list[str]) -> tuple[float, float, str]:
    """Time a CLI command as a subprocess; returns (seconds, peak MB, stdout)."""
    timer = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    full = [sys.executable, "-m", "annotator", *command]
    if timer:
        full = [timer, "-v", *full]
    start = time.perf_counter()
    result = subprocess.run(
        full, capture_output=True, text=True, env=os.environ | {"COLUMNS": "160"}, check=False
    )
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(
            f"{' '.join(command[:4])} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr)
    peak_kb = int(found.group(1)) if found else resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, peak_kb / 1024, result.stdout


def scale(n_pairs: int, n_annotators: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_analyze import build  # the same bulk-inserted study as the analyze benchmark

    with tempfile.TemporaryDirectory(prefix="bench_science_") as tmp:
        folder = Path(tmp)
        url = f"sqlite:///{folder / 'bench.db'}"
        start = time.perf_counter()
        counts = build(url, n_pairs=n_pairs, n_annotators=n_annotators, n_aspects=3)
        print(
            f"built: {counts['pairs']:,} pairs, {counts['judgments']:,} judgments "
            f"in {time.perf_counter() - start:.1f} s"
        )
        seconds, peak, _ = run(["--db", url, "adjudicate", "--study", STUDY, "--auto"])
        print(f"adjudicate --auto: {seconds:.1f} s, peak RSS {peak:.0f} MB")
        rng = np.random.default_rng(3)
        ids = [f"pair-{i:06d}" for i in range(n_pairs)]
        scores = rng.normal(0, 1, (n_pairs, 2))
        jsonl = folder / "rm.jsonl"
        with jsonl.open("w", encoding="utf-8") as handle:
            for pair_id, (c, r) in zip(ids, scores, strict=True):
                handle.write(
                    json.dumps({"id": pair_id, "score_chosen": float(c) + 0.8, "score_rejected": float(r)})
                    + "\n"
                )
        parquet = folder / "judge.parquet"
        pd.DataFrame(
            {
                "pair_id": ids,
                "choice": np.where(rng.random(n_pairs) < 0.7, "chosen", "rejected"),
                "confidence": 0.7,
            }
        ).to_parquet(parquet)
        for path, model in ((jsonl, "rm-scores"), (parquet, "judge-choice")):
            seconds, peak, stdout = run(
                ["--db", url, "models", "import", str(path), "--study", STUDY, "--model", model]
            )
            print(
                f"models import {path.suffix} ({n_pairs:,} predictions): {seconds:.1f} s, "
                f"peak RSS {peak:.0f} MB"
            )
            print(f"  {stdout.strip()}")
        out = folder / "dataset"
        seconds, peak, stdout = run(["--db", url, "export", "dataset", "--study", STUDY, "--out", str(out)])
        size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 2**20
        print(f"export dataset: {seconds:.1f} s, peak RSS {peak:.0f} MB, {size:.1f} MB on disk")
        print(f"  {stdout.strip()}")
        import datasets

        start = time.perf_counter()
        loaded = datasets.load_dataset(str(out))
        print(
            f"datasets.load_dataset(DIR): {loaded['test'].num_rows:,} pairs "
            f"in {time.perf_counter() - start:.1f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--annotators", type=int, default=3)
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--skip-coverage", action="store_true")
    args = parser.parse_args()
    if not args.skip_coverage:
        start = time.perf_counter()
        table = coverage(args.reps)
        print(
            f"Wilson 95% accuracy CI coverage ({args.reps} simulated models per cell, "
            f"{time.perf_counter() - start:.0f} s):"
        )
        print(
            table.pivot(index="n", columns="p", values="coverage").to_string(
                float_format=lambda v: f"{v:.3f}"
            )
        )
        print(
            f"minimum {table['coverage'].min():.3f} (goal >= 0.93): "
            f"{'met' if table['coverage'].min() >= 0.93 else 'NOT met'}"
        )
        diff = difference_coverage(min(args.reps, 500))
        print("paired-bootstrap 95% CI of an accuracy difference:")
        print(diff.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if not args.skip_scale:
        scale(args.pairs, args.annotators)


if __name__ == "__main__":
    main()
