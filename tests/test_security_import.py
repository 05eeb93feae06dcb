"""Importer input that used to crash or that SQLite and PostgreSQL disagreed on: one line naming the
line and field, the same on both engines, nothing written."""

import json
import math
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from annotator import textguard
from annotator.cli import app
from annotator.errors import IngestError, UserError
from annotator.intake import ingest
from annotator.people.authorization import SYSTEM
from annotator.store.models import Pair, Study
from tests.utils.factories import make_record, make_records, write_jsonl

runner = CliRunner()


def _count(engine: Engine) -> tuple[int, int]:
    with Session(engine) as session:
        studies = session.exec(select(func.count()).select_from(Study)).one()
        return int(studies), int(session.exec(select(func.count()).select_from(Pair)).one())


def _refused(engine: Engine, path: Path, match: str, study: str = "s1") -> str:
    with pytest.raises(UserError) as info:
        ingest.import_file(engine, path, study=study, account=SYSTEM)
    assert match in str(info.value), str(info.value)
    assert _count(engine) == (0, 0)
    return str(info.value)


def _line(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps(make_record(0)) + "\n" + text + "\n", encoding="utf-8")
    return path


# -------------------------------------------------------------------------------- crashes (point 7)


def test_json_nested_deeper_than_the_recursion_limit_is_one_line(engine: Engine, tmp_path: Path) -> None:
    _refused(
        engine, _line(tmp_path, "[" * 100_000 + "]" * 100_000), "line 2: not valid JSON: nested more than"
    )


def test_moderately_deep_metadata_is_refused_too(engine: Engine, tmp_path: Path) -> None:
    deep: Any = "x"
    for _ in range(textguard.MAX_DEPTH + 5):
        deep = [deep]
    _refused(
        engine, _line(tmp_path, json.dumps(make_record(1, extra=deep))), "line 2: not valid JSON: nested"
    )


def test_an_integer_longer_than_4300_digits_is_one_line(engine: Engine, tmp_path: Path) -> None:
    text = json.dumps(make_record(1)).replace('"id": "pair-1"', '"id": "pair-1", "n": ' + "9" * 5000)
    _refused(engine, _line(tmp_path, text), "line 2: not valid JSON: an integer with too many digits")


