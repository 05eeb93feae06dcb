"""A million pairs: the crossed model of every quality item from a partitioned Parquet label dataset, on
sufficient statistics, and the same sums from Spark SQL.

Run from the repository root:

    python benchmarks/bench_million.py [--pairs 20000 1000000] [--spark-pairs 20000] [--workdir DIR]

1. Writes a label dataset in the long label format (pair_id, annotator, response, item, value,
   preference, confidence, time_s), N pairs x 3 annotators, 3 quality items (1-5) and 5 rubric aspects
   (0-2), both responses, partitioned by item (hive: item=<name>/), from bench_analyze's model (pair
   latent quality, annotator bias and noise, rounded and clipped). Kept in --workdir.
2. In a fresh process under `/usr/bin/time -v`: for each quality item, the per-pair and per-annotator
   sums (analysis.sufficient.parquet_sums: the item's columns only, Arrow's group-by) and the moment
   estimates (crossed_moments). Prints wall, CPU and peak RSS, and the estimates.
3. At each size up to 100,000 pairs also today's path on the same data: the label frame
   (analysis.label_files.read_labels) and the REML fit (analysis.mixed.fit_crossed) of the judgment
   differences, side by side with the moment estimates.
4. With pyspark installed (a benchmark-only tool, `pip install pyspark`; Java 17): a local Spark session
   reads the same dataset, runs analysis.sufficient.SUMS_SQL over it and compares every per-pair and
   per-annotator count, sum and sum of squares with Arrow's (largest absolute difference).
5. With --report: the whole `annotator analyze --labels DATASET --by-item --json F` (the report read one
   item at a time, analysis.report_columns) in a fresh process under `/usr/bin/time -v` at each size of
   --report-pairs; at each size up to 100,000 pairs also `--in-memory` (today's report from the whole
   label frame) on the same dataset, and the two JSON reports compared: the largest absolute difference
   of every estimate, interval bound and p-value of the verdicts' tables, and whether every verdict's
   status and sentence are equal. Run it under `nice -n 10` (the children inherit it).

The 1-minute load average is printed beside each figure (2 cores shared with other jobs).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUALITY = ("correctness", "relevance", "helpfulness")
ASPECTS = 5
ANNOTATORS = 3


def load() -> float:
    return os.getloadavg()[0]


def write_dataset(folder: Path, n_pairs: int, seed: int = 0) -> None:
    """The label dataset of `n_pairs` x 3 annotators, one item at a time (bounded memory)."""
    rng = np.random.default_rng(seed)
    n = n_pairs * ANNOTATORS
    pair_of = np.repeat(np.arange(n_pairs, dtype=np.int32), ANNOTATORS)
    ann = np.tile(np.arange(ANNOTATORS, dtype=np.int32), n_pairs)
    bias = rng.normal(0, 0.25, ANNOTATORS)
    noise = 0.6 * rng.uniform(0.7, 1.3, ANNOTATORS)
    pair_ids = pa.array([f"pair-{i:07d}" for i in range(n_pairs)])
    annotators = pa.array([f"bench_{a + 1:02d}" for a in range(ANNOTATORS)])
    responses = pa.array(["chosen", "rejected"])
    preference = rng.integers(-2, 3, n).astype(np.int8)
    confidence = rng.integers(1, 4, n).astype(np.int8)
    seconds = rng.lognormal(np.log(75), 0.4, n)
    for item in [*QUALITY, *(f"rubric:{k}" for k in range(ASPECTS))]:
        if item in QUALITY:
            base = rng.normal(4.0, 0.45, n_pairs)[pair_of] + bias[ann]
            values = [np.clip(np.rint(base + rng.normal(0, 1, n) * noise[ann]), 1, 5) for _ in range(2)]
        else:
            base = rng.normal(0.5, 0.3, n_pairs)[pair_of]
            values = [
                np.clip(np.rint(base + gap + rng.normal(0, 1, n) * noise[ann] / 2), 0, 2)
                for gap in (1.0, 0.0)
            ]
        both = np.concatenate([pair_of, pair_of])
        table = pa.table(  # plain columns: Parquet dictionary-encodes each row group by itself
            {
                "pair_id": pc.take(pair_ids, pa.array(both)),
                "annotator": pc.take(annotators, pa.array(np.concatenate([ann, ann]))),
                "response": pc.take(responses, pa.array(np.repeat(np.array([0, 1], dtype=np.int32), n))),
                "value": np.concatenate(values),
                "preference": np.concatenate([preference, preference]),
                "confidence": np.concatenate([confidence, confidence]),
                "time_s": np.concatenate([seconds, seconds]),
            }
        )
        ds.write_dataset(
            table,
            folder / f"item={item}",
            format="parquet",
            basename_template="part-{i}.parquet",
            existing_data_behavior="overwrite_or_ignore",
        )


MOMENTS = """
import json, sys
from analysis.sufficient import crossed_moments, parquet_sums
out = {}
for item in sys.argv[2:]:
    m = crossed_moments(parquet_sums(sys.argv[1], item))
    out[item] = [m.mean, m.se, m.pair_var, m.annotator_var, m.residual_var, m.n_obs]
