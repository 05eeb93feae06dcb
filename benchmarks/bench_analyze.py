"""End-to-end `annotator analyze` on a large study: 20,000 pairs x 3 annotators (about 1M scores).

Run: python benchmarks/bench_analyze.py [--pairs 5000 20000 100000] [--annotators 3] [--aspects 5]
     [--n-boot 1000] [--labels parquet csv jsonl] [--repeat 3] [--workdir DIR]

Builds a temporary SQLite database at the current schema and bulk-inserts a complete study with
SQLAlchemy core `executemany` into the real tables (the models' tables, explicit ids): pairs with
`--aspects` rubric aspects, annotator accounts, assignments (chosen side counterbalanced, status done,
revisions 1, current_judgment_id set), one judgment per assignment (revision 1) and its scores
(3 quality dimensions + the rubric aspects, for both responses), drawn from the simulator's model.
This is the shape `labels.submit` leaves behind, without its per-judgment cost. Then it times
`python -m annotator --db URL analyze --study bench --json F --html H --n-boot 1000` as a subprocess and
reads its peak memory from `/usr/bin/time -v` (or getrusage of the children). With `--labels FMT` it
also exports the labels (`annotator export labels`) and times `annotator analyze --labels FILE` the same
way. Each figure is run `--repeat` times (wall, CPU, peak RSS and the 1-minute load average before
each run, then the min and median); `--workdir` keeps the built databases and exported files for the
next call. Goal: 100,000 pairs x 3 in <= 2 GB peak, time linear in the pairs, 20,000 pairs <= 10 s
(quiet).
"""

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import insert

from annotator.store import db
from annotator.store.models import Assignment, Judgment, Pair, Score, Study, User
from annotator.study import load_config

STUDY = "bench"
CHUNK = 100_000


