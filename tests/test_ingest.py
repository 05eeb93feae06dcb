"""Reading, validating and importing pair files (annotator.intake.ingest and `annotator import`)."""

import json
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, create_engine, select
from typer.testing import CliRunner

from annotator.cli import app
from annotator.errors import IngestError, UserError
from annotator.intake import ingest
from annotator.people.authorization import SYSTEM
from annotator.store.models import Assignment, Event, Pair, Study
from tests.utils.factories import (
    counts,
    make_plain_record,
    make_record,
    make_records,
    make_study,
    make_user,
    write_csv,
    write_json,
    write_jsonl,
    write_parquet,
)

runner = CliRunner()


def _pairs(engine: Engine) -> dict[str, Pair]:
    with Session(engine) as session:
        return {pair.external_id: pair for pair in session.exec(select(Pair))}


# ------------------------------------------------------------------------------------------ good files

WRITERS: dict[str, Callable[[Path, list[dict[str, Any]]], Path]] = {
    "jsonl": write_jsonl,
    "json": write_json,
    "csv": write_csv,
    "parquet": write_parquet,
}


@pytest.mark.parametrize("suffix", list(WRITERS))
def test_every_format_imports_the_same_pairs(engine: Engine, tmp_path: Path, suffix: str) -> None:
    records = make_records(3, n_posts=4, n_aspects=2)
    path = WRITERS[suffix](tmp_path / f"pairs.{suffix}", records)
    summary = ingest.import_file(engine, path, study="s1", account=SYSTEM)
    assert (summary.imported, summary.unchanged, summary.replaced) == (3, 0, 0)
    pair = _pairs(engine)["pair-1"]
    assert pair.question == records[1]["question"]
    assert pair.profile == records[1]["profile"]
    assert pair.rubric == records[1]["rubric_aspects"]
    assert (pair.chosen, pair.rejected) == (records[1]["chosen"], records[1]["rejected"])
    assert (pair.narrative, pair.category) == (records[1]["narrative"], "cooking")


def test_the_content_hash_does_not_depend_on_the_format(tmp_path: Path) -> None:
    records = make_records(2)
    hashes = {
        suffix: [
            ingest.content_hash(row) for row in ingest.load_pairs(writer(tmp_path / f"p.{suffix}", records))
        ]
        for suffix, writer in WRITERS.items()
    }
    assert len({tuple(h) for h in hashes.values()}) == 1


def test_the_content_hash_does_not_depend_on_key_order(tmp_path: Path) -> None:
    record = make_record(0, source={"b": 1, "a": 2})
    shuffled = dict(reversed(list(record.items())))
    shuffled["profile"] = [dict(reversed(list(post.items()))) for post in record["profile"]]
    shuffled["source"] = {"a": 2, "b": 1}
    rows = [
        ingest.load_pairs(write_jsonl(tmp_path / f"{n}.jsonl", [r]))[0]
        for n, r in enumerate([record, shuffled])
    ]
    assert ingest.content_hash(rows[0]) == ingest.content_hash(rows[1])


def test_the_stored_hash_is_the_hash_of_the_content(engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [make_record(0)])
    ingest.import_file(engine, path, study="s1", account=SYSTEM)
    pair = _pairs(engine)["pair-0"]
    row = {"question": pair.question, "profile": pair.profile, "rubric": pair.rubric, "metadata": pair.meta}
    row |= {
        "narrative": pair.narrative,
        "category": pair.category,
        "chosen": pair.chosen,
        "rejected": pair.rejected,
    }
    assert pair.content_hash == ingest.content_hash(row) == ingest.content_hash(ingest.load_pairs(path)[0])


