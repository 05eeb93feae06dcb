"""Reading and validating pair files (JSONL, JSON, CSV, Parquet) and importing them into a study."""

import codecs
import csv
import hashlib
import json
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from analysis.csv_dialect import first_line, separator
from analysis.vocabulary import GOLD, POSITIVE, PREFERENCE_DOMAIN, TRAINING
from annotator import textguard
from annotator.errors import ConfigError, IngestError, UserError
from annotator.people.authorization import Account, require_role
from annotator.store.db import RawJSON, json_serializer
from annotator.store.models import Event, Pair, Study
from annotator.study import StudyConfig, load_config, parse_config

MAX_PROBLEMS = 20
#: The pair file types `annotator import` and the upload fields take (one reader each in load_pairs).
SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
TABULAR = (".csv", ".parquet")  # every record has the file's columns (a JSON record has its own keys)
UPLOAD_TYPES = [suffix.lstrip(".") for suffix in SUFFIXES]  # the same, as st.file_uploader takes them
NATIVE_FIELDS = ("id", "question", "profile", "rubric_aspects", "narrative", "category", "chosen", "rejected")
NEEDED_FIELDS = ("id", "question", "chosen", "rejected", "rubric_aspects")  # a native record's
LIST_FIELDS = ("profile", "rubric_aspects")
JSON_FIELDS = ("profile", "rubric", "metadata")
HASHED_FIELDS = ("question", "profile", "rubric", "narrative", "category", "chosen", "rejected", "metadata")
Progress = Callable[[int], None]


@dataclass(frozen=True)
class ImportSummary:
    """What an import did: new pairs, identical ones skipped, and changed ones replaced."""

    study: str
    imported: int
    unchanged: int
    replaced: int
    warnings: tuple[str, ...] = ()  # bidirectional controls, zero-width characters (line, field)

    @property
    def total(self) -> int:
        return self.imported + self.unchanged + self.replaced

    def __str__(self) -> str:
        text = f"study {self.study!r}: imported {self.imported}, unchanged {self.unchanged}"
        return text + (f", replaced {self.replaced}" if self.replaced else "")


# ---------------------------------------------------------------------------------------------- reading


def read_records(path: Path, *, max_bytes: int = textguard.MAX_BYTES_DEFAULT) -> Iterator[tuple[str, Any]]:
    """Yield (where, record) for every record of a pair file; `where` names its line, item or row.

    At most `max_bytes` of decoded text are read, checked while reading (a text file: its size, then
    line by line; Parquet: the uncompressed size its footer declares, then every batch of rows before
    it becomes Python objects), so an oversized file stops before it fills memory or the database.
    """
    suffix = path.suffix.lower()
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path}: a folder, not a file")  # the reader of pair, model and judge files
    if suffix not in SUFFIXES:
        raise UserError(f"{path}: unknown file type {suffix or '(none)'!r}; use one of {', '.join(SUFFIXES)}")
    if not path.is_file():
        raise UserError(f"{path}: not a file")
    if max_bytes < 1:
        raise UserError(f"--max-bytes must be a positive number of bytes, not {max_bytes}")
    if suffix == ".parquet":
        yield from _read_parquet(path, max_bytes)
        return
    if path.stat().st_size > max_bytes:
        raise textguard.over_max_bytes(path, max_bytes, f"the file has {path.stat().st_size:,} bytes")
    if suffix == ".jsonl":
        yield from _read_jsonl(path, max_bytes)
        return
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    if not text.strip():
        raise UserError(f"{path}: the file is empty")
    if suffix == ".json":
        yield from _read_json(path, text)
    else:
        yield from _read_csv(path, text)


