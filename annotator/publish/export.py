"""Exports: the raw label frame, the adjudicated (final) labels and the validated pairs.

Every export reads the current judgments with a few set-based queries (no per-row ORM loads), can be
written as CSV, JSON Lines or Parquet, and is recorded in the audit log as an "export" event.
"""

import csv
import getpass
import io
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlmodel import Session, col

from annotator.errors import UserError, os_failure
from annotator.intake.recorded_draw import SAMPLE_KEY, sample_object
from annotator.people.authorization import SYSTEM, Account, record_event, require_role
from annotator.review.final_labels import final_labels
from annotator.review.readers import label_frame
from annotator.store.models import Pair
from annotator.study import StudyConfig, get_study, study_config

__all__ = [
    "EXPORT_KINDS",
    "DATASET_FORMAT",
    "FORMATS",
    "ExportRequest",
    "adjudicated_frame",
    "build",
    "export",
    "kept",
    "neutralize_formula",
    "pairs_records",
    "record_export",
    "to_bytes",
    "write_frame",
]

Format = Literal["csv", "jsonl", "parquet"]
FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")
#: The labels as a folder: a Parquet dataset partitioned by item (item=<name>/part-0.parquet, hive
#: style, readable by pyarrow, DuckDB, Polars and Spark) with the sums query beside it in _sums.sql.
DATASET_FORMAT = "parquet-dataset"
EXPORT_KINDS: tuple[str, ...] = ("labels", "adjudicated", "pairs")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class ExportRequest:
    """What one export asks for: which study and kind (one of :data:`EXPORT_KINDS`, or "dataset"),
    with annotator names as stable codes or not, of every pair or only the validated ones."""

    study: str
    kind: str
    pseudonymize: bool = False
    validated_only: bool = False


# --------------------------------------------------------------------------------- final labels


def adjudicated_frame(session: Session, *, study: str, pseudonymize: bool = False) -> pd.DataFrame:
    """One row per pair of `study`: its final label and the evidence behind it.

    Columns: pair_id, category, preference (chosen | rejected | tie, None while unresolved), keep,
    method (unanimous | majority | adjudicated | unresolved), rule, agreement (share of current
    judgments in the most common preference direction), ``<response>_<item>`` medians over the
    current judgments for every quality dimension and ``rubric`` (per judgment the mean over
    aspects), n_judgments, adjudicator (username or pseudonym; None for automatic decisions), note,
    decided_at. When a human decision gives scores, those replace the medians of the same columns.

    The final label is the latest recorded Adjudication of the pair; a pair without one is
    "unresolved" and its rule says why (not enough judgments, a rule that needs a person, or not yet
    auto-resolved: ``annotator adjudicate --study <study> --auto``).

    With rubric verification, ``support_<k>`` is the median answer on rubric aspect k
    (0 = not supported by what the user wrote, 1 = partly, 2 = yes).
    """
    return _support_columns(final_labels(session, study=study, pseudonymize=pseudonymize))