def test_an_engine_not_made_by_make_engine_stores_json_once(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    plain = create_engine(db_url)
    ingest.import_file(
        plain, write_jsonl(tmp_path / "p.jsonl", make_records(1, n_posts=2)), study="s1", account=SYSTEM
    )
    plain.dispose()
    pair = _pairs(engine)["pair-0"]
    assert pair.profile == make_record(0, n_posts=2)["profile"] and pair.meta == {}


def test_parquet_values_that_are_not_json_are_kept_as_text(engine: Engine, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = make_records(1)
    table = pa.Table.from_pylist(records).append_column(
        "collected", pa.array([datetime(2025, 1, 2, 3, 4, 5)], pa.timestamp("s"))
    )
    pq.write_table(table, tmp_path / "p.parquet")
    ingest.import_file(engine, tmp_path / "p.parquet", study="s1", account=SYSTEM)
    assert _pairs(engine)["pair-0"].meta == {"collected": "2025-01-02 03:04:05"}


def test_plain_prompt_chosen_rejected_records_import(engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "plain.jsonl", [make_plain_record(0), make_plain_record(1)])
    assert ingest.import_file(engine, path, study="plain", account=SYSTEM).imported == 2
    pair = _pairs(engine)["plain-0"]
    assert (pair.question, pair.chosen, pair.rejected) == (
        "Plain question 0?",
        "Good answer 0.",
        "Worse answer 0.",
    )
    assert (pair.profile, pair.rubric, pair.meta) == ([], [], {})


def test_extra_keys_are_kept_as_metadata(engine: Engine, tmp_path: Path) -> None:
    record = make_record(0, source="lamp-qa", scores={"judge": 0.9})
    ingest.import_file(engine, write_jsonl(tmp_path / "p.jsonl", [record]), study="s1", account=SYSTEM)
    assert _pairs(engine)["pair-0"].meta == {"source": "lamp-qa", "scores": {"judge": 0.9}}


def test_a_json_object_with_a_data_list_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"data": make_records(2)}), encoding="utf-8")
    assert [row["external_id"] for row in ingest.load_pairs(path)] == ["pair-0", "pair-1"]


def test_a_line_separator_inside_a_jsonl_string_is_text(tmp_path: Path) -> None:
    record = make_record(0, narrative="first part\u2028second part\x85third")
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    assert ingest.load_pairs(path)[0]["narrative"] == "first part\u2028second part\x85third"


@pytest.mark.parametrize("suffix", ["jsonl", "json", "csv"])
def test_a_byte_order_mark_is_ignored(tmp_path: Path, suffix: str) -> None:
    path = WRITERS[suffix](tmp_path / f"p.{suffix}", make_records(2))
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert [row["external_id"] for row in ingest.load_pairs(path)] == ["pair-0", "pair-1"]


def test_bytes_that_are_not_utf8_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(json.dumps(make_record(0)).encode() + b"\n" + b'{"id": "caf\xe9"}\n')
    with pytest.raises(UserError, match="line 2 is not UTF-8 text"):
        ingest.load_pairs(path)


def test_an_import_writes_one_event(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 2)
    with Session(engine) as session:
        event = session.exec(select(Event).where(Event.action == "import")).one()
    assert event.detail["imported"] == 2 and event.detail["study"] == "s1"


# ------------------------------------------------------------------------------- bad files: nothing written


def _raw(name: str, data: bytes) -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(data)
        return path

    return write


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def _lines(name: str, *records: Any) -> Callable[[Path], Path]:
    return lambda folder: write_jsonl(folder / name, list(records))


