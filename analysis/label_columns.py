"""A label file or a partitioned Parquet label dataset read one item at a time, as columns.

The long label frame of a large study (one row per score, every judgment-level column repeated on
each) does not fit one machine's memory; its statistics do not need it. :class:`LabelColumns` reads
the rows of one item at a time (pyarrow: only the columns the statistics use, filtered by item, the
control and owner rows apart) into a validated frame of that item (:func:`analysis.frames.validate_frame`,
so a bad value is named as in the whole file), from which the report takes what it keeps: the
per-judgment differences, the agreement row, one row per judgment. The per-response rubric score (the
mean over the aspects, :func:`analysis.aggregates.rubric_scores`) is summed aspect by aspect.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysis.frames import (
    KEY_COLUMNS,
    REQUIRED_COLUMNS,
    check_unique_keys,
    coded,
    has_prefix,
    shifted_rows,
    validate_frame,
)
from analysis.label_files import join_chunks
from analysis.owners import OWNER
from analysis.vocabulary import (
    ANNOTATOR,
    CHOSEN,
    CONTROL,
    ITEM,
    PAIR_ID,
    PREFERENCE,
    RATER_KIND,
    REJECTED,
    RESPONSE,
    RUBRIC_ITEM,
    RUBRIC_PREFIX,
    VALUE,
)

if TYPE_CHECKING:
    import pyarrow.dataset as ds

__all__ = ["IN_MEMORY_ROWS", "Judgments", "LabelColumns", "aspects", "is_label_dataset", "release_memory"]

#: The most score rows ``annotator analyze --labels`` reads into one long frame: above it the report
#: is computed item by item (:mod:`analysis.report_columns`). 5,000,000 rows are about 100,000 pairs x 3
#: annotators x 16 scores, which the in-memory report analyses in about 1.7 GB.
IN_MEMORY_ROWS = 5_000_000
#: Rows of one item read and validated at a time.
CHUNK_ROWS = 500_000

_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}
#: Turned into dictionaries over sorted texts in Arrow (codes), never one Python string per row.
_TEXT_COLUMNS = (PAIR_ID, ANNOTATOR, RESPONSE, ITEM, CONTROL, RATER_KIND)


def is_label_dataset(path: str | Path) -> bool:
    """Whether `path` is a folder (a partitioned Parquet label dataset) rather than one file."""
    return Path(path).is_dir()


@dataclass
class _Codes:
    """Integer codes of the texts of one column over every part read so far."""

    values: pd.Index = field(default_factory=lambda: pd.Index([], dtype=object))
    _sorted: pd.Index | None = None

    def of(self, column: pd.Series) -> np.ndarray:
        """The codes of a categorical column's values (new texts get new codes)."""
        categories = pd.Index(column.cat.categories.astype(str), dtype=object)
        if categories.equals(self.values):  # the same texts in the same order: no hashing
            return column.cat.codes.to_numpy().astype(np.int64)
        where = self.values.get_indexer(categories)
        if (where < 0).any():
            self.values = self.values.append(categories[where < 0])
            where = self.values.get_indexer(categories)
        codes = column.cat.codes.to_numpy()
        return np.where(codes >= 0, where[np.maximum(codes, 0)], -1)

    def sorted(self) -> pd.Index:
        """The texts seen, sorted (one index object while no new text is seen)."""
        if self._sorted is None or len(self._sorted) != len(self.values):
            self._sorted = self.values.sort_values()
        return self._sorted

    def column(self, codes: np.ndarray) -> pd.Series:
        """Codes back as a column coded over sorted categories (:func:`analysis.frames.coded`)."""
        categories = self.sorted()
        rank = categories.get_indexer(self.values)
        return pd.Series(pd.Categorical.from_codes(rank[codes], categories=categories))