print(json.dumps(out))
"""

REML = """
import json, sys
import numpy as np
from analysis.aggregates import judgment_differences
from analysis.mixed import fit_crossed
from analysis.sufficient import crossed_moments, group_sums
import pyarrow.dataset as ds
frame = ds.dataset(sys.argv[1], format="parquet", partitioning="hive").to_table().to_pandas()
for column in ("pair_id", "annotator", "response", "item"):
    frame[column] = frame[column].astype(str)
out = {}
for item in sys.argv[2:]:
    d = judgment_differences(frame, item)
    y, pairs, annotators = d["diff"].to_numpy(), d["pair_id"].to_numpy(), d["annotator"].to_numpy()
    fit = fit_crossed(y, np.ones((len(d), 1)), pairs, annotators)
    out[item] = [float(fit.params[0]), float(np.sqrt(fit.cov_params[0, 0])), fit.pair_var, fit.annotator_var,
                 fit.residual_var, fit.n_obs]
print(json.dumps(out))
"""


def timed(code: str, *args: str) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak RSS MB, stdout) of `python -c code args` in a fresh process."""
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    result = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-c", code, *args], capture_output=True, text=True, env=env
    )
    wall = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(result.stderr[-3000:])
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", result.stderr).group(1))  # type: ignore[union-attr]
    system = float(re.search(r"System time \(seconds\): ([\d.]+)", result.stderr).group(1))  # type: ignore[union-attr]
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1))  # type: ignore[union-attr]
    return wall, user + system, peak / 1024, result.stdout


ANALYZE = [sys.executable, "-m", "annotator", "analyze", "--labels"]
#: The report's tables whose numbers the two paths must share (JSON keys).
COMPARED = (
    "equivalence_crossed",
    "equivalence",
    "broken_share",
    "rubric_crossed",
    "preference_crossed",
    "rubric_superiority",
    "holm",
    "agreement",
    "annotator_design",
)