def build(url: str, *, n_pairs: int, n_annotators: int, n_aspects: int, seed: int = 0) -> dict[str, int]:
    """Bulk-insert the study; returns the row counts."""
    rng = np.random.default_rng(seed)
    config = load_config()
    dimensions = config.dimension_names
    lo, hi = config.quality.scale_min, config.quality.scale_max
    db.upgrade(url)
    engine = db.make_engine(url)
    now = datetime.now(UTC)
    rubric = [{"aspect": f"aspect {k}", "reason": "r", "evidence": "e"} for k in range(n_aspects)]
    n_judgments = n_pairs * n_annotators
    # the simulator's model: per-pair latent quality, annotator bias and noise, rounding and clipping
    bias = rng.normal(0, 0.25, n_annotators)
    noise = 0.6 * rng.uniform(0.7, 1.3, n_annotators)
    ann = np.tile(np.arange(n_annotators), n_pairs)
    pair_of = np.repeat(np.arange(n_pairs), n_annotators)
    quality = {}
    for name in dimensions:
        base = rng.normal(4.0, 0.45, n_pairs)[pair_of] + bias[ann]
        for response in ("chosen", "rejected"):
            value = base + rng.normal(0, 1, n_judgments) * noise[ann]
            quality[(response, name)] = np.clip(np.rint(value), lo, hi)
    for k in range(n_aspects):
        base = rng.normal(0.5, 0.3, n_pairs)[pair_of]
        for response, gap in (("chosen", 1.0), ("rejected", 0.0)):
            value = base + gap + rng.normal(0, 1, n_judgments) * noise[ann] / 2
            quality[(response, f"rubric:{k}")] = np.clip(np.rint(value), 0, 2)
    rubric_diff = np.mean(
        [quality[("chosen", f"rubric:{k}")] - quality[("rejected", f"rubric:{k}")] for k in range(n_aspects)],
        axis=0,
    )
    draw = 2.5 * rubric_diff + rng.logistic(0, 1, n_judgments)
    preference = np.where(
        np.abs(draw) < 0.5, 0, np.where(draw > 0, 1, -1) * np.where(np.abs(draw) > 2.5, 2, 1)
    )
    seconds = rng.lognormal(np.log(75), 0.4, n_judgments)
    # counterbalanced sides: per pair, annotator a sees chosen on A when (pair + a) is even
    side = np.where((pair_of + ann) % 2 == 0, "A", "B")

    with engine.begin() as connection:
        study_id = connection.execute(
            insert(Study).values(name=STUDY, config=config.model_dump(), created_at=now)
        ).inserted_primary_key[0]
        connection.execute(
            insert(User),
            [
                {
                    "id": a + 1,
                    "username": f"bench_{a + 1:02d}",
                    "role": "annotator",
                    "password_hash": "not-a-hash",
                    "active": True,
                    "created_at": now,
                    "failed_logins": 0,
                }
                for a in range(n_annotators)
            ],
        )
        connection.execute(
            insert(Pair),
            [
                {
                    "id": i + 1,
                    "study_id": study_id,
                    "external_id": f"pair-{i:06d}",
                    "question": f"Question {i}?",
                    "profile": [],
                    "rubric": rubric,
                    "narrative": "",
                    "category": ("cooking", "books", "travel", "money")[i % 4],
                    "chosen": f"chosen response {i}",
                    "rejected": f"rejected response {i}",
                    "metadata": {},
                    "content_hash": f"{i:064x}",
                    "is_gold": False,
                    "n_done": n_annotators,
                    "created_at": now,
                }
                for i in range(n_pairs)
            ],
        )
        connection.execute(
            insert(Assignment),
            [
                {
                    "id": j + 1,
                    "study_id": study_id,
                    "pair_id": int(pair_of[j]) + 1,
                    "annotator_id": int(ann[j]) + 1,
                    "chosen_side": str(side[j]),
                    "position": int(pair_of[j]) + 1,
                    "status": "done",
                    "skip_count": 0,
                    "created_at": now,
                    "completed_at": now,
                    "current_judgment_id": j + 1,
                    "revisions": 1,
                }
                for j in range(n_judgments)
            ],
        )
        connection.execute(
            insert(Judgment),
            [
                {
                    "id": j + 1,
                    "assignment_id": j + 1,
                    "revision": 1,
                    "submission_id": f"bench-{j + 1}",
                    "submitted_at": now - timedelta(seconds=n_judgments - j),
                    "time_on_task_s": float(seconds[j]),
                    "preference": int(preference[j]),
                    "confidence": 2,
                    "comment": "",
                    "flag": False,
                    "flag_reason": "",
                }
                for j in range(n_judgments)
            ],
        )
        judgment_ids = np.arange(1, n_judgments + 1)
        rows: list[dict[str, object]] = []
        n_scores = 0
        for (response, item), values in quality.items():
            rows.extend(
                {"judgment_id": int(jid), "response": response, "item": item, "value": float(v)}
                for jid, v in zip(judgment_ids, values, strict=True)
            )
            if len(rows) >= CHUNK:
                connection.execute(insert(Score), rows)
                n_scores += len(rows)
                rows = []
        if rows:
            connection.execute(insert(Score), rows)
            n_scores += len(rows)
    engine.dispose()
    return {"pairs": n_pairs, "judgments": n_judgments, "scores": n_scores}