def _read_jsonl(path: Path, max_bytes: int) -> Iterator[tuple[str, Any]]:
    """Line by line, so a large file is never held whole; only a newline ends a line (not U+2028)."""
    bad: list[str] = []
    empty = True
    total = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            total += len(raw)
            if total > max_bytes:  # the file grew while it was read
                raise textguard.over_max_bytes(path, max_bytes, f"at line {number}")
            if number == 1:
                raw = raw.removeprefix(codecs.BOM_UTF8)
            if not raw or raw.isspace():
                continue
            empty = False
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise UserError(
                    f"{path}: line {number} is not UTF-8 text (byte {exc.start}: {exc.reason})"
                ) from None
            try:
                record = textguard.loads(line)
            except json.JSONDecodeError as exc:
                bad.append(f"line {number}: not valid JSON: {exc.msg} (column {exc.colno})")
                continue
            except ValueError as exc:
                bad.append(f"line {number}: not valid JSON: {exc}")
                continue
            yield f"line {number}", record
    if empty:
        raise UserError(f"{path}: the file is empty")
    if bad:
        raise IngestError(str(path), bad[:MAX_PROBLEMS], len(bad))


def json_problem(exc: json.JSONDecodeError) -> str:
    """Where a JSON document breaks: the line, the column and the character counted from the file's
    start; a second value after the first (a JSON Lines file named .json) is said as such."""
    where = f"line {exc.lineno}, column {exc.colno}, character {exc.pos + 1}"
    if exc.msg == "Extra data":
        return (
            f"a second value starts at {where}, after the first one ended (a .json file holds one array of "
            "records; a file of one record per line is JSON Lines: name it .jsonl)"
        )
    return f"{exc.msg} ({where})"