BAD_FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "missing file": (lambda folder: folder / "absent.jsonl", "absent.jsonl: no such file"),
    "missing file without a type": (lambda folder: folder / "absent", "absent: no such file"),
    "a folder": (lambda folder: _folder(folder / "pairs.jsonl"), "pairs.jsonl: a folder, not a file"),
    "a folder without a type": (lambda folder: _folder(folder / "in"), "in: a folder, not a file"),
    "unknown extension": (_raw("pairs.txt", b"{}"), "unknown file type '.txt'"),
    "empty file": (_raw("empty.jsonl", b""), "the file is empty"),
    "blank lines only": (_raw("blank.jsonl", b"\n  \n"), "the file is empty"),
    "empty parquet": (_raw("empty.parquet", b""), "not a readable Parquet file"),
    "not utf-8": (_raw("latin1.jsonl", '{"id": "caf\u00e9"}\n'.encode("latin-1")), "not UTF-8 text"),
    "invalid json line": (
        _raw("bad.jsonl", (json.dumps(make_record(0)) + "\n{oops\n").encode()),
        "line 2: not valid JSON",
    ),
    "invalid json document": (_raw("bad.json", b"[{"), "not valid JSON"),
    "json broken deep in a line": (
        _raw("deep.json", b'[{"id": "p", "question": "' + b"x" * 169 + b'" "chosen": "a"}]'),
        "Expecting ',' delimiter (line 1, column 198, character 198)",
    ),
    "json lines named .json": (
        _raw("lines.json", (json.dumps(make_record(0)) + "\n" + json.dumps(make_record(1)) + "\n").encode()),
        f"a second value starts at line 2, column 1, character {len(json.dumps(make_record(0))) + 2}, after "
        "the first one ended (a .json file holds one array of records; a file of one record per line is "
        "JSON Lines: name it .jsonl)",
    ),
    "json not an array": (_raw("obj.json", b'{"id": 1}'), "expected a JSON array"),
    "missing field": (
        _lines("p.jsonl", make_record(0), {k: v for k, v in make_record(1).items() if k != "chosen"}),
        "line 2, field chosen: missing",
    ),
    "missing id": (_lines("p.jsonl", make_record(0, id=None)), "line 1, field id: missing"),
    # an id of spaces was "expected text" (it is text); a float id did not say what it got
    "blank id": (_lines("p.jsonl", make_record(0, id=" \t ")), "line 1, field id: missing"),
    "float id": (_lines("p.jsonl", make_record(0, id=1.5)), "line 1, field id: expected text, got float"),
    "missing rubric": (
        _lines("p.jsonl", {k: v for k, v in make_record(0).items() if k != "rubric_aspects"}),
        "line 1, field rubric_aspects: missing",
    ),
    "empty rubric": (
        _lines("p.jsonl", make_record(0, rubric_aspects=[])),
        "line 1, field rubric_aspects: needs at least one aspect",
    ),
    "profile not a list": (
        _lines("p.jsonl", make_record(0, profile="I like cooking")),
        "line 1, field profile: expected a list, got str",
    ),
    "aspect without title": (
        _lines("p.jsonl", make_record(0, rubric_aspects=[{"reason": "r", "evidence": "e"}])),
        "line 1, field rubric_aspects[0].aspect: missing or not text",
    ),
    "question not text": (_lines("p.jsonl", make_record(0, question=42)), "field question: expected text"),
    "record not an object": (_lines("p.jsonl", ["a", "list"]), "line 1, expected an object, got list"),
    "empty chosen": (_lines("p.jsonl", make_record(0, chosen="  ")), "line 1, field chosen: empty"),
    "empty rejected": (_lines("p.jsonl", make_record(0, rejected="")), "line 1, field rejected: empty"),
    "chosen equals rejected": (
        _lines("p.jsonl", make_record(0, chosen="Same text.", rejected="Same text.")),
        "line 1, field rejected: identical to chosen",
    ),
    "duplicate id": (
        _lines("p.jsonl", make_record(0), make_record(1), make_record(0)),
        "line 3, field id: duplicate id 'pair-0' (first at line 1)",
    ),
    "csv list column not json": (
        lambda folder: write_csv(folder / "p.csv", [make_record(0), make_record(1, profile="[not json")]),
        "row 3, field profile: not valid JSON: Expecting value (character 2 of the cell)",
    ),
    "csv with only a header": (_raw("p.csv", b"id,question,chosen,rejected\n"), "no pair records found"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_file_is_refused_and_writes_nothing(engine: Engine, tmp_path: Path, case: str) -> None:
    make_study(engine, tmp_path, 2)  # an existing study must stay as it is
    before = counts(engine)
    write, message = BAD_FILES[case]
    path = write(tmp_path)
    with pytest.raises(UserError, match=re.escape(message)):
        ingest.import_file(engine, path, study="s1", account=SYSTEM)
    with pytest.raises(UserError):
        ingest.import_file(engine, path, study="brand-new", account=SYSTEM)
    assert counts(engine) == before


def test_a_csv_cell_that_is_not_json_is_reported_once(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "p.csv", [make_record(0, rubric_aspects="{oops")])
    with pytest.raises(IngestError) as info:
        ingest.load_pairs(path)
    assert info.value.problems == [
        "row 2, field rubric_aspects: not valid JSON: Expecting property name enclosed in double quotes "
        "(character 2 of the cell)"
    ]


@pytest.mark.nodb
def test_a_csv_header_naming_a_column_twice_is_refused(tmp_path: Path) -> None:
    """csv keeps the last of two same-named columns without a word: the file is refused instead."""
    path = tmp_path / "p.csv"
    path.write_text("id,prompt,chosen,rejected,chosen\np1,q,c,r,c2\n", encoding="utf-8")
    with pytest.raises(IngestError) as info:
        ingest.load_pairs(path)
    assert info.value.problems == ["header: column 'chosen' appears more than once"]


@pytest.mark.nodb
def test_a_quote_never_closed_is_named_at_its_row(tmp_path: Path) -> None:
    """A quote opened and never closed swallows the rest of the file into one cell: said at its row,
    not as cells missing from it."""
    path = tmp_path / "p.csv"
    path.write_text('id,prompt,chosen,rejected\np1,q,c,r\np2,"q,c,r\np3,q,c,r\np4,q,c,r\n', encoding="utf-8")
    with pytest.raises(IngestError) as info:
        ingest.load_pairs(path)
    assert info.value.problems == [
        "row 3: a quote opened in this row is never closed (the rest of the file was read as one cell)"
    ]


def test_at_most_20_problems_are_listed_with_a_count_of_the_rest(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [make_record(i, chosen="") for i in range(30)])
    with pytest.raises(IngestError) as info:
        ingest.load_pairs(path)
    assert len(info.value.problems) == 20
    assert info.value.total == 30
    assert "30 problem(s), nothing was imported" in str(info.value)
    assert "... and 10 more problems" in str(info.value)


def test_json_and_field_problems_are_counted_together(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text("{bad\n" + json.dumps(make_record(1, chosen="")) + "\n", encoding="utf-8")
    with pytest.raises(IngestError) as info:
        ingest.load_pairs(path)
    assert info.value.total == 2
    assert sorted(info.value.problems) == [
        "line 1: not valid JSON: Expecting property name enclosed in double quotes (column 2)",
        "line 2, field chosen: empty",
    ]


# ----------------------------------------------------------------------------------- re-import, replace


def test_reimporting_the_same_file_is_a_no_op(engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", make_records(4))
    ingest.import_file(engine, path, study="s1", account=SYSTEM)
    before = _pairs(engine)
    summary = ingest.import_file(engine, path, study="s1", account=SYSTEM)
    assert str(summary) == "study 's1': imported 0, unchanged 4"
    after = _pairs(engine)
    assert {k: (p.id, p.content_hash) for k, p in after.items()} == {
        k: (p.id, p.content_hash) for k, p in before.items()
    }


def test_new_records_are_added_next_to_unchanged_ones(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 3)
    summary = ingest.import_file(
        engine, write_jsonl(tmp_path / "more.jsonl", make_records(5)), study="s1", account=SYSTEM
    )
    assert (summary.imported, summary.unchanged) == (2, 3)


def test_a_changed_record_is_refused_without_replace(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 2)
    before = counts(engine)
    records = [*make_records(2), make_record(7)]
    records[0]["chosen"] = "A rewritten chosen response."
    with pytest.raises(UserError, match=r"1 record\(s\) changed under an existing id \('pair-0'\)"):
        ingest.import_file(
            engine, write_jsonl(tmp_path / "changed.jsonl", records), study="s1", account=SYSTEM
        )
    assert counts(engine) == before
    assert _pairs(engine)["pair-0"].chosen == make_record(0)["chosen"]


def test_a_changed_record_is_updated_with_replace(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 2)
    pair_id = _pairs(engine)["pair-0"].id
    records = make_records(2)
    records[0] |= {"chosen": "A rewritten chosen response.", "source": "v2"}
    path = write_jsonl(tmp_path / "changed.jsonl", records)
    summary = ingest.import_file(engine, path, study="s1", replace=True, account=SYSTEM)
    assert (summary.imported, summary.unchanged, summary.replaced) == (0, 1, 1)
    pair = _pairs(engine)["pair-0"]
    assert (pair.id, pair.chosen, pair.meta) == (pair_id, "A rewritten chosen response.", {"source": "v2"})
    assert ingest.import_file(engine, path, study="s1", account=SYSTEM).unchanged == 2


def test_a_judged_pair_cannot_be_replaced(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 1)
    with Session(engine) as session:
        pair = session.exec(select(Pair)).one()
        pair.n_done = 1
        session.add(pair)
        session.commit()
    changed = write_jsonl(tmp_path / "c.jsonl", [make_record(0, chosen="Another text.")])
    with pytest.raises(UserError, match="already have judgments"):
        ingest.import_file(engine, changed, study="s1", replace=True, account=SYSTEM)


def test_the_same_id_in_another_study_is_a_different_pair(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 2, study="s1")
    assert make_study(engine, tmp_path, 2, study="s2").imported == 2
    with Session(engine) as session:
        assert len(session.exec(select(Study)).all()) == 2


def test_a_valid_file_after_a_bad_one_imports(engine: Engine, tmp_path: Path) -> None:
    bad = write_jsonl(tmp_path / "bad.jsonl", [make_record(0), make_record(1, rejected="")])
    with pytest.raises(IngestError):
        ingest.import_file(engine, bad, study="s1", account=SYSTEM)
    good = write_jsonl(tmp_path / "good.jsonl", make_records(2))
    assert ingest.import_file(engine, good, study="s1", account=SYSTEM).imported == 2


def test_gold_pairs_are_marked(engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [make_record(0, gold=True), make_record(1, gold="yes")])
    ingest.import_file(engine, path, study="s1", account=SYSTEM)
    pairs = _pairs(engine)
    assert (pairs["pair-0"].is_gold, pairs["pair-1"].is_gold) == (True, False)


def test_progress_is_reported_per_record(tmp_path: Path) -> None:
    seen: list[int] = []
    ingest.load_pairs(write_jsonl(tmp_path / "p.jsonl", make_records(5)), progress=seen.append)
    assert sum(seen) == 5


def test_assignments_survive_a_reimport(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 2)
    with Session(engine) as session:
        user = make_user(session, "ann")
        pair = session.exec(select(Pair)).first()
        assert pair is not None
        session.add(
            Assignment(
                study_id=pair.study_id,
                pair_id=pair.id or 0,
                annotator_id=user.id or 0,
                chosen_side="A",
                position=1,
            )
        )
        session.commit()
    make_study(engine, tmp_path, 2)
    with Session(engine) as session:
        assert len(session.exec(select(Assignment)).all()) == 1


# ---------------------------------------------------------------------------------------------- the CLI


def test_cli_import_prints_the_summary(env_db: str, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", make_records(3))
    first = runner.invoke(app, ["import", str(path), "--study", "s1"])
    assert first.exit_code == 0, first.output
    assert "imported 3, unchanged 0" in first.stdout
    second = runner.invoke(app, ["import", str(path), "-s", "s1"])
    assert "imported 0, unchanged 3" in second.stdout


def test_cli_import_error_exits_1_without_traceback(env_db: str, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [make_record(0), make_record(1, chosen="")])
    result = runner.invoke(app, ["import", str(path), "--study", "s1"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "line 2, field chosen: empty" in result.stderr
    assert "nothing was imported" in result.stderr


def test_cli_import_replace_flag(env_db: str, tmp_path: Path) -> None:
    runner.invoke(app, ["import", str(write_jsonl(tmp_path / "a.jsonl", make_records(1))), "-s", "s1"])
    changed = write_jsonl(tmp_path / "b.jsonl", [make_record(0, chosen="New text.")])
    refused = runner.invoke(app, ["import", str(changed), "-s", "s1"])
    assert refused.exit_code == 1 and "--replace" in refused.stderr
    replaced = runner.invoke(app, ["import", str(changed), "-s", "s1", "--replace"])
    assert replaced.exit_code == 0 and "replaced 1" in replaced.stdout