class LabelColumns:
    """A label file (``.parquet``, ``.csv``) or a Parquet dataset folder (hive-partitioned by item,
    as ``annotator export labels --format parquet-dataset`` writes), read item by item."""

    def __init__(self, path: str | Path) -> None:
        import pyarrow.dataset as ds

        self.path = Path(path)
        if self.path.is_dir():
            self.dataset: ds.Dataset = ds.dataset(str(self.path), format="parquet", partitioning="hive")
        else:
            fmt = _FORMATS.get(self.path.suffix.lower())
            if fmt is None:
                raise ValueError(
                    f"unsupported labels file type '{self.path.suffix}' for reading by item: use .parquet, "
                    ".csv or a Parquet dataset folder"
                )
            self.dataset = ds.dataset(str(self.path), format=fmt)
        self.columns = set(self.dataset.schema.names)
        missing = [c for c in REQUIRED_COLUMNS if c not in self.columns]
        if missing:
            raise ValueError(f"label frame is missing column(s): {', '.join(missing)}")

    def count_rows(self) -> int:
        """The score rows (from the Parquet footers: nothing else is read)."""
        return int(self.dataset.count_rows())

    def _main(self) -> Any:
        """The filter of the main rows: no control pair, no owner's rating."""
        import pyarrow.dataset as ds

        keep = ds.scalar(True)
        if CONTROL in self.columns:
            keep = keep & (ds.field(CONTROL).is_null() | (ds.field(CONTROL) == ""))
        if RATER_KIND in self.columns:
            keep = keep & (ds.field(RATER_KIND).is_null() | (ds.field(RATER_KIND) != OWNER))
        return keep

    def items(self) -> list[str]:
        """Every item of the main rows, sorted."""
        import pyarrow.compute as pc

        found: set[str] = set()
        for batch in self.dataset.to_batches(columns=[ITEM], filter=self._main()):
            found.update(str(v) for v in pc.unique(batch.column(0)).to_pylist() if v is not None)
        return sorted(found)

    def has_owners(self) -> bool:
        """Whether any row is a profile owner's rating."""
        import pyarrow.dataset as ds

        if RATER_KIND not in self.columns:
            return False
        return bool(self.dataset.count_rows(filter=ds.field(RATER_KIND) == OWNER) > 0)

    def item_frame(self, item: str) -> pd.DataFrame:
        """The main rows of one item: read and validated :data:`CHUNK_ROWS` rows at a time
        (:func:`analysis.frames.validate_frame`), kept as the columns the statistics use (keys, value,
        preference) and joined; a bad value names its column and its row within the item's rows."""
        import pyarrow.dataset as ds

        rows = self._main() & (ds.field(ITEM) == item)
        batches = self.dataset.to_batches(columns=list(REQUIRED_COLUMNS), filter=rows, batch_size=CHUNK_ROWS)
        try:
            frame = join_chunks(_compact(batches))
            if frame.empty:
                return frame
            check_unique_keys(frame)
        except ValueError as exc:
            raise ValueError(f"item '{item}' (rows counted within that item's rows): {exc}") from None
        return frame

    def controls(self) -> pd.DataFrame:
        """The validated long frame of the control pairs' rows (every item; few pairs)."""
        import pyarrow.dataset as ds

        columns = [*REQUIRED_COLUMNS, CONTROL]
        if CONTROL not in self.columns:
            return validate_frame(pd.DataFrame({c: pd.Series(dtype=object) for c in columns}))
        control = ds.field(CONTROL).is_valid() & (ds.field(CONTROL) != "")
        if RATER_KIND in self.columns:
            control = control & (ds.field(RATER_KIND).is_null() | (ds.field(RATER_KIND) != OWNER))
        return _validated(self.dataset.to_table(columns=columns, filter=control))


def release_memory() -> None:
    """Hand the memory freed after an item back to the system (Arrow's pool and, on glibc, the C
    heap: otherwise the process keeps every item's freed pages and grows with the items read)."""
    import ctypes
    import ctypes.util

    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    name = ctypes.util.find_library("c")
    if name:
        trim = getattr(ctypes.CDLL(name), "malloc_trim", None)
        if trim is not None:
            trim(0)


def _compact(batches: Iterator[Any]) -> Iterator[pd.DataFrame]:
    """The batches gathered CHUNK_ROWS rows at a time and validated, as the columns the statistics use
    (the row numbers of an error count from the first batch)."""
    import pyarrow as pa

    seen, pending, size = 0, [], 0
    for batch in itertools.chain(batches, [None]):
        if batch is not None:
            pending.append(batch)
            size += batch.num_rows
        if not size or (batch is not None and size < CHUNK_ROWS):
            continue
        try:
            frame = _validated(pa.Table.from_batches(pending))
        except ValueError as exc:
            raise ValueError(shifted_rows(str(exc), seen)) from None
        seen, pending, size = seen + size, [], 0
        yield frame[[*KEY_COLUMNS, VALUE]].assign(**{PREFERENCE: frame[PREFERENCE].astype(np.int8)})


