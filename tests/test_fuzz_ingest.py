"""Hostile input for the importer: random bytes, random JSON, wrong types, truncated files, in every
supported extension. `ingest.import_file` either imports or raises UserError (never another
exception), and a refusal writes nothing."""

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine

from annotator.errors import UserError
from annotator.intake import ingest
from annotator.people.authorization import SYSTEM
from tests.utils.factories import counts, make_plain_record, make_record, write_csv, write_parquet

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
SUFFIXES = ingest.SUFFIXES

# JSON values: text includes lone surrogates, NUL and control characters; numbers include huge ints.
TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=20)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
FIELDS = (
    "id",
    "question",
    "prompt",
    "profile",
    "rubric_aspects",
    "narrative",
    "category",
    "chosen",
    "rejected",
)
# A record with the right keys, each holding anything (right type, wrong type, nested junk).
KEYED = st.fixed_dictionaries(
    {},
    optional=dict.fromkeys(FIELDS, JSON | TEXT)
    | {
        "profile": st.lists(st.dictionaries(st.sampled_from(["id", "category", "text"]), JSON), max_size=3)
        | JSON,
        "rubric_aspects": st.lists(
            st.dictionaries(st.sampled_from(["aspect", "reason", "evidence"]), JSON), max_size=3
        )
        | JSON,
    },
)
# Valid records with one field replaced by something random.
MUTATED = st.builds(
    lambda i, key, value: make_record(i) | {key: value},
    st.integers(0, 5),
    st.sampled_from([*FIELDS, "metadata", "gold"]),
    JSON,
)
RECORD = JSON | KEYED | MUTATED


@pytest.fixture
def db_engine(engine: Engine) -> Iterator[Engine]:
    """The test's database with one study and two pairs already imported (a refusal must keep them)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "seed.jsonl"
        path.write_text("".join(json.dumps(make_record(i)) + "\n" for i in range(2)), encoding="utf-8")
        ingest.import_file(engine, path, study="fuzz", account=SYSTEM)
    yield engine


def check(engine: Engine, payload: bytes, suffix: str) -> None:
    """Import `payload` as a file with `suffix`: a summary or UserError; a refusal writes nothing."""
    before = counts(engine)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"pairs{suffix}"
        path.write_bytes(payload)
        try:
            ingest.import_file(engine, path, study="fuzz", account=SYSTEM)
        except UserError as exc:
            assert str(exc).strip(), "a refusal explains itself"
            assert counts(engine) == before, f"a refused import wrote something: {exc}"
            return
    after = counts(engine)
    assert after["Event"] == before["Event"] + 1
    assert after["Pair"] >= before["Pair"]


def _utf8(text: str) -> str:
    """`text` itself if UTF-8 can hold it, else its JSON escape without the quotes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(text)[1:-1]
    return text


def encode(records: list[Any], suffix: str, *, ascii: bool = True) -> bytes:
    """Records as a file of `suffix`. With `ascii`, JSON escapes every non-ASCII character (a lone
    surrogate arrives as a valid escape, backslash-ud800); without, it is written raw through
    'surrogatepass' (so the file is not UTF-8)."""
    if suffix == ".jsonl":
        lines = "".join(json.dumps(r, ensure_ascii=ascii) + "\n" for r in records)
        return lines.encode("utf-8", "surrogatepass")
    if suffix == ".json":
        return json.dumps(records, ensure_ascii=ascii).encode("utf-8", "surrogatepass")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"f{suffix}"
        rows = [r for r in records if isinstance(r, dict)] or [{"id": "x"}]
        rows = [{str(k): v for k, v in r.items()} for r in rows]
        if suffix == ".csv":
            columns = list(dict.fromkeys(k for r in rows for k in r))

            def cell(value: Any) -> str:
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=ascii)
                return '"' + text.replace('"', '""') + '"'

            lines = [",".join(cell(c) for c in columns)]
            lines += [",".join(cell(r.get(c, "")) for c in columns) for r in rows]
            return "\n".join(lines).encode("utf-8", "surrogatepass")
        try:
            write_parquet(path, rows)
        except Exception:  # pyarrow cannot hold the values in the native schema: store them as JSON text
            import pyarrow as pa
            import pyarrow.parquet as pq

            # Parquet holds UTF-8 only: a key with a lone surrogate is written as its JSON escape
            as_text = [{_utf8(k): json.dumps(v, ensure_ascii=True) for k, v in r.items()} for r in rows]
            pq.write_table(pa.Table.from_pylist(as_text), path)
        return path.read_bytes()