def _read_json(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    try:
        data = textguard.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON: {json_problem(exc)}") from None
    except ValueError as exc:
        raise UserError(f"{path}: not valid JSON: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise UserError(f"{path}: expected a JSON array of pair records")
    for number, record in enumerate(data, start=1):
        yield f"item {number}", record


def _read_csv(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    reader = csv.DictReader(text.splitlines(keepends=True), delimiter=separator(first_line(text)))
    header = reader.fieldnames or []
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:  # csv would keep the last of them without a word
        raise IngestError(str(path), [f"header: column {name!r} appears more than once" for name in repeated])
    bad: list[str] = []
    for number, row in enumerate(reader, start=2):
        if None in row:
            bad.append(f"row {number}: more cells than header columns")
            continue
        if None in row.values() and any("\n" in value for value in row.values() if value):
            bad.append(
                f"row {number}: a quote opened in this row is never closed (the rest of the file was read "
                "as one cell)"
            )
            break
        record: dict[str, Any] = {key: value for key, value in row.items() if key is not None}
        n_bad = len(bad)
        for field in (*LIST_FIELDS, "metadata"):
            cell = record.get(field)
            if isinstance(cell, str) and cell.strip():
                try:
                    record[field] = textguard.loads(cell)
                except json.JSONDecodeError as exc:
                    bad.append(
                        f"row {number}, field {field}: not valid JSON: {exc.msg} (character {exc.pos + 1} "
                        "of the cell)"
                    )
                except ValueError as exc:
                    bad.append(f"row {number}, field {field}: not valid JSON: {exc}")
            elif isinstance(cell, str) and field in LIST_FIELDS:
                record[field] = []
        if len(bad) == n_bad:  # a row with an undecodable cell is reported once, not validated too
            yield f"row {number}", record
    if bad:
        raise IngestError(str(path), bad[:MAX_PROBLEMS], len(bad))


PARQUET_BATCH = 64  # rows decoded at a time: a batch is measured before it becomes Python objects


def _decoded_bytes(array: Any) -> int:
    """The bytes `array` takes once every value is written out: a dictionary-typed column counts each
    row's value (not the dictionary once), nested lists and structs count their children."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_dictionary(kind):
        values = array.dictionary
        if (
            pa.types.is_string(values.type)
            or pa.types.is_binary(values.type)
            or pa.types.is_large_string(values.type)
        ):
            sizes = pc.take(pc.binary_length(values), array.indices)
            return int(pc.sum(sizes).as_py() or 0) + array.indices.nbytes
        per_value = _decoded_bytes(values) / max(len(values), 1)
        return int(per_value * len(array)) + array.indices.nbytes
    if isinstance(array, pa.ChunkedArray):
        return sum(_decoded_bytes(chunk) for chunk in array.chunks)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _decoded_bytes(array.values) + array.offsets.nbytes
    if pa.types.is_struct(kind):
        return sum(_decoded_bytes(array.field(k)) for k in range(kind.num_fields))
    return int(array.nbytes)


def _read_parquet(path: Path, max_bytes: int) -> Iterator[tuple[str, Any]]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
        metadata = parquet.metadata
        declared = sum(metadata.row_group(k).total_byte_size for k in range(metadata.num_row_groups))
    except Exception as exc:  # pyarrow raises several types for a broken file
        raise UserError(f"{path}: not a readable Parquet file: {exc}") from None
    if declared > max_bytes:
        raise textguard.over_max_bytes(
            path, max_bytes, f"its {metadata.num_rows:,} rows hold {declared:,} bytes"
        )
    number = 0
    total = 0
    batches = parquet.iter_batches(batch_size=PARQUET_BATCH)
    while True:
        try:  # a file whose footer reads fine can still have broken pages further on
            batch = next(batches, None)
            if batch is not None:
                total += sum(_decoded_bytes(column) for column in batch.columns)  # every repeat counts
                if total > max_bytes:
                    raise textguard.over_max_bytes(path, max_bytes, f"at row {number + batch.num_rows:,}")
            records = batch.to_pylist() if batch is not None else []
        except UserError:
            raise
        except Exception as exc:
            raise UserError(f"{path}: not a readable Parquet file (after row {number}): {exc}") from None
        if batch is None:
            return
        for record in records:
            number += 1
            yield f"row {number}", record


# -------------------------------------------------------------------------------------------- validation


def _text(record: dict[str, Any], field: str, problems: list[str], *, required: bool = True) -> str:
    value = record.get(field)
    if value is None:
        if required:
            problems.append(f"field {field}: missing")
        return ""
    if not isinstance(value, str):
        problems.append(f"field {field}: expected text, got {type(value).__name__}")
        return ""
    if required and not value.strip():
        problems.append(f"field {field}: empty")
    return value


def _entries(
    record: dict[str, Any], field: str, required: tuple[str, ...], problems: list[str]
) -> list[dict[str, Any]]:
    value = record.get(field)
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(f"field {field}: expected a list, got {type(value).__name__}")
        return []
    clean = []
    for index, entry in enumerate(value):
        if not isinstance(entry, dict):
            problems.append(f"field {field}[{index}]: expected an object, got {type(entry).__name__}")
            continue
        for key in required:
            item = entry.get(key)
            if not isinstance(item, str) or not item or item.isspace():
                problems.append(f"field {field}[{index}].{key}: missing or not text")
        clean.append(entry)
    return clean


def validate_record(record: Any, *, warnings: list[str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """Normalise one record to the Pair columns; returns (row, problems), problems naming fields.

    Bidirectional controls and zero-width characters are not problems but are added to `warnings`."""
    if not isinstance(record, dict):
        return {}, [f"expected an object, got {type(record).__name__}"]
    problems: list[str] = []
    plain = "question" not in record and "prompt" in record
    raw_id = record.get("id")
    as_text = isinstance(raw_id, str | int) and not isinstance(raw_id, bool)  # True is no id
    external_id = str(raw_id).strip() if as_text else ""
    if not external_id:
        got = "missing" if raw_id is None or as_text else f"expected text, got {type(raw_id).__name__}"
        problems.append(f"field id: {got}")  # an id of spaces is missing too
    question = _text(record, "prompt" if plain else "question", problems)
    chosen = _text(record, "chosen", problems)
    rejected = _text(record, "rejected", problems)
    if chosen.strip() and _same_text(chosen, rejected):
        problems.append("field rejected: identical to chosen")
    profile = _entries(record, "profile", ("text",), problems)
    rubric = _entries(record, "rubric_aspects", ("aspect",), problems)
    if not plain and "rubric_aspects" not in record:
        problems.append(
            "field rubric_aspects: missing (use prompt/chosen/rejected for pairs without a rubric)"
        )
    elif not plain and isinstance(record.get("rubric_aspects"), list) and not record["rubric_aspects"]:
        problems.append("field rubric_aspects: needs at least one aspect")
    narrative = _text(record, "narrative", problems, required=False)
    category = _text(record, "category", problems, required=False)
    meta = {key: value for key, value in record.items() if key not in (*NATIVE_FIELDS, "prompt")}
    row = {
        "external_id": external_id,
        "question": question,
        "profile": profile,
        "rubric": rubric,
        "narrative": narrative,
        "category": category,
        "chosen": chosen,
        "rejected": rejected,
        "metadata": meta,
        "is_gold": bool(meta.get(GOLD, False)) if isinstance(meta.get(GOLD, False), bool) else False,
        "control": _control(record, problems),
        "owner": _owner(record, problems),
    }
    # Serialized once here (stored and hashed as is); one C-level pass per text finds lone surrogates,
    # and only then is the record walked to name the field.
    texts = {key: to_json(row[key]) for key in JSON_FIELDS}
    plain_texts = (external_id, question, chosen, rejected, narrative, category, *texts.values())
    if not all(map(_encodable, plain_texts)):
        for field, value in record.items():
            bad = _unencodable(value, f"field {field}")
            if bad is not None or not _encodable(str(field)):
                problems.append(
                    f"{bad or f'field {field!r}'}: contains an invalid character (half of a UTF-16 "
                    "surrogate pair, e.g. a JSON escape \\ud800 without its partner)"
                )
    problems.extend(_engine_neutral_problems(record, external_id, category, plain_texts[:6], texts.values()))
    if warnings is not None and any(map(textguard.has_invisible, plain_texts)):
        for field, value in record.items():
            warnings.extend(textguard.invisible_characters(value, f"field {field}"))
    row.update({key: RawJSON(text) for key, text in texts.items()})
    return row, problems


def missing_pair_fields(names: Collection[str]) -> list[str]:
    """The fields every pair record needs that are not among `names` (quoted, for a message), as
    :func:`validate_record` requires them: NEEDED_FIELDS, or in a plain preference file id, prompt,
    chosen and rejected."""
    plain = "question" not in names and "prompt" in names
    needed = ("id", "prompt", "chosen", "rejected") if plain else NEEDED_FIELDS
    shown = {
        "question": "'question' (or 'prompt')",
        "rubric_aspects": "'rubric_aspects' (pairs without a rubric give 'prompt', not 'question')",
    }
    return [shown.get(field, repr(field)) for field in needed if field not in names]


def _same_text(chosen: str, rejected: str) -> bool:
    """Whether two responses are the same text, ignoring outer spaces and invisible characters."""
    if chosen.strip() == rejected.strip():
        return True
    return textguard.strip_invisible(chosen).strip() == textguard.strip_invisible(rejected).strip()


def _engine_neutral_problems(
    record: dict[str, Any], external_id: str, category: str, plain: tuple[str, ...], encoded: Iterable[str]
) -> list[str]:
    """What PostgreSQL would refuse and SQLite would store (NUL, over-long ids and texts, NaN), and a
    control character in the id or the category (they reach terminals and file names), named by field
    and checked the same way on both engines. Fast on clean records: one pass per text, and the
    record is walked only when one of them hits."""
    problems = [
        f"field {field}: {problem}"
        for field, value, most in (
            ("id", external_id, textguard.MAX_ID),
            ("category", category, textguard.MAX_CATEGORY),
        )
        if (problem := textguard.input_problem(value, name=True, limit=most)) is not None
    ]
    limit = textguard.max_text_chars()
    suspicious = any("\x00" in text or len(text) > limit for text in plain) or any(
        "\\u0000" in text or "NaN" in text or "Infinity" in text or len(text) > limit for text in encoded
    )
    if suspicious:
        for field, value in record.items():
            problems.extend(textguard.value_problems(value, f"field {field}", limit=limit))
    return problems


FILE_CONTROLS = (GOLD, POSITIVE, TRAINING)


#: The record keys that name a profile's owner, in order of precedence (kept in the metadata too).
OWNER_KEYS: tuple[str, ...] = ("owner", "user_id")
OWNER_CHARS = 200


def _owner(record: dict[str, Any], problems: list[str]) -> str:
    """The profile's owner the record names ("" when none): text or a whole number, at most 200
    characters, one line without control, bidirectional or zero-width characters."""
    for key in OWNER_KEYS:
        value = record.get(key)
        if value is None or value == "":
            continue
        if isinstance(value, bool) or not isinstance(value, str | int):
            problems.append(f"field {key}: expected text or a whole number, got {type(value).__name__}")
            return ""
        owner = str(value).strip()
        problem = textguard.input_problem(owner, name=True, limit=OWNER_CHARS)
        if problem is None and textguard.has_invisible(owner):
            problem = "contains a bidirectional control or zero-width character"
        if problem is not None:  # a name the CLI prints and the pages show: one plain line of text
            problems.append(f"field {key}: {problem}")
            return ""
        return owner
    return ""


def _control(record: dict[str, Any], problems: list[str]) -> str:
    """The record's `control` kind ("" for a main pair); a gold control needs its `expected` answers.

    `expected` (kept in the metadata) may hold "preference" (-2..2, positive = chosen better) and
    "scores" ({"chosen"|"rejected": {item: value}}); a positive control may name the quality
    dimensions its `rejected` response is worse on in "worse_on" (default: all).
    """
    control = record.get("control", "")
    if control in ("", None):
        return ""
    if not isinstance(control, str) or control not in FILE_CONTROLS:
        kinds = ", ".join(FILE_CONTROLS)
        problems.append(f"field control: expected one of {kinds} (or empty), got {control!r}")
        return ""
    expected = record.get("expected")
    if control == GOLD:
        if not isinstance(expected, dict) or not ({"preference", "scores"} & set(expected)):
            problems.append("field expected: a gold control needs expected answers (preference, scores)")
            return control
        preference = expected.get("preference")
        if preference is not None and (isinstance(preference, bool) or preference not in PREFERENCE_DOMAIN):
            problems.append("field expected.preference: expected -2, -1, 0, 1 or 2 (2 = chosen much better)")
        scores = expected.get("scores", {})
        if not isinstance(scores, dict) or set(scores) - {"chosen", "rejected"}:
            problems.append('field expected.scores: expected {"chosen": {...}, "rejected": {...}}')
        elif not all(
            isinstance(items, dict)
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in items.values())
            for items in scores.values()
        ):
            problems.append("field expected.scores: every expected score must be a number")
    worse_on = record.get("worse_on")
    names_ok = isinstance(worse_on, list) and all(isinstance(w, str) for w in worse_on)
    if worse_on is not None and not names_ok:
        problems.append("field worse_on: expected a list of quality dimension names")
    return control


def _encodable(text: str) -> bool:
    """Whether `text` is valid Unicode for UTF-8 (no lone surrogate, which JSON escapes can produce)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unencodable(value: Any, where: str) -> str | None:
    """Where in `value` (a parsed record field) a text cannot be stored, or None when all can."""
    if isinstance(value, str):
        return None if _encodable(value) else where
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and not _encodable(key):
                return f"{where} (a key)"
            found = _unencodable(item, f"{where}.{key}")
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _unencodable(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None


_CANONICAL = json.JSONEncoder(sort_keys=True, default=str, ensure_ascii=False)


def to_json(value: Any) -> str:
    """The canonical JSON text of a list or mapping field (sorted keys), as stored and hashed."""
    return _CANONICAL.encode(value)


def content_hash(row: dict[str, Any]) -> str:
    """A stable hash of a pair's content, to tell an unchanged re-import from a changed record.

    The list and mapping fields count by their canonical JSON, which may be given already serialized.
    """
    digest = hashlib.sha256()
    for key in HASHED_FIELDS:
        value = row[key]
        data = (value if isinstance(value, str) else to_json(value)).encode("utf-8", "surrogatepass")
        digest.update(b"%d:" % len(data))
        digest.update(data)
    return digest.hexdigest()


def storable(row: dict[str, Any]) -> dict[str, Any]:
    """A validated row as inserted: JSON fields serialized once (db.RawJSON), hashed from that text."""
    stored = row | {
        key: row[key] if isinstance(row[key], RawJSON) else RawJSON(to_json(row[key])) for key in JSON_FIELDS
    }
    stored["content_hash"] = content_hash(stored)
    return stored


RecordCheck = Callable[[dict[str, Any], str], tuple[dict[str, Any], list[str]]]
#: What a kind of file needs of its columns or fields: given the names a file has, each one it needs
#: and lacks, quoted for a message (e.g. :func:`missing_pair_fields`).
MissingNames = Callable[[Collection[str]], list[str]]


def _wholly_missing(path: Path, missing: MissingNames | None, names: set[str], *, every_record: bool) -> None:
    """Refuse in one line a file that lacks a column its kind needs (CSV, Parquet: every row has the
    header's columns) or whose every record lacks a field it needs (JSON, when `every_record`: every
    record was read and was an object, and there were several: one record's own line names its line),
    rather than one problem per row."""
    if missing is None or not names:
        return
    absent = missing(names)
    if not absent:
        return
    suffix = path.suffix.lower()
    if suffix in TABULAR:
        raise UserError(
            f"{path}: {'header: ' if suffix == '.csv' else ''}missing column(s) {', '.join(absent)}"
        )
    if every_record:
        raise UserError(f"{path}: missing field(s) {', '.join(absent)} in every record")


def collect_records(
    path: str | Path,
    check: RecordCheck,
    *,
    what: str,
    progress: Progress | None = None,
    max_bytes: int = textguard.MAX_BYTES_DEFAULT,
    missing: MissingNames | None = None,
) -> list[dict[str, Any]]:
    """Read every record of a file through `check(record, where) -> (row, problems)`; refuse a
    repeated ``external_id``. All or nothing: raise IngestError listing up to 20 problems (each with
    its line or row and field), or UserError when the file holds no `what` records or more than
    `max_bytes` of decoded text. A faulty file that lacks a column `missing` names (or whose every
    record lacks such a field) is one UserError naming the file and those names instead."""
    path = Path(path)
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    n_problems = 0
    first_seen: dict[str, str] = {}
    names: set[str] = set()  # every key of every record read
    objects = others = 0  # records read that are objects, and that are not
    try:
        for where, record in read_records(path, max_bytes=max_bytes):
            if isinstance(record, dict):
                names.update(record)
                objects += 1
            else:
                others += 1
            row, found = check(record, where)
            external_id = row.get("external_id")
            if external_id and external_id in first_seen:
                found.append(
                    f"field id: duplicate id {external_id[:80]!r} (first at {first_seen[external_id]})"
                )
            elif external_id:
                first_seen[external_id] = where
            if found:
                n_problems += len(found)
                problems.extend(f"{where}, {p}" for p in found[: max(0, MAX_PROBLEMS - len(problems))])
            else:
                rows.append(row)
            if progress is not None:
                progress(1)
    except IngestError as exc:
        _wholly_missing(path, missing, names, every_record=False)
        merged = (problems + exc.problems)[:MAX_PROBLEMS]
        raise IngestError(str(path), merged, n_problems + exc.total) from None
    if problems:
        _wholly_missing(path, missing, names, every_record=objects > 1 and not others)
        raise IngestError(str(path), problems, n_problems)
    if not rows:
        raise UserError(f"{path}: no {what} records found")
    return rows


def load_pairs(
    path: str | Path,
    *,
    progress: Progress | None = None,
    warnings: list[str] | None = None,
    max_bytes: int = textguard.MAX_BYTES_DEFAULT,
) -> list[dict[str, Any]]:
    """Read and validate a whole pair file; raise IngestError listing up to 20 problems.

    Texts with bidirectional controls or zero-width characters are added to `warnings` (where, field)."""

    def check(record: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
        noticed: list[str] = []
        row, found = validate_record(record, warnings=noticed)
        if warnings is not None:
            warnings.extend(f"{where}, {w}" for w in noticed)
        return row, found

    return collect_records(
        path, check, what="pair", progress=progress, max_bytes=max_bytes, missing=missing_pair_fields
    )


# -------------------------------------------------------------------------------------------- importing


def _registered(stored: Any) -> Any:
    """A stored config as the current schema reads it (a section added since then gets its defaults)."""
    try:
        return parse_config(dict(stored)).model_dump()
    except ConfigError:
        return stored


def ensure_study(connection: Any, name: str, config: StudyConfig | None) -> int:
    """The id of study `name`, creating it with `config` (or the default) on first import."""
    found = connection.execute(
        select(col(Study.id), col(Study.config)).where(col(Study.name) == name)
    ).first()
    if found is not None:
        if config is not None and config.model_dump() != _registered(found.config):
            raise UserError(
                f"study {name!r} already exists with another configuration; a study's config is fixed "
                "at its first import"
            )
        return int(found.id)
    textguard.check_study_name(name)
    config = config or load_config()
    result = connection.execute(insert(Study).values(name=name, config=config.model_dump()))
    return int(result.inserted_primary_key[0])


def import_file(
    engine: Engine,
    path: str | Path,
    *,
    study: str,
    config: StudyConfig | None = None,
    replace: bool = False,
    progress: Progress | None = None,
    account: Account,
    strict: bool = False,
    max_bytes: int = textguard.MAX_BYTES_DEFAULT,
) -> ImportSummary:
    """Import a pair file into `study` in one transaction; nothing is written if anything is wrong.

    Re-importing identical records is a no-op; a changed record under an existing id is refused
    unless `replace` is set (then it is updated, but only while it has no judgments). With an
    Only a researcher (or SYSTEM) may import; the import is logged under that account (SYSTEM: no user).
    """
    with Session(engine) as check:
        require_role(check, account, "researcher")
    textguard.check_study_name(study)
    user_id = account.id or None
    warnings: list[str] = []
    rows = [
        storable(row) for row in load_pairs(path, progress=progress, warnings=warnings, max_bytes=max_bytes)
    ]
    if strict and warnings:
        raise IngestError(str(path), [f"{w} (--strict)" for w in warnings[:MAX_PROBLEMS]], len(warnings))
    if getattr(engine.dialect, "_json_serializer", None) is not json_serializer:  # not from make_engine
        rows = [row | {key: json.loads(row[key]) for key in JSON_FIELDS} for row in rows]
    with engine.begin() as connection:
        study_id = ensure_study(connection, study, config)
        existing = {
            r.external_id: (r.id, r.content_hash, r.n_done)
            for r in connection.execute(
                select(col(Pair.external_id), col(Pair.id), col(Pair.content_hash), col(Pair.n_done)).where(
                    col(Pair.study_id) == study_id
                )
            )
        }
        new_rows, changed, unchanged = [], [], 0
        for row in rows:
            found = existing.get(row["external_id"])
            if found is None:
                new_rows.append(row | {"study_id": study_id})
            elif found[1] == row["content_hash"]:
                unchanged += 1
            else:
                changed.append((found, row))
        if changed and not replace:
            ids = ", ".join(repr(row["external_id"]) for _, row in changed[:5])
            raise UserError(
                f"{path}: {len(changed)} record(s) changed under an existing id ({ids}); "
                "nothing was imported; use --replace to update them"
            )
        judged = [row["external_id"] for (_, _, n_done), row in changed if n_done > 0]
        if judged:
            raise UserError(f"{path}: cannot replace pairs that already have judgments: {judged[:5]}")
        if new_rows:
            connection.execute(insert(Pair), new_rows)
        for (pair_id, _, _), row in changed:
            connection.execute(update(Pair).where(Pair.id == pair_id).values(**row))
        summary = ImportSummary(study, len(new_rows), unchanged, len(changed), tuple(warnings))
        connection.execute(
            insert(Event).values(
                user_id=user_id,
                action="import",
                detail={
                    "study": study,
                    "file": Path(path).name,
                    "imported": summary.imported,
                    "unchanged": summary.unchanged,
                    "replaced": summary.replaced,
                },
            )
        )
    return summary
