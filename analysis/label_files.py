"""Reading an exported labels file (``.csv``, ``.jsonl``, ``.parquet``) into a validated label frame
(see :mod:`analysis.frames`), a chunk at a time, its text columns as categorical codes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import cast

import pandas as pd
from pandas.api.types import union_categoricals

from analysis.csv_dialect import first_line, separator
from analysis.frames import KEY_COLUMNS, check_items, coded, shifted_rows, validate_frame
from analysis.vocabulary import (
    ANNOTATOR,
    ARM,
    CATEGORY,
    CHOSEN_CHARS,
    CONFIDENCE,
    CONTROL,
    ITEM,
    JUDGMENT_ID,
    PAIR_ID,
    PREFERENCE,
    RATER_KIND,
    REJECTED_CHARS,
    RESPONSE,
    SIDE_CHOSEN,
    TIME_S,
    VALUE,
)

__all__ = ["CHUNK_ROWS", "join_chunks", "read_labels"]


def read_labels(path: str | Path, *, scales: Mapping[str, tuple[int, int]] | None = None) -> pd.DataFrame:
    """Read an exported labels file (``.csv``, ``.jsonl`` or ``.parquet``) into a validated frame.

    A bad value is named by its row: the record's number, and in a CSV file its row as a spreadsheet
    shows it (the header is row 1), as the pair, judge and model imports name a CSV row.

    Parameters
    ----------
    path : str or pathlib.Path
        The file written by ``annotator export labels``, or the folder of a Parquet label dataset
        (``--format parquet-dataset``: partitioned by item).
    scales : mapping of str to (int, int), optional
        The study's quality items and each one's lowest and highest point: every item must be the
        study's and every quality score a point of its scale (:func:`analysis.frames.check_items`).

    Returns
    -------
    pandas.DataFrame
        The output of :func:`analysis.frames.validate_frame`.

    Raises
    ------
    ValueError
        For an unsupported file type or an invalid frame.

    Examples
    --------
    >>> import pandas as pd, tempfile, pathlib
    >>> df = pd.DataFrame({"pair_id": ["007"] * 2, "annotator": "ann", "response": ["chosen", "rejected"],
    ...     "item": "helpfulness", "value": [4, 4], "preference": 0, "confidence": None, "time_s": 5.0})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "labels.csv"
    ...     df.to_csv(path, index=False)
    ...     read_labels(path)["pair_id"].tolist()
    ['007', '007']
    """
    path = Path(path)
    try:
        frame = _read(path)
        if scales is not None:
            check_items(frame, scales)
    except ValueError as exc:
        if path.suffix.lower() != ".csv" or path.is_dir():
            raise
        raise type(exc)(shifted_rows(str(exc), CSV_HEADER_ROWS)) from None  # NotInStudy stays one
    return frame


def _separator(path: Path) -> str:
    """The CSV file's field separator, from its first line (:mod:`analysis.csv_dialect`)."""
    with path.open(encoding="utf-8", errors="replace", newline="") as file:
        return separator(first_line(file.readline(1 << 20)))


#: Rows above a CSV file's first record (its header).
CSV_HEADER_ROWS = 1


def _read(path: Path) -> pd.DataFrame:
    """The labels at `path`, validated (:func:`read_labels`); row numbers count records."""
    suffix = path.suffix.lower()
    text_cols = dict.fromkeys((*_TEXT_COLUMNS, JUDGMENT_ID), str)
    if path.is_dir():
        df = _read_dataset(path)
    elif suffix == ".csv":
        with pd.read_csv(path, sep=_separator(path), dtype=text_cols, chunksize=CHUNK_ROWS) as reader:
            df = join_chunks(reader)
    elif suffix in (".jsonl", ".ndjson"):
        try:
            with pd.read_json(path, lines=True, dtype=text_cols, chunksize=CHUNK_ROWS) as reader:
                df = join_chunks(reader)
        except ValueError as exc:  # pandas names a character position: find the line instead
            raise ValueError(_bad_json_line(path) or str(exc)) from None
    elif suffix in (".parquet", ".pq"):
        df = _read_parquet(path)
    else:
        raise ValueError(f"unsupported labels file type '{path.suffix}': use .csv, .jsonl or .parquet")
    for name in df.columns:
        if _codes_wanted(name, df[name]):
            df[name] = coded(df[name], with_empty=name in _TEXT_COLUMNS and name not in KEY_COLUMNS)
    return validate_frame(df)