def valid_file(suffix: str) -> bytes:
    records = [make_record(i, n_posts=2) for i in range(10, 14)] + [make_plain_record(1)]
    if suffix in (".jsonl", ".json"):
        return encode(records, suffix)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"f{suffix}"
        (write_csv if suffix == ".csv" else write_parquet)(path, records[:4])
        return path.read_bytes()


VALID = {suffix: valid_file(suffix) for suffix in SUFFIXES}


@SETTINGS
@given(suffix=st.sampled_from(SUFFIXES), payload=st.binary(max_size=400))
def test_random_bytes(db_engine: Engine, suffix: str, payload: bytes) -> None:
    check(db_engine, payload, suffix)


@SETTINGS
@given(
    suffix=st.sampled_from(SUFFIXES), records=st.lists(RECORD, min_size=1, max_size=4), ascii=st.booleans()
)
def test_random_records(db_engine: Engine, suffix: str, records: list[Any], ascii: bool) -> None:
    check(db_engine, encode(records, suffix, ascii=ascii), suffix)


@SETTINGS
@given(suffix=st.sampled_from((".jsonl", ".json")), value=JSON, ascii=st.booleans())
def test_random_json_documents(db_engine: Engine, suffix: str, value: Any, ascii: bool) -> None:
    check(db_engine, json.dumps(value, ensure_ascii=ascii).encode("utf-8", "surrogatepass"), suffix)


@SETTINGS
@given(suffix=st.sampled_from(SUFFIXES), data=st.data())
def test_truncated_and_corrupted_valid_files(db_engine: Engine, suffix: str, data: st.DataObject) -> None:
    payload = VALID[suffix]
    cut = data.draw(st.integers(0, len(payload)), label="cut")
    mangled = bytearray(payload[:cut])
    for _ in range(data.draw(st.integers(0, 3), label="flips")):
        if mangled:
            mangled[data.draw(st.integers(0, len(mangled) - 1))] = data.draw(st.integers(0, 255))
    check(db_engine, bytes(mangled), suffix)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_the_valid_files_import(db_engine: Engine, suffix: str) -> None:
    before = counts(db_engine)
    check(db_engine, VALID[suffix], suffix)
    assert counts(db_engine)["Pair"] > before["Pair"]


@pytest.mark.parametrize(
    ("suffix", "field"),
    [
        *(
            (s, f)
            for s in (".jsonl", ".json")
            for f in ("question", "chosen", "narrative", "profile", "id", "extra")
        ),
        (".csv", "profile"),
        (".csv", "rubric_aspects"),
    ],
)
def test_a_lone_surrogate_is_a_clear_error(db_engine: Engine, suffix: str, field: str) -> None:
    """A JSON escape of half a UTF-16 pair decodes to a string that no database encoder accepts."""
    bad = "broken \ud800 text"
    value: Any = {"profile": [{"id": "p", "text": bad}], "rubric_aspects": [{"aspect": bad}]}.get(field, bad)
    before = counts(db_engine)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"pairs{suffix}"
        path.write_bytes(encode([make_record(20), make_record(21) | {field: value}], suffix))
        with pytest.raises(UserError, match=f"(line|item|row) [0-9]+.*{field}"):
            ingest.import_file(db_engine, path, study="fuzz", account=SYSTEM)
    assert counts(db_engine) == before
