"""Start-up that does not grow with the study: `annotator --help` and `serve` on 20,000 and 100,000 pairs.

Run from the repository root:

    python benchmarks/bench_startup.py [--pairs 20000 100000] [--repeat 5] [--baseline DIR] [--workdir DIR]

1. `annotator --help`, `annotator serve --help` and `annotator analyze --help`: CPU seconds (user +
   system) and peak RSS from `/usr/bin/time -v`, min / median of `--repeat` runs. With `--baseline DIR` (a
   checkout of an older commit, e.g. `git archive <commit> | tar -x -C DIR`) the same commands run with
   that checkout first on PYTHONPATH, alternated run by run with this one.
2. `serve` on a study of each size (bench_analyze's bulk builder; `--workdir` keeps the databases): the
   seconds from launch until `/_stcore/health` answers, and until a write goes through (a `BEGIN
   IMMEDIATE` that waits up to 120 s: the moment the integrity check has released the writes), with the
   check before the server starts (`$ANNOTATOR_CHECK_FIRST_MB` above the file's size, the old rule) and
   while it starts (the default for a file over 32 MB); plus the CPU seconds of `PRAGMA quick_check` alone.

The 1-minute load average is printed beside every figure: the machine has 2 cores shared with other
jobs, so compare the figures of one run (ratios), not absolute times across runs.
"""

import argparse
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_analyze import build  # noqa: E402

from annotator.server import free_port  # noqa: E402
from annotator.store.integrity import CHECK_FIRST_ENV  # noqa: E402

HELP_COMMANDS = (["--help"], ["serve", "--help"], ["analyze", "--help"])


def load() -> float:
    return os.getloadavg()[0]


def timed(argv: list[str], pythonpath: Path) -> tuple[float, float]:
    """(CPU seconds, peak RSS MB) of `python -m annotator ARGV` with `pythonpath` first."""
    env = os.environ | {"PYTHONPATH": str(pythonpath)}
    result = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-m", "annotator", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=pythonpath,  # `python -m` puts the working folder first on sys.path
        check=True,
    )
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", result.stderr).group(1))  # type: ignore[union-attr]
    system = float(re.search(r"System time \(seconds\): ([\d.]+)", result.stderr).group(1))  # type: ignore[union-attr]
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1))  # type: ignore[union-attr]
    return user + system, peak / 1024


def help_figures(repeat: int, baseline: Path | None) -> None:
    trees = [("this tree", ROOT)] + ([("baseline", baseline)] if baseline else [])
    for argv in HELP_COMMANDS:
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name, _ in trees}
        for _ in range(repeat):
            for name, tree in trees:  # alternated run by run
                before = load()
                cpu, peak = timed(argv, tree)
                runs[name].append((cpu, peak, before))
        for name, rows in runs.items():
            cpus, peaks, loads = (sorted(column) for column in zip(*rows, strict=True))
            print(
                f"annotator {' '.join(argv):<15} {name:<9}: {min(cpus):.2f} / {statistics.median(cpus):.2f} "
                f"CPU-s, peak RSS {min(peaks):.0f} / {statistics.median(peaks):.0f} MB (min / median of "
                f"{repeat}), load {min(loads):.1f}-{max(loads):.1f}",
                flush=True,
            )


def quick_check_cpu(path: Path) -> float:
    start = time.process_time()
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    connection.close()
    return time.process_time() - start


def serve_once(url: str, path: Path, check_first_mb: float) -> tuple[float, float]:
    """Seconds from launch to health, and to the first write that goes through."""
    port = free_port()
    env = os.environ | {"PYTHONPATH": str(ROOT), CHECK_FIRST_ENV: str(check_first_mb)}
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "annotator", "--db", url, "serve", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        healthy = None
        while healthy is None:
            if process.poll() is not None:
                raise SystemExit(f"serve exited with {process.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as answer:
                    if answer.status == 200:
                        healthy = time.perf_counter() - start
            except OSError:
                time.sleep(0.05)
        writer = sqlite3.connect(path, timeout=120, isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")
        writable = time.perf_counter() - start
        writer.execute("ROLLBACK")
        writer.close()
        return healthy, writable
    finally:
        process.terminate()
        process.wait(timeout=30)


def serve_figures(n_pairs: int, folder: Path, repeat: int) -> None:
    path = folder / f"startup-{n_pairs}.db"
    url = f"sqlite:///{path}"
    if not path.exists():
        build(url, n_pairs=n_pairs, n_annotators=3, n_aspects=5)
    size_mb = path.stat().st_size / 2**20
    checks = [quick_check_cpu(path) for _ in range(repeat)]
    print(
        f"{n_pairs:>7,} pairs ({size_mb:.0f} MB): PRAGMA quick_check {statistics.median(checks):.2f} CPU-s "
        f"(median of {repeat}), load {load():.1f}",
        flush=True,
    )
    rules = {"check first": size_mb * 10 + 1, "check while starting": 0}
    rows: dict[str, list[tuple[float, float, float]]] = {rule: [] for rule in rules}
    for _ in range(repeat):
        for rule, bound in rules.items():  # alternated run by run
            before = load()
            healthy, writable = serve_once(url, path, bound)
            rows[rule].append((healthy, writable, before))
    for rule, runs in rows.items():
        healthy_s, writable_s, loads = (sorted(column) for column in zip(*runs, strict=True))
        print(
            f"{n_pairs:>7,} pairs, {rule:<20}: launch -> health {statistics.median(healthy_s):5.2f} s, "
            f"launch -> writes open {statistics.median(writable_s):5.2f} s (median of {repeat}), "
            f"load {min(loads):.1f}-{max(loads):.1f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, nargs="*", default=[20_000, 100_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", type=Path, default=None, help="an older checkout to compare with")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the built databases here")
    args = parser.parse_args()
    print(f"load before: {load():.1f}", flush=True)
    help_figures(args.repeat, args.baseline)
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as tmp:
        folder = args.workdir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for n_pairs in args.pairs:
            serve_figures(n_pairs, folder, args.repeat)
    print(f"load after: {load():.1f}", flush=True)


if __name__ == "__main__":
    main()