def _bad_json_line(path: Path) -> str | None:
    """Where a JSON-lines file stops being JSON: "line N: what" for its first line that is no JSON
    object (None when every line is one)."""
    import json

    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                return f"line {number}: not valid JSON: {exc.msg} (character {exc.colno})"
            if not isinstance(record, dict):
                return f"line {number}: expected a JSON object, got {type(record).__name__}"
    return None


#: The text columns read as categorical codes (a judgment's text repeats on each of its scores);
#: besides the key columns, the optional ones, and the export's judgment-level texts, get ``""`` as a
#: category. Any other column a file holds as text is coded too (e.g. ``judgment_id``, ``submitted_at``).
_TEXT_COLUMNS = (
    PAIR_ID,
    ANNOTATOR,
    RESPONSE,
    ITEM,
    CATEGORY,
    CONTROL,
    ARM,
    SIDE_CHOSEN,
    RATER_KIND,
    "flag_reason",
    "comment",
    "guideline_version",
)
#: The numeric columns: never coded, so that a bad value is named by validate_frame.
_NUMBER_COLUMNS = (VALUE, PREFERENCE, CONFIDENCE, TIME_S, CHOSEN_CHARS, REJECTED_CHARS)
CHUNK_ROWS = 50_000


def _codes_wanted(name: str, values: pd.Series) -> bool:
    """Whether a read column becomes codes: a named text column, or a column of text only."""
    if name in _TEXT_COLUMNS:
        return True
    if name in _NUMBER_COLUMNS:
        return False
    if isinstance(values.dtype, pd.StringDtype):
        return True
    return cast(bool, values.dtype == object and pd.api.types.infer_dtype(values, skipna=True) == "string")


def _read_parquet(path: Path) -> pd.DataFrame:
    """A Parquet label file, CHUNK_ROWS rows at a time into :func:`_joined` (what
    ``pandas.read_parquet`` gives, without the whole file's Arrow table beside the frame)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    try:
        schema = file.schema_arrow
        if file.metadata.num_rows == 0:
            return schema.empty_table().to_pandas()
        batches = file.iter_batches(batch_size=CHUNK_ROWS)
        return join_chunks(pa.Table.from_batches([batch], schema=schema).to_pandas() for batch in batches)
    finally:
        file.close()


def _read_dataset(path: Path) -> pd.DataFrame:
    """A Parquet label dataset folder (hive-partitioned by item), CHUNK_ROWS rows at a time."""
    import pyarrow.dataset as ds

    dataset = ds.dataset(str(path), format="parquet", partitioning="hive")
    if dataset.count_rows() == 0:
        return dataset.schema.empty_table().to_pandas()
    return join_chunks(batch.to_pandas() for batch in dataset.to_batches(batch_size=CHUNK_ROWS))


def join_chunks(reader: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """A label file read CHUNK_ROWS rows at a time: each chunk's text columns
    become codes before the next chunk is read (the parser's text of the whole file never exists at
    once), and the chunks' codes are joined over the union of categories."""
    chunks = []
    for chunk in reader:
        for name in chunk.columns:
            if _codes_wanted(name, chunk[name]):
                chunk[name] = coded(chunk[name], with_empty=name in _TEXT_COLUMNS and name not in KEY_COLUMNS)
        chunks.append(chunk)
    if not chunks:
        return pd.DataFrame()
    columns = list(dict.fromkeys(c for chunk in chunks for c in chunk.columns))
    joined: dict[str, object] = {}
    for name in columns:
        parts = [chunk[name] if name in chunk.columns else pd.Series([None] * len(chunk)) for chunk in chunks]
        if all(isinstance(p.dtype, pd.CategoricalDtype) for p in parts):
            joined[name] = coded(pd.Series(union_categoricals(parts, sort_categories=True)))
        else:
            joined[name] = pd.concat(parts, ignore_index=True)
        del parts
        for chunk in chunks:  # the chunks' copy of a joined column is freed before the next is joined
            if name in chunk.columns:
                del chunk[name]
    return pd.DataFrame(joined)