def test_a_whole_json_file_nested_too_deep_is_one_line(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "pairs.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    _refused(engine, path, "not valid JSON: nested more than")


def test_a_text_over_the_size_limit_is_refused(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(textguard.MAX_TEXT_ENV, "1000")
    path = write_jsonl(tmp_path / "p.jsonl", [make_record(0), make_record(1, chosen="x" * 1001)])
    _refused(engine, path, "line 2, field chosen: 1,001 characters, over the limit of 1,000")


def test_the_default_size_limit_is_far_above_a_real_response() -> None:
    assert textguard.max_text_chars() >= 100 * 10_000  # the longest real responses are ~10k characters


def test_a_bad_size_limit_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(textguard.MAX_TEXT_ENV, "lots")
    with pytest.raises(UserError, match="must be a positive whole number"):
        textguard.max_text_chars()


# ----------------------------------------------------------- the same on both engines (point 10)


def test_a_nul_byte_is_refused_with_line_and_field(engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [make_record(0), make_record(1, narrative="a\x00b")])
    _refused(engine, path, "line 2, field narrative: contains a NUL character")


def test_a_nul_byte_in_a_profile_post_is_named(engine: Engine, tmp_path: Path) -> None:
    record = make_record(1)
    record["profile"][0]["text"] = "post\x00"
    path = write_jsonl(tmp_path / "p.jsonl", [make_record(0), record])
    _refused(engine, path, "line 2, field profile[0].text: contains a NUL character")


def test_an_over_long_id_is_refused(engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [make_record(0), make_record(1, id="i" * 501)])
    _refused(engine, path, "line 2, field id: has 501 characters; at most 500")


@pytest.mark.parametrize("field", ["id", "category"])
def test_a_terminal_escape_in_an_id_or_category_is_refused(
    engine: Engine, tmp_path: Path, field: str
) -> None:
    """An id or a category is printed by the CLI (queues, summaries): an escape sequence in it would
    reach the terminal, so it is refused like any control character in a name."""
    path = write_jsonl(tmp_path / "p.jsonl", [make_record(0), make_record(1, **{field: "x\x1b[2Jy"})])
    _refused(engine, path, f"line 2, field {field}: contains a control character")


def test_an_over_long_category_is_refused(engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [make_record(0), make_record(1, category="c" * 201)])
    _refused(engine, path, "line 2, field category: has 201 characters; at most 200")


def test_an_over_long_study_name_is_refused(engine: Engine, tmp_path: Path) -> None:
    _refused(engine, write_jsonl(tmp_path / "p.jsonl", make_records(1)), "at most 200", study="s" * 201)


def test_a_study_name_with_a_nul_is_refused(engine: Engine, tmp_path: Path) -> None:
    _refused(engine, write_jsonl(tmp_path / "p.jsonl", make_records(1)), "control character", study="a\x00b")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_in_jsonl_are_not_json(engine: Engine, tmp_path: Path, constant: str) -> None:
    text = json.dumps(make_record(1)).replace('"id": "pair-1"', f'"id": "pair-1", "score": {constant}')
    _refused(engine, _line(tmp_path, text), f"line 2: not valid JSON: {constant} is not valid JSON")


def test_nan_in_parquet_metadata_is_refused(engine: Engine, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = [make_record(0), make_record(1)]
    table = pa.Table.from_pylist(records).append_column("score", pa.array([1.0, math.nan], from_pandas=False))
    path = tmp_path / "p.parquet"
    pq.write_table(table, path)
    _refused(engine, path, "row 2, field score: nan is not a number JSON allows")


# ---------------------------------------------------------------- invisible characters (point 5)


def test_bidi_and_zero_width_characters_are_a_warning_with_line_and_field(
    engine: Engine, tmp_path: Path
) -> None:
    path = write_jsonl(
        tmp_path / "p.jsonl", [make_record(0), make_record(1, chosen="safe \u202eevil\u202c text")]
    )
    summary = ingest.import_file(engine, path, study="s1", account=SYSTEM)
    assert summary.imported == 2
    assert summary.warnings == (
        "line 2, field chosen: contains POP DIRECTIONAL FORMATTING, RIGHT-TO-LEFT OVERRIDE "
        "(the text may read differently than it is)",
    )


def test_strict_refuses_invisible_characters(engine: Engine, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [make_record(0, question="what\u200bever")])
    with pytest.raises(IngestError, match=r"line 1, field question: contains ZERO WIDTH SPACE.*--strict"):
        ingest.import_file(engine, path, study="s1", account=SYSTEM, strict=True)
    assert _count(engine) == (0, 0)


def test_identical_to_chosen_ignores_invisible_characters(engine: Engine, tmp_path: Path) -> None:
    record = make_record(0)
    record["rejected"] = "\u200b" + record["chosen"].replace(" ", " \u200d", 1)
    _refused(
        engine, write_jsonl(tmp_path / "p.jsonl", [record]), "line 1, field rejected: identical to chosen"
    )


def test_the_cli_prints_the_warnings_and_strict_refuses(env_db: str, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [make_record(0, narrative="x\u2066y\u2069")])
    strict = runner.invoke(app, ["import", str(path), "--study", "s1", "--strict"])
    assert strict.exit_code == 1 and "FIRST STRONG ISOLATE" not in strict.stdout
    assert "LEFT-TO-RIGHT ISOLATE" in strict.stderr
    lenient = runner.invoke(app, ["import", str(path), "--study", "s1"])
    assert lenient.exit_code == 0, lenient.output
    assert "warning:" in lenient.stderr and "line 1, field narrative" in lenient.stderr


def test_a_warning_is_one_line_however_long_the_path(env_db: str, tmp_path: Path) -> None:
    """Rich wrapped stderr at 80 columns: with a long path the warning broke inside its own words."""
    folder = tmp_path / ("deep-" * 20)
    folder.mkdir()
    path = write_jsonl(folder / "p.jsonl", [make_record(0, narrative="x\u2066y\u2069")])
    result = runner.invoke(app, ["import", str(path), "--study", "s1"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"warning: {path}: line 1, field narrative: contains")


# ------------------------------------------------------------------- Rich markup (point 8)


def test_a_study_name_that_looks_like_markup_is_printed_as_typed(env_db: str, tmp_path: Path) -> None:
    """`--study '[/]'` crashed the CLI after the import was committed."""
    path = write_jsonl(tmp_path / "p.jsonl", make_records(1))
    for name in ("[/]", "[link=https://evil.example]click[/link]", "[bold red]x"):
        result = runner.invoke(app, ["import", str(path), "--study", name])
        assert result.exit_code == 0, result.output
        assert f"study {name!r}" in result.stdout


def test_an_error_holding_markup_is_printed_as_typed(env_db: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["assign", "--study", "[/]", "--overlap", "1"])
    assert result.exit_code == 1
    assert "no study called '[/]'" in result.stderr and "Traceback" not in result.output


def test_exported_jsonl_is_strict_json() -> None:
    from annotator.publish import export

    records = [{"id": "a", "score": math.nan, "meta": {"x": [math.inf, 1.5]}}]
    line = export.to_bytes(records, "jsonl").decode("utf-8")
    assert json.loads(line, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c))) == {
        "id": "a",
        "score": None,
        "meta": {"x": [None, 1.5]},
    }