def _support_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Rubric-support medians as ``support_<k>``: they are stored on `chosen`, so the `rejected` ones
    are empty and dropped."""
    drop = [name for name in frame.columns if name.startswith("rejected_support:")]
    rename = {
        name: "support_" + name.removeprefix("chosen_support:")
        for name in frame.columns
        if name.startswith("chosen_support:")
    }
    return frame.drop(columns=drop).rename(columns=rename)


def _missing(value: Any) -> bool:
    return value is None or (not isinstance(value, list | dict | str) and bool(pd.isna(value)))


def kept(final: pd.DataFrame) -> pd.DataFrame:
    """The rows of an :func:`adjudicated_frame` whose latest adjudication says keep (the validated pairs)."""
    keep = final["keep"].map(lambda value: not _missing(value) and bool(value))
    return final[keep.astype(bool)].reset_index(drop=True)


def _plain(pair: dict[str, Any]) -> bool:
    return not pair["rubric"] and not pair["profile"]


def pairs_records(
    session: Session, *, study: str, validated_only: bool = False, final: pd.DataFrame | None = None
) -> list[dict[str, Any]]:
    """The pairs of `study` as Personalized RewardBench records, each with a `validation` object.

    A record has id, question, profile, rubric_aspects, narrative, category, chosen, rejected, then the
    stored metadata keys, then, when the tool drew the study's human sample, ``human_sample``:
    {probability, drawn} (:mod:`annotator.intake.recorded_draw`), then ``validation``: {method,
    preference, keep, agreement, n_judgments}.
    Pairs imported from a plain prompt/chosen/rejected file are written back that way (``prompt``, no
    profile or rubric), so every record re-imports with :func:`annotator.intake.ingest.import_file`.
    `validated_only` keeps only the pairs whose latest adjudication says keep. `final`: the study's
    :func:`adjudicated_frame` when the caller has it already (it is read otherwise).
    """
    study_row = get_study(session, study)
    final_frame = final if final is not None else adjudicated_frame(session, study=study)
    labels = final_frame.set_index("pair_id").to_dict("index")
    query = (
        select(
            col(Pair.external_id),
            col(Pair.question),
            col(Pair.profile),
            col(Pair.rubric),
            col(Pair.narrative),
            col(Pair.category),
            col(Pair.chosen),
            col(Pair.rejected),
            col(Pair.meta).label("meta"),
            col(Pair.sample_probability),
            col(Pair.in_sample),
        )
        .where(col(Pair.study_id) == study_row.id, col(Pair.control) == "")  # never control pairs
        .order_by(col(Pair.id))
    )
    records = []
    support = sorted(
        (name for name in next(iter(labels.values()), {}) if name.startswith("support_")),
        key=lambda name: int(name.removeprefix("support_")),
    )
    for row in session.connection().execute(query).mappings():
        label = labels[row["external_id"]]
        keep = None if _missing(label["keep"]) else bool(label["keep"])
        if validated_only and keep is not True:
            continue
        if _plain(dict(row)):
            record: dict[str, Any] = {"id": row["external_id"], "prompt": row["question"]}
        else:
            record = {
                "id": row["external_id"],
                "question": row["question"],
                "profile": row["profile"],
                "rubric_aspects": row["rubric"],
            }
        record |= {
            "narrative": row["narrative"],
            "category": row["category"],
            "chosen": row["chosen"],
            "rejected": row["rejected"],
        }
        for key, value in (row["meta"] or {}).items():
            if key != SAMPLE_KEY:  # an imported file's draw is not this study's
                record.setdefault(key, value)
        drawn = sample_object(row["sample_probability"], row["in_sample"])
        if drawn is not None:  # the tool drew this study's human sample: the pair's recorded probability
            record[SAMPLE_KEY] = drawn
        record["validation"] = {
            "method": label["method"],
            "preference": None if _missing(label["preference"]) else label["preference"],
            "keep": keep,
            "agreement": None if _missing(label["agreement"]) else float(label["agreement"]),
            "n_judgments": int(label["n_judgments"]),
        }
        if support:  # rubric verification: the median support answer per aspect (0 no, 1 partly, 2 yes)
            aspects = len(row["rubric"] or [])
            record["validation"]["rubric_support"] = [
                None if _missing(label.get(name)) else float(label[name]) for name in support[:aspects]
            ]
        records.append(record)
    return records


# ------------------------------------------------------------------------------------------- writing


def neutralize_formula(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula, made inert with a leading quote.

    >>> neutralize_formula("=1+1"), neutralize_formula("-2"), neutralize_formula("ok"), neutralize_formula(3)
    ("'=1+1", "'-2", 'ok', 3)
    """
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, pd.Timestamp | np.datetime64):
        return pd.Timestamp(value).isoformat()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if np.isnan(value) else float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _neutralize_column(column: pd.Series) -> pd.Series:
    """A text column for CSV: nested values as JSON, formula-like text quoted (once per distinct value)."""
    if column.dtype == object and column.map(type).isin([dict, list]).any():  # text dtypes hold text
        column = column.map(
            lambda v: (
                json.dumps(v, ensure_ascii=False, default=_json_default) if isinstance(v, dict | list) else v
            )
        )
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    safe = np.array([neutralize_formula(v) for v in uniques] + [None], dtype=object)
    return pd.Series(safe[codes], index=column.index, dtype=object)


