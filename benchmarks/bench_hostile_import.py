"""A decompression bomb against the importer: a ~10 KB Parquet file whose 4,096 rows repeat one
500 KB text (dictionary-encoded and compressed, ~2 GB once decoded). Prints the file size, where
the import stops, the time, and the process's peak memory (the limit is --max-bytes, 512 MB by
default). Before the limit, this file imported 4,096 pairs into a 2 GB database.

    python benchmarks/bench_hostile_import.py [--max-mb 512]
"""

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
import pyarrow.parquet as pq

from annotator.errors import UserError
from annotator.intake import ingest

ROWS = 4096
TEXT = 500 * 1024


def bomb(path: Path) -> Path:
    record = {
        "question": "q",
        "rubric_aspects": [{"aspect": "a", "reason": "r", "evidence": "e"}],
        "rejected": "r",
    }
    table = pa.table(
        {
            "id": [f"p{i}" for i in range(ROWS)],
            "question": [record["question"]] * ROWS,
            "rubric_aspects": [record["rubric_aspects"]] * ROWS,
            # one dictionary entry and 4,096 indices: the bomb is built without decoding it
            "chosen": pa.DictionaryArray.from_arrays(
                pa.array([0] * ROWS, pa.int32()), pa.array(["a" * TEXT])
            ),
            "rejected": [record["rejected"]] * ROWS,
        }
    )
    pq.write_table(table, path, compression="zstd", use_dictionary=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-mb", type=int, default=512)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = bomb(Path(folder) / "bomb.parquet")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        started = time.perf_counter()
        try:
            rows = ingest.load_pairs(path, max_bytes=args.max_mb * 2**20)
            outcome = f"read all {len(rows)} rows"
        except UserError as exc:
            outcome = f"refused: {exc}"
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"file {path.stat().st_size:,} bytes, {ROWS} rows x {TEXT // 1024} KB decoded")
        print(outcome)
        print(f"{seconds:.1f} s; peak memory {peak:,.0f} MB (before reading {before:,.0f} MB)")


if __name__ == "__main__":
    main()
