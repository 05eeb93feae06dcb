"""CSV files from any tool: a header separated by semicolons or tabs (what spreadsheets write where the
comma is the decimal mark) is read as a comma-separated one, for pairs, judge ratings and labels."""

import csv
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from analysis.csv_dialect import first_line, separator
from analysis.label_files import read_labels
from annotator.cli import app
from annotator.intake import ingest
from tests.utils.factories import make_records, write_csv
from tests.utils.judgehelpers import beta_study

pytestmark = pytest.mark.nodb  # files only, no database: CI's PostgreSQL pass leaves it out

runner = CliRunner()


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("pair_id,response,item,value", ","),
        ("pair_id;response;item;value", ";"),
        ("pair_id\tresponse\titem\tvalue", "\t"),
        ('"a;b",c,d', ","),  # a separator inside quotes does not count
        ('"a,b";c;d', ";"),
        ("pair_id", ","),  # one column: nothing to tell, the comma
        ("", ","),
    ],
)
def test_the_separator_is_the_one_the_header_uses_most(header: str, expected: str) -> None:
    assert separator(header) == expected


def test_the_first_line_drops_a_byte_order_mark_and_a_carriage_return() -> None:
    assert first_line("\ufeffa;b\r\nc;d\r\n") == "a;b"
    assert first_line("a,b") == "a,b"


def _resave(path: Path, delimiter: str) -> Path:
    """The CSV at `path` written again with another separator (quoting as the csv module does)."""
    with path.open(newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    out = path.with_name(f"{path.stem}-{ord(delimiter)}.csv")
    with out.open("w", newline="", encoding="utf-8") as file:
        csv.writer(file, delimiter=delimiter).writerows(rows)
    return out


@pytest.mark.parametrize("delimiter", [";", "\t"])
def test_pairs_separated_by_semicolons_or_tabs_read_as_the_comma_file(tmp_path: Path, delimiter: str) -> None:
    comma = write_csv(tmp_path / "pairs.csv", make_records(3, n_posts=2, n_aspects=2))
    other = _resave(comma, delimiter)
    assert delimiter in other.read_text(encoding="utf-8").splitlines()[0]
    assert ingest.load_pairs(other) == ingest.load_pairs(comma)
    assert [row["external_id"] for row in ingest.load_pairs(other)] == ["pair-0", "pair-1", "pair-2"]


def test_labels_separated_by_semicolons_give_the_same_frame(tmp_path: Path) -> None:
    frame, _ = beta_study(annotators=3, pairs=12, seed=1, items=("correctness",))
    comma = tmp_path / "labels.csv"
    frame.to_csv(comma, index=False)
    semicolon = tmp_path / "labels-semicolon.csv"
    frame.to_csv(semicolon, index=False, sep=";")
    pd.testing.assert_frame_equal(read_labels(semicolon), read_labels(comma))


def test_analyze_reads_a_semicolon_judge_file_as_the_comma_one(tmp_path: Path) -> None:
    frame, _ = beta_study(annotators=3, pairs=20, seed=2, items=("correctness", "relevance", "helpfulness"))
    labels = tmp_path / "labels.csv"
    frame.to_csv(labels, index=False)
    quality = frame[frame["item"] != "preference"].dropna(subset=["value"])
    judge = quality.groupby(["pair_id", "response", "item"])["value"].mean().round().reset_index()
    reports = []
    for sep, name in ((",", "comma"), (";", "semicolon")):
        path = tmp_path / f"{name}.csv"
        judge.to_csv(path, index=False, sep=sep)
        out = tmp_path / f"{name}.json"
        result = runner.invoke(
            app,
            ["analyze", "--labels", str(labels), "--judges", str(path), "--n-boot", "10", "--json", str(out)],
        )
        assert result.exit_code == 0, result.output
        reports.append(json.loads(out.read_text(encoding="utf-8"))["judges"])
    comma, semicolon = reports
    assert {row["judge"] for row in semicolon} == {"semicolon"} and len(semicolon) == 3
    assert [{**row, "judge": ""} for row in semicolon] == [{**row, "judge": ""} for row in comma]