def _csv_bytes(data: pd.DataFrame | Sequence[dict[str, Any]]) -> bytes:
    if isinstance(data, pd.DataFrame):
        frame = data.copy()
        for name in frame.columns:
            column = frame[name]
            if isinstance(column.dtype, pd.CategoricalDtype):  # text held as codes (the label frame)
                frame[name] = _neutralize_column(column.astype(object))
            elif column.dtype == object or pd.api.types.is_string_dtype(column.dtype):
                frame[name] = _neutralize_column(column)
            elif isinstance(column.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(column):
                codes, uniques = pd.factorize(column, use_na_sentinel=True)  # ISO 8601 text, each once
                text = np.array([moment.isoformat() for moment in uniques] + [None], dtype=object)
                frame[name] = pd.Series(text[codes], index=column.index, dtype=object)
        frame.columns = [neutralize_formula(str(name)) for name in frame.columns]
        return frame.to_csv(index=False, lineterminator="\r\n").encode("utf-8")
    buffer = io.StringIO()
    columns = list(dict.fromkeys(key for record in data for key in record))
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([neutralize_formula(name) for name in columns])
    for record in data:
        cells = []
        for name in columns:
            value = record.get(name)
            if value is None:
                cells.append("")
            elif isinstance(value, str):
                cells.append(neutralize_formula(value))
            else:
                cells.append(neutralize_formula(json.dumps(value, ensure_ascii=False, default=_json_default)))
        writer.writerow(cells)
    return buffer.getvalue().encode("utf-8")


def _jsonl_bytes(data: pd.DataFrame | Sequence[dict[str, Any]]) -> bytes:
    if isinstance(data, pd.DataFrame):
        records = data.astype(object).where(data.notna(), None).to_dict("records")
    else:
        records = list(data)
    lines = (_strict_json(record) for record in records)
    return "".join(line + "\n" for line in lines).encode("utf-8")


def _strict_json(value: Any) -> str:
    """Strict JSON (no NaN or Infinity, which JSON does not have: they become null)."""
    try:
        return json.dumps(value, ensure_ascii=False, default=_json_default, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), ensure_ascii=False, default=_json_default, allow_nan=False)


def _finite(value: Any) -> Any:
    """`value` with every NaN or infinite float replaced by None (nested lists and mappings too)."""
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _arrow_table(records: Sequence[dict[str, Any]]) -> Any:
    """An Arrow table from records: nested lists of objects stay list<struct>; a column whose values
    Arrow cannot type consistently (mixed types across records) is written as JSON text."""
    import pyarrow as pa

    columns = list(dict.fromkeys(key for record in records for key in record))
    arrays = {}
    for name in columns:
        values = [record.get(name) for record in records]
        try:
            arrays[name] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
            arrays[name] = pa.array(
                [
                    None if v is None else json.dumps(v, ensure_ascii=False, default=_json_default)
                    for v in values
                ],
                type=pa.string(),
            )
    return pa.table(arrays) if arrays else pa.table({})


def _parquet_bytes(data: pd.DataFrame | Sequence[dict[str, Any]]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if isinstance(data, pd.DataFrame):
        coded = [name for name in data.columns if isinstance(data[name].dtype, pd.CategoricalDtype)]
        plain = data.astype(dict.fromkeys(coded, object)) if coded else data  # text, as before codes
        table = pa.Table.from_pandas(plain, preserve_index=False)
    else:
        table = _arrow_table(data)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def _check_format(fmt: str) -> Format:
    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    return fmt  # type: ignore[return-value]


def to_bytes(data: pd.DataFrame | Sequence[dict[str, Any]], fmt: str) -> bytes:
    """A frame or a list of records encoded as csv, jsonl or parquet (for a download button).

    CSV: nested values are JSON text, and text cells that a spreadsheet would run as a formula
    (starting with = + - @, a tab or a carriage return) get a leading single quote; the other formats
    keep every value as it is (Parquet keeps nested lists of objects as list<struct>).
    """
    fmt = _check_format(fmt)
    if fmt == "csv":
        return _csv_bytes(data)
    if fmt == "jsonl":
        return _jsonl_bytes(data)
    return _parquet_bytes(data)


def write_frame(data: pd.DataFrame | Sequence[dict[str, Any]], path: str | Path, fmt: str) -> int:
    """Write a frame or records to `path` as csv | jsonl | parquet; returns the number of rows.

    The file is written to a temporary name next to `path` and renamed, so a failed export never
    leaves a half-written file; an unwritable path is a UserError naming it.
    """
    payload = to_bytes(data, fmt)
    path = Path(path)
    if path.is_dir():
        raise UserError(f"cannot write {path}: it is a folder")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent or ".")
    except OSError as exc:
        raise os_failure(f"cannot write {path}", exc) from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise os_failure(f"cannot write {path}", exc) from None
    return len(data)