def _timed(command: list[str]) -> tuple[float, float, float, str]:
    """Run a command under `/usr/bin/time -v` (if there); returns (seconds, peak MB, CPU seconds,
    its stdout). CPU seconds (user + system of the child) is the figure to read on a shared, loaded
    machine, where the wall time mostly measures the other jobs."""
    timer = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    if timer:
        command = [timer, "-v", *command]
    env = os.environ | {"COLUMNS": "140"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{command} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_kb = int(found.group(1)) if found else children.ru_maxrss
    user = re.search(r"User time \(seconds\): ([\d.]+)", result.stderr)
    system = re.search(r"System time \(seconds\): ([\d.]+)", result.stderr)
    cpu = (
        float(user.group(1)) + float(system.group(1))
        if user and system
        else children.ru_utime + children.ru_stime - before.ru_utime - before.ru_stime
    )
    return elapsed, peak_kb / 1024, cpu, result.stdout


def run_analyze(url: str, folder: Path, n_boot: int) -> tuple[float, float, float, str]:
    """Time `annotator analyze --study` on the database as a subprocess (see `_timed`)."""
    command = [sys.executable, "-m", "annotator", "--db", url, "analyze", "--study", STUDY]
    command += ["--json", str(folder / "report.json"), "--html", str(folder / "report.html")]
    return _timed([*command, "--n-boot", str(n_boot)])


def export_labels(url: str, folder: Path, fmt: str) -> Path:
    """The study's labels file (`annotator export labels`), exported once per folder."""
    labels = folder / f"labels.{fmt}"
    if not labels.exists():
        export = [sys.executable, "-m", "annotator", "--db", url, "export", "labels", "--study", STUDY]
        subprocess.run([*export, "--out", str(labels)], check=True, capture_output=True)
    return labels


def run_analyze_labels(labels: Path, folder: Path, n_boot: int) -> tuple[float, float, float, str]:
    """Time `annotator analyze --labels FILE` (see `_timed`)."""
    command = [sys.executable, "-m", "annotator", "analyze", "--labels", str(labels)]
    command += ["--json", str(folder / "report-labels.json"), "--n-boot", str(n_boot)]
    return _timed(command)


def repeated(run: Callable[[], tuple[float, float, float, str]], times: int) -> tuple[list[str], str]:
    """`times` runs: one line per run (wall, CPU, peak RSS, the 1-minute load average before it) and
    a summary line with the min and median of each figure; returns (lines, the last run's stdout)."""
    rows, lines, stdout = [], [], ""
    for k in range(times):
        load = os.getloadavg()[0]
        elapsed, peak_mb, cpu, stdout = run()
        rows.append((elapsed, cpu, peak_mb, load))
        lines.append(
            f"    run {k + 1}: {elapsed:6.1f} s wall, {cpu:6.1f} s CPU, peak RSS {peak_mb:5.0f} MB, "
            f"load {load:.1f}"
        )
        print(lines[-1], flush=True)
    wall, cpu_s, peak, loads = (sorted(column) for column in zip(*rows, strict=True))
    summary = (
        f"{min(wall):6.1f} / {statistics.median(wall):6.1f} s wall (min / median of {times}), "
        f"{min(cpu_s):6.1f} / {statistics.median(cpu_s):6.1f} s CPU, "
        f"peak RSS {min(peak):5.0f} / {statistics.median(peak):5.0f} MB, "
        f"load {min(loads):.1f}-{max(loads):.1f}"
    )
    return [*lines, summary], stdout


def one_size(n_pairs: int, args: argparse.Namespace) -> list[str]:
    """Build (or reuse) a study of `n_pairs`, time both analyses; returns the printed lines."""
    lines = []
    with tempfile.TemporaryDirectory(prefix="bench_analyze_") as tmp:
        folder = Path(args.workdir) / f"pairs-{n_pairs}" if args.workdir else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "bench.db"
        url = f"sqlite:///{path}"
        if not path.exists():
            start = time.perf_counter()
            counts = build(url, n_pairs=n_pairs, n_annotators=args.annotators, n_aspects=args.aspects)
            built = time.perf_counter() - start
            print(
                f"built: {counts['pairs']:,} pairs, {counts['judgments']:,} judgments, "
                f"{counts['scores']:,} scores in {built:.1f} s ({path.stat().st_size / 2**20:.0f} MB SQLite)",
                flush=True,
            )
        label = f"{n_pairs:>7,} pairs x {args.annotators}, analyze --study"
        print(label, flush=True)
        runs, stdout = repeated(lambda: run_analyze(url, folder, args.n_boot), args.repeat)
        lines += [label, *runs]
        words = ("PASS", "FAIL", "INCONCLUSIVE", "NOT ASSESSED", "OVERALL")
        for line in (line.strip() for line in stdout.splitlines() if line.startswith(words)):
            print(f"  {line}")
        report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        print(f"  report: {report['summary']}", flush=True)
        for fmt in args.labels:
            labels = export_labels(url, folder, fmt)
            label = f"{n_pairs:>7,} pairs x {args.annotators}, analyze --labels {fmt}"
            print(label, flush=True)
            runs, _ = repeated(
                lambda labels=labels: run_analyze_labels(labels, folder, args.n_boot), args.repeat
            )
            lines += [label, *runs]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, nargs="+", default=[20_000], help="study sizes (pairs)")
    parser.add_argument("--annotators", type=int, default=3)
    parser.add_argument("--aspects", type=int, default=5)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (min and median printed)")
    parser.add_argument(
        "--workdir",
        default="",
        help="keep the databases and label files here and reuse them (default: a temp dir)",
    )
    parser.add_argument(
        "--labels", nargs="*", default=[], choices=["parquet", "csv", "jsonl"], help="also analyze --labels"
    )
    args = parser.parse_args()
    lines = [line for n_pairs in args.pairs for line in one_size(n_pairs, args)]
    print("\n".join(["", *lines]))
    print("goal: 100,000 pairs x 3 in <= 2 GB peak; 20,000 pairs <= 10 s on a quiet machine")


if __name__ == "__main__":
    main()