def timed_command(argv: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of a command in a fresh process under /usr/bin/time -v."""
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    result = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(result.stdout[-2000:] + result.stderr[-3000:])
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", result.stderr).group(1))  # type: ignore[union-attr]
    system = float(re.search(r"System time \(seconds\): ([\d.]+)", result.stderr).group(1))  # type: ignore[union-attr]
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1))  # type: ignore[union-attr]
    return wall, user + system, peak / 1024


def numbers(table: list[dict[str, object]] | dict[str, object]) -> dict[tuple[int, str], float]:
    """Every finite number of a JSON table, keyed by (row, column)."""
    rows = [table] if isinstance(table, dict) else table
    found = {}
    for k, row in enumerate(rows):
        for column, value in row.items():
            if isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value):
                found[(k, column)] = float(value)
    return found


def compare_reports(memory: dict, by_item: dict) -> tuple[float, int, bool]:
    """(largest absolute difference, numbers compared, every verdict equal) of two JSON reports."""
    worst, compared = 0.0, 0
    for key in (*COMPARED, "preference"):
        a, b = numbers(memory[key]), numbers(by_item[key])
        if a.keys() != b.keys():
            raise SystemExit(
                f"{key}: the two reports hold different numbers: {sorted(a.keys() ^ b.keys())[:5]}"
            )
        for cell, value in a.items():
            worst = max(worst, abs(value - b[cell]))
            compared += 1
    same = memory["verdicts"] == by_item["verdicts"] and memory["overall"] == by_item["overall"]
    return worst, compared, same


def report_check(folder: Path, n_pairs: int, out: Path) -> None:
    """The whole report read by item (and at up to 100,000 pairs also in memory, compared)."""
    import json

    by_item = out / f"report-{n_pairs}-by-item.json"
    before = load()
    wall, cpu, peak = timed_command([*ANALYZE, str(folder), "--by-item", "--json", str(by_item)])
    print(
        f"{n_pairs:>9,} pairs x {ANNOTATORS}, annotator analyze --labels --by-item (the whole report): "
        f"{wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {peak:.0f} MB, load {before:.1f}-{load():.1f}",
        flush=True,
    )
    found = json.loads(by_item.read_text(encoding="utf-8"))
    print(f"    overall {found['overall']}: {found['overall_reason']}")
    print(f"    not computed at this size: {', '.join(found['not_computed'])}")
    for row in found["equivalence_crossed"]:
        print(
            f"    {row['dimension']:<13} {row['estimate']:+.5f} [{row['ci_low']:.5f}, {row['ci_high']:.5f}] "
            f"df {row['df']:.1f}"
        )
    if n_pairs > 100_000:
        return
    memory = out / f"report-{n_pairs}-in-memory.json"
    before = load()
    wall, cpu, peak = timed_command([*ANALYZE, str(folder), "--in-memory", "--json", str(memory)])
    print(
        f"{n_pairs:>9,} pairs x {ANNOTATORS}, annotator analyze --labels --in-memory (today's report): "
        f"{wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {peak:.0f} MB, load {before:.1f}-{load():.1f}",
        flush=True,
    )
    worst, compared, same = compare_reports(json.loads(memory.read_text(encoding="utf-8")), found)
    print(
        f"    by item vs in memory: {compared:,} numbers of the verdicts' tables, largest absolute "
        f"difference {worst:.2e}; every verdict's status and sentence equal: {same}",
        flush=True,
    )


def spark_check(folder: Path) -> None:
    """SUMS_SQL in a local Spark session against Arrow's sums of every item."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        print("spark: pyspark is not installed (pip install pyspark): not run", flush=True)
        return
    from analysis.sufficient import SUMS_SQL, parquet_sums

    before = load()
    start = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench_million")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.read.parquet(str(folder)).createOrReplaceTempView("labels")
    rows = spark.sql(SUMS_SQL).collect()
    elapsed = time.perf_counter() - start
    spark.stop()
    found: dict[tuple[str, str, str], tuple[float, float, float]] = {
        (r["side"], r["item"], r["unit"]): (float(r["n"]), float(r["s"]), float(r["s2"])) for r in rows
    }
    worst, compared = 0.0, 0
    for item in [*QUALITY, *(f"rubric:{k}" for k in range(ASPECTS))]:
        sums = parquet_sums(folder, item)
        for side, units, n, s, s2 in (
            ("pair", sums.pair_units, sums.pair_n, sums.pair_s, sums.pair_s2),
            ("annotator", sums.annotator_units, sums.annotator_n, sums.annotator_s, sums.annotator_s2),
        ):
            for code, unit in enumerate(units):
                mine = (float(n[code]), float(s[code]), float(s2[code]))
                theirs = found[(side, item, unit)]
                worst = max(worst, *(abs(a - b) for a, b in zip(mine, theirs, strict=True)))
                compared += 1
    print(
        f"spark: SUMS_SQL over the dataset in {elapsed:.1f} s (local[2], session start included); "
        f"{len(rows):,} sums rows; {compared:,} unit sums compared with Arrow's, largest absolute "
        f"difference {worst:.2e}; load {before:.1f}-{load():.1f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, nargs="+", default=[20_000, 1_000_000])
    parser.add_argument("--spark-pairs", type=int, nargs="*", default=[20_000])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--report", action="store_true", help="only the whole report (step 5)")
    parser.add_argument("--report-pairs", type=int, nargs="+", default=[20_000, 1_000_000])
    args = parser.parse_args()
    if args.report:
        root = args.workdir or Path(tempfile.mkdtemp(prefix="bench_million_"))
        for n_pairs in args.report_pairs:
            folder = root / f"labels-{n_pairs}"
            if not folder.exists():
                write_dataset(folder, n_pairs)
            report_check(folder, n_pairs, root)
        return
    with tempfile.TemporaryDirectory(prefix="bench_million_") as tmp:
        root = args.workdir or Path(tmp)
        for n_pairs in args.pairs:
            folder = root / f"labels-{n_pairs}"
            if not folder.exists():
                start = time.perf_counter()
                write_dataset(folder, n_pairs)
                size = sum(p.stat().st_size for p in folder.rglob("*.parquet")) / 2**20
                took = time.perf_counter() - start
                print(f"{n_pairs:>9,} pairs: wrote the dataset ({size:.0f} MB) in {took:.0f} s", flush=True)
            before = load()
            wall, cpu, peak, out = timed(MOMENTS, str(folder), *QUALITY)
            print(
                f"{n_pairs:>9,} pairs x {ANNOTATORS}, sufficient statistics, {len(QUALITY)} items: "
                f"{wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {peak:.0f} MB, load {before:.1f}",
                flush=True,
            )
            moments = __import__("json").loads(out)
            if n_pairs <= 100_000:
                before = load()
                wall, cpu, peak, out = timed(REML, str(folder), *QUALITY)
                print(
                    f"{n_pairs:>9,} pairs x {ANNOTATORS}, label frame + REML (today's path): "
                    f"{wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {peak:.0f} MB, load {before:.1f}",
                    flush=True,
                )
                reml = __import__("json").loads(out)
            else:
                reml = {}
            print("    item          method    mean gap        se   s2_pair  s2_annot  s2_resid          n")
            for item in QUALITY:
                for method, values in (("moments", moments[item]), ("REML", reml.get(item))):
                    if values is not None:
                        mean, se, sp, sa, sr, n = values
                        numbers = f"{mean:9.5f} {se:9.5f} {sp:9.5f} {sa:9.5f} {sr:9.5f} {n:10,}"
                        print(f"    {item:<13} {method:<8} {numbers}")
            if n_pairs in args.spark_pairs:
                spark_check(folder)


if __name__ == "__main__":
    main()