def write_label_dataset(frame: pd.DataFrame, path: str | Path) -> int:
    """Write a label frame to the new folder `path` as a Parquet dataset partitioned by item, with
    :data:`analysis.sufficient.SUMS_SQL` in ``_sums.sql`` (the per-pair and per-annotator sums for any
    SQL engine over the files); returns the number of rows. Written to a temporary folder next to
    `path` and renamed; an existing `path` is refused."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from analysis.sufficient import SUMS_SQL

    path = Path(path)
    if path.exists():
        raise UserError(f"cannot write {path}: it already exists (a dataset is written to a new folder)")
    try:
        temporary = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent or "."))
    except OSError as exc:
        raise os_failure(f"cannot write {path}", exc) from None
    try:
        table = pa.Table.from_pandas(frame.astype({"item": str}), preserve_index=False)
        ds.write_dataset(
            table,
            temporary,
            format="parquet",
            partitioning=["item"],
            partitioning_flavor="hive",
            basename_template="part-{i}.parquet",
            existing_data_behavior="overwrite_or_ignore",
            preserve_order=True,  # each item's rows in the frame's order (threads would interleave them)
        )
        (temporary / "_sums.sql").write_text(SUMS_SQL.strip() + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        shutil.rmtree(temporary, ignore_errors=True)
        raise os_failure(f"cannot write {path}", exc) from None
    return len(frame)


# ------------------------------------------------------------------------------------- the export


def _who(account: Account) -> str:
    if account is not SYSTEM:
        return account.username
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


def record_export(
    session: Session, request: ExportRequest, *, rows: int, fmt: str, account: Account, target: str = ""
) -> None:
    """Add the audit event for one export: who, which study, what kind, how many rows, where, and
    whether names were pseudonymized and only validated pairs kept."""
    require_role(session, account, "researcher")
    detail = {
        "study": request.study,
        "kind": request.kind,
        "format": fmt,
        "rows": rows,
        "by": _who(account),
        "target": target,
        "pseudonymized": request.pseudonymize,
        "validated_only": request.validated_only,
    }
    record_event(session, account, "export", detail)


def with_scales(frame: pd.DataFrame, config: StudyConfig) -> pd.DataFrame:
    """The label frame with each quality row's scale (``scale_low``, ``scale_high``; empty on other
    rows) when some dimension of the study has a scale of its own; unchanged otherwise."""
    if not config.quality.own_scales:
        return frame
    scales = config.quality.scales
    item = frame["item"].astype(str)
    return frame.assign(
        scale_low=item.map({name: s.low for name, s in scales.items()}).astype("Int64"),
        scale_high=item.map({name: s.high for name, s in scales.items()}).astype("Int64"),
    )


def build(
    session: Session, request: ExportRequest, *, account: Account
) -> pd.DataFrame | list[dict[str, Any]]:
    """The data of one export kind: labels (frame), adjudicated (frame) or pairs (records).

    `request.validated_only` keeps, in every kind, only the pairs whose latest adjudication says keep (and
    their labels). Only a researcher (or SYSTEM) may build an export.
    """
    require_role(session, account, "researcher")
    study, kind, validated_only = request.study, request.kind, request.validated_only
    if kind not in EXPORT_KINDS:
        raise UserError(f"unknown export {kind!r}; use one of {', '.join(EXPORT_KINDS)}")
    if kind == "pairs":
        return pairs_records(session, study=study, validated_only=validated_only)
    final = adjudicated_frame(session, study=study, pseudonymize=request.pseudonymize)
    if kind == "adjudicated":
        return kept(final) if validated_only else final
    frame = label_frame(session, study=study, pseudonymize=request.pseudonymize, account=account)
    if validated_only:
        frame = frame[frame["pair_id"].isin(kept(final)["pair_id"])].reset_index(drop=True)
    return with_scales(frame, study_config(session, study))


def export(session: Session, request: ExportRequest, *, fmt: str, path: str | Path, account: Account) -> int:
    """Build one export, write it to `path` and log it; returns the number of rows written.

    Only a researcher (or SYSTEM) may export.
    """
    require_role(session, account, "researcher")
    if fmt == DATASET_FORMAT and request.kind != "labels":
        raise UserError(f"--format {DATASET_FORMAT} is for the labels export only")
    if fmt != DATASET_FORMAT:
        _check_format(fmt)
    data = build(session, request, account=account)
    if fmt == DATASET_FORMAT:
        assert isinstance(data, pd.DataFrame)
        rows = write_label_dataset(data, path)
    else:
        rows = write_frame(data, path, fmt)
    record_export(session, request, rows=rows, fmt=fmt, account=account, target=Path(path).name)
    return rows
