"""Import speed: `annotator.intake.ingest.import_file` against a plain sqlite3 `executemany` of the same rows.

Run: python benchmarks/bench_import.py [--records 10000] [--posts 20] [--repeat 3]

Generates records shaped like Personalized RewardBench (20-post profiles with posts of 300-600
characters, 3-5 rubric aspects, responses of 1,000-2,000 characters) into a temporary JSONL file, then
times, each on a fresh SQLite database in WAL mode:
  * import_file: read, parse, validate, hash and insert in one transaction (the real import), and
  * the baseline: sqlite3.executemany of the same rows (the same columns, JSON already serialized) in
    one transaction into an equivalent table (same columns, unique (study_id, external_id), index).
Prints records per second for both and their ratio (goal: <= 3). The best of `--repeat` runs counts.
"""

import argparse
import json
import random
import sqlite3
import string
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from annotator.intake.ingest import content_hash, import_file, load_pairs
from annotator.people.authorization import SYSTEM
from annotator.store import db

WORDS = [
    "".join(random.Random(k).choices(string.ascii_lowercase, k=random.Random(k).randint(2, 9)))
    for k in range(2000)
]


def _text(rng: random.Random, low: int, high: int) -> str:
    target = rng.randint(low, high)
    words: list[str] = []
    length = 0
    while length < target:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:target].capitalize() + "."


def make_record(rng: random.Random, i: int, n_posts: int) -> dict[str, object]:
    return {
        "id": f"bench-{i}",
        "question": _text(rng, 60, 200) + "?",
        "profile": [
            {"id": f"p{i}-{k}", "category": "cooking", "text": _text(rng, 300, 600)} for k in range(n_posts)
        ],
        "rubric_aspects": [
            {"aspect": _text(rng, 20, 60), "reason": _text(rng, 80, 200), "evidence": _text(rng, 80, 200)}
            for _ in range(rng.randint(3, 5))
        ],
        "narrative": _text(rng, 200, 500),
        "category": "cooking",
        "chosen": _text(rng, 1000, 2000),
        "rejected": _text(rng, 1000, 2000),
        "source": "bench",
    }


BASELINE_TABLE = """
CREATE TABLE pair (
    id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL, external_id VARCHAR(500) NOT NULL,
    question TEXT NOT NULL, profile JSON NOT NULL, rubric JSON NOT NULL, narrative TEXT NOT NULL,
    category VARCHAR(200) NOT NULL, chosen TEXT NOT NULL, rejected TEXT NOT NULL,
    metadata JSON NOT NULL, content_hash VARCHAR(64) NOT NULL, is_gold BOOLEAN NOT NULL,
    n_done INTEGER NOT NULL, created_at DATETIME NOT NULL, UNIQUE (study_id, external_id)
);
CREATE INDEX ix_pair_study_id ON pair (study_id);
"""


def time_import(path: Path, folder: Path, run: int) -> float:
    engine = db.make_engine(f"sqlite:///{folder / f'import-{run}.db'}")
    db.upgrade(engine)
    start = time.perf_counter()
    summary = import_file(engine, path, study="bench", account=SYSTEM)
    elapsed = time.perf_counter() - start
    engine.dispose()
    assert summary.imported > 0
    return elapsed


def baseline_rows(path: Path) -> list[tuple[object, ...]]:
    """The rows import_file writes, with JSON already serialized (prepared outside the timing)."""
    now = datetime.now(UTC).isoformat()
    rows = []
    for row in load_pairs(path):
        rows.append(
            (
                1,
                row["external_id"],
                row["question"],
                json.dumps(row["profile"]),
                json.dumps(row["rubric"]),
                row["narrative"],
                row["category"],
                row["chosen"],
                row["rejected"],
                json.dumps(row["metadata"]),
                content_hash(row),
                row["is_gold"],
                0,
                now,
            )
        )
    return rows


def time_baseline(rows: list[tuple[object, ...]], folder: Path, run: int) -> float:
    connection = sqlite3.connect(folder / f"baseline-{run}.db", isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.executescript(BASELINE_TABLE)
    start = time.perf_counter()
    connection.execute("BEGIN")
    connection.executemany(
        "INSERT INTO pair (study_id, external_id, question, profile, rubric, narrative, category, chosen, "
        "rejected, metadata, content_hash, is_gold, n_done, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    connection.execute("COMMIT")
    elapsed = time.perf_counter() - start
    connection.close()
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--posts", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = folder / "pairs.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for i in range(args.records):
                handle.write(json.dumps(make_record(rng, i, args.posts)) + "\n")
        size_mb = path.stat().st_size / 1e6
        rows = baseline_rows(path)
        imports, baselines = [], []
        for run in range(args.repeat):  # interleaved, so that a busy moment hits both
            imports.append(time_import(path, folder, run))
            baselines.append(time_baseline(rows, folder, run))
    n = args.records
    best_import, best_baseline = min(imports), min(baselines)
    print(f"records: {n:,} with {args.posts}-post profiles ({size_mb:.0f} MB of JSONL)")
    print(
        f"import_file:          {best_import:6.2f} s  {n / best_import:9,.0f} records/s"
        f"   (runs: {', '.join(f'{t:.2f}' for t in imports)} s)"
    )
    print(
        f"sqlite3 executemany:  {best_baseline:6.2f} s  {n / best_baseline:9,.0f} records/s"
        f"   (runs: {', '.join(f'{t:.2f}' for t in baselines)} s)"
    )
    ratio = best_import / best_baseline
    print(f"ratio import/baseline: {ratio:.2f} (goal <= 3)")
    return 0 if ratio <= 3 else 1


if __name__ == "__main__":
    sys.exit(main())