def _sorted_codes(column: Any) -> Any:
    """A text column as a dictionary array over its sorted distinct texts (sorted in Arrow, so that
    :func:`analysis.frames.coded` finds them sorted; UTF-8 byte order is Python's order)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    encoded = pc.dictionary_encode(values)
    order = pc.array_sort_indices(encoded.dictionary)
    rank = np.empty(len(order), dtype=np.int32)
    rank[order.to_numpy()] = np.arange(len(order), dtype=np.int32)
    indices = pc.take(pa.array(rank), encoded.indices)
    return pa.DictionaryArray.from_arrays(indices, pc.take(encoded.dictionary, order))


def _validated(table: Any) -> pd.DataFrame:
    """An Arrow table of label rows as a validated frame, its text columns coded (in Arrow: no Python
    string per row)."""
    for name in _TEXT_COLUMNS:
        if name in table.column_names:
            table = table.set_column(table.column_names.index(name), name, _sorted_codes(table[name]))
    frame = table.to_pandas()
    del table
    for name in _TEXT_COLUMNS:
        if name in frame.columns:
            frame[name] = coded(frame[name], with_empty=name == CONTROL)
    return validate_frame(frame)


class Judgments:
    """One row per judgment (pair, annotator) and the per-response rubric score, gathered item by
    item over common codes."""

    def __init__(self) -> None:
        self.pairs = _Codes()
        self.annotators = _Codes()
        self.keys = np.empty(0, dtype=np.int64)  # pair * 2**20 + annotator, first seen first
        self.preference = np.empty(0, dtype=float)
        self._index = pd.Index(self.keys)
        # per judgment and response (position * 2 + 0 chosen / 1 rejected): aspect rows, rated
        # aspects and the sum of their values
        self.rubric_rows_seen = np.empty(0)
        self.rubric_count = np.empty(0)
        self.rubric_sum = np.empty(0)

    def _positions(self, frame: pd.DataFrame) -> np.ndarray:
        """Each row's judgment as its position among the judgments seen (new ones are appended, in
        order of first appearance, with the preference of their first row)."""
        pair = self.pairs.of(frame[PAIR_ID]).astype(np.int64)
        annotator = self.annotators.of(frame[ANNOTATOR]).astype(np.int64)
        if len(self.annotators.values) >= 2**20:
            raise ValueError("more than 2**20 annotators")
        keys = pair * 2**20 + annotator
        where = self._index.get_indexer(keys)
        new = np.flatnonzero(where < 0)
        if len(new):
            codes, uniques = pd.factorize(keys[new])  # in order of first appearance
            first = np.flatnonzero(codes > np.maximum.accumulate(np.concatenate([[-1], codes[:-1]])))
            preference = frame[PREFERENCE].to_numpy(dtype=float)[new[first]]
            where[new] = len(self.keys) + codes
            self.keys = np.concatenate([self.keys, np.asarray(uniques, dtype=np.int64)])
            self.preference = np.concatenate([self.preference, preference])
            self._index = pd.Index(self.keys)
        return where

    def add(self, frame: pd.DataFrame) -> None:
        """The judgments of one item's rows (the first row of a judgment seen gives its preference)."""
        self._positions(frame)

    def add_aspect(self, frame: pd.DataFrame) -> None:
        """The values of one rubric aspect, summed per judgment and response: of each judgment, only
        when it scored the aspect on both responses (chosen and rejected averaged over the same
        aspects, as :func:`analysis.aggregates.judgment_differences` does)."""
        judgment = self._positions(frame)
        cell = judgment * 2 + (frame[RESPONSE] != CHOSEN).to_numpy()
        value = frame[VALUE].to_numpy(dtype=float)
        rated = np.isfinite(value)
        rated &= np.bincount(judgment, weights=rated, minlength=len(self.keys))[judgment] == 2
        size = 2 * len(self.keys)

        def grown(total: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
            out = np.bincount(cell, weights=weights, minlength=size).astype(float)
            out[: len(total)] += total
            return out

        self.rubric_rows_seen = grown(self.rubric_rows_seen, None)
        self.rubric_count = grown(self.rubric_count, rated.astype(float))
        self.rubric_sum = grown(self.rubric_sum, np.where(rated, value, 0.0))

    def table(self) -> pd.DataFrame:
        """``pair_id, annotator, preference``: one row per judgment, sorted by pair and annotator."""
        out = pd.DataFrame(
            {
                PAIR_ID: self.pairs.column(self.keys // 2**20),
                ANNOTATOR: self.annotators.column(self.keys % 2**20),
                PREFERENCE: self.preference.astype(np.int64),
            }
        )
        return out.sort_values([PAIR_ID, ANNOTATOR], kind="stable").reset_index(drop=True)

    def rubric_rows(self) -> pd.DataFrame:
        """The ``"rubric"`` rows: per judgment and response the mean of its aspects (empty without
        aspects)."""
        cells = np.flatnonzero(self.rubric_rows_seen > 0)
        judgment = self.keys[cells // 2]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = self.rubric_sum[cells] / self.rubric_count[cells]
        return pd.DataFrame(
            {
                PAIR_ID: self.pairs.column(judgment // 2**20),
                ANNOTATOR: self.annotators.column(judgment % 2**20),
                RESPONSE: pd.Categorical.from_codes(
                    (cells % 2).astype(np.int8), categories=[CHOSEN, REJECTED]
                ),
                ITEM: pd.Categorical.from_codes(
                    np.zeros(len(cells), dtype=np.int8), categories=[RUBRIC_ITEM]
                ),
                VALUE: mean,
            }
        )


def aspects(items: list[str]) -> list[str]:
    """The rubric aspects (``rubric:<k>``) among `items`."""
    flags = has_prefix(pd.Series(items, dtype=object), RUBRIC_PREFIX)
    return [item for item, aspect in zip(items, flags, strict=True) if aspect]
