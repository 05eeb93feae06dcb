"""What is missing as a whole is one line: a column (or a field of every record) that a pairs, model or
judge file needs, and a SQLite database that does not exist (a command that does not create one
makes nothing: no folder, no file)."""

import json
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select
from typer.testing import CliRunner, Result

from annotator.cli import app
from annotator.store.models import JudgeRating, ModelPrediction
from tests.utils.factories import (
    counts,
    make_record,
    make_records,
    make_study,
    write_csv,
    write_json,
    write_jsonl,
    write_parquet_table,
)
from tests.utils.judgehelpers import beta_study

runner = CliRunner()


def _one_line(result: Result) -> str:
    """The one error line of a refused command (exit 1, no traceback)."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def _without(records: list[dict[str, object]], *fields: str) -> list[dict[str, object]]:
    return [{key: value for key, value in record.items() if key not in fields} for record in records]


# ------------------------------------------------------------------------------------------ pair files


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".json", ".parquet"])
def test_a_pairs_file_without_a_needed_column_is_one_line(
    env_db: str, engine: Engine, tmp_path: Path, suffix: str
) -> None:
    records = _without(make_records(25), "rejected")
    path = tmp_path / f"pairs{suffix}"
    if suffix == ".csv":
        write_csv(path, records)
    elif suffix == ".jsonl":
        write_jsonl(path, records)
    elif suffix == ".json":
        write_json(path, records)
    else:
        write_parquet_table(path, {key: [r[key] for r in records] for key in records[0]})
    before = counts(engine)
    line = _one_line(runner.invoke(app, ["import", str(path), "--study", "s"]))
    expected = {
        ".csv": f"error: {path}: header: missing column(s) 'rejected'",
        ".parquet": f"error: {path}: missing column(s) 'rejected'",
    }.get(suffix, f"error: {path}: missing field(s) 'rejected' in every record")
    assert line == expected
    assert counts(engine) == before


def test_a_csv_header_names_every_missing_column_and_the_plain_alternative(
    env_db: str, engine: Engine, tmp_path: Path
) -> None:
    path = write_csv(tmp_path / "pairs.csv", _without(make_records(3), "question", "chosen", "rejected"))
    line = _one_line(runner.invoke(app, ["import", str(path), "--study", "s"]))
    assert line == f"error: {path}: header: missing column(s) 'question' (or 'prompt'), 'chosen', 'rejected'"
    assert counts(engine) == {"Study": 0, "Pair": 0, "Event": 0}


def test_records_that_lack_a_field_only_here_and_there_keep_their_own_lines(
    env_db: str, engine: Engine, tmp_path: Path
) -> None:
    records = [make_record(k) if k % 2 else _without([make_record(k)], "rejected")[0] for k in range(6)]
    path = write_jsonl(tmp_path / "pairs.jsonl", records)
    result = runner.invoke(app, ["import", str(path), "--study", "s"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "3 problem(s)" in result.output
    assert "line 1, field rejected: missing" in result.output
    assert "every record" not in result.output
    assert counts(engine) == {"Study": 0, "Pair": 0, "Event": 0}


# ------------------------------------------------------------------------------ model and judge files


def _rows(engine: Engine, table: type[ModelPrediction | JudgeRating]) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(table)).one())


@pytest.mark.parametrize(
    ("name", "records", "said"),
    [
        (
            "scores.csv",
            [{"id": f"pair-{k}", "score_chosen": 1.0} for k in range(25)],
            "header: missing column(s) 'score_rejected' (or 'choice')",
        ),
        (
            "ids.jsonl",
            [{"pair": f"pair-{k}", "choice": "chosen"} for k in range(25)],
            "missing field(s) 'id' (or 'pair_id') in every record",
        ),
    ],
)
def test_a_model_file_without_a_needed_column_is_one_line(
    env_db: str, engine: Engine, tmp_path: Path, name: str, records: list[dict[str, object]], said: str
) -> None:
    make_study(engine, tmp_path, 25)
    path = tmp_path / name
    (write_csv if name.endswith(".csv") else write_jsonl)(path, records)
    line = _one_line(runner.invoke(app, ["models", "import", str(path), "--study", "s1", "--model", "rm"]))
    assert line == f"error: {path}: {said}"
    assert _rows(engine, ModelPrediction) == 0


@pytest.mark.parametrize(
    ("name", "records", "said"),
    [
        (
            "judge.csv",
            [{"pair_id": f"pair-{k}", "response": "chosen", "item": "correctness"} for k in range(25)],
            "header: missing column(s) 'value' (or 'preference')",
        ),
        (
            "judge.jsonl",
            [{"id": f"pair-{k}", "response": "chosen", "item": "correctness", "value": 4} for k in range(25)],
            "missing field(s) 'pair_id' in every record",
        ),
    ],
)
def test_a_judge_file_without_a_needed_column_is_one_line(
    env_db: str, engine: Engine, tmp_path: Path, name: str, records: list[dict[str, object]], said: str
) -> None:
    make_study(engine, tmp_path, 25)
    path = tmp_path / name
    (write_csv if name.endswith(".csv") else write_jsonl)(path, records)
    line = _one_line(runner.invoke(app, ["judges", "import", str(path), "--study", "s1", "--judge", "j"]))
    assert line == f"error: {path}: {said}"
    assert _rows(engine, JudgeRating) == 0


LONG = "a" * 10_000


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["quality", "--study", LONG], "error: no study called 'aaaa"),
        (["users", "deactivate", LONG], "error: no user called 'aaaa"),
        (["users", "add", LONG], "error: invalid username 'aaaa"),
        (["owners", "link", LONG, "--study", "s1"], "error: study 's1' has no pairs whose owner is 'aaaa"),
        (["judges", "queue", "--study", "s1", "--judge", LONG], "error: no judge 'aaaa"),
    ],
)
def test_a_name_that_is_not_there_is_quoted_short(
    env_db: str, engine: Engine, tmp_path: Path, words: list[str], said: str
) -> None:
    """A 10,000-character study, user, owner or judge name was repeated whole in its one line."""
    make_study(engine, tmp_path, 2)
    line = _one_line(runner.invoke(app, words, input="a-long-enough-password\n"))
    assert line.startswith(said) and "... (10,000 characters)" in line and len(line) < 300, line[:300]


@pytest.mark.nodb  # files only
def test_a_judge_file_for_analyze_without_pair_ids_is_one_line(tmp_path: Path) -> None:
    frame, _ = beta_study(annotators=3, pairs=12, seed=1, items=("correctness", "relevance", "helpfulness"))
    labels = tmp_path / "labels.csv"
    frame.to_csv(labels, index=False)
    judge = write_jsonl(
        tmp_path / "judge.jsonl",
        [{"pair": pair, "preference": 1} for pair in sorted(set(frame["pair_id"]))],
    )
    report = tmp_path / "report.json"
    args = ["analyze", "--labels", str(labels), "--judges", str(judge), "--json", str(report)]
    line = _one_line(runner.invoke(app, args))
    assert line == f"error: {judge}: missing field(s) 'pair_id' in every record"
    assert not report.exists()


@pytest.mark.nodb  # files only
@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_judge_file_without_a_judge_name_anywhere_is_one_line(tmp_path: Path, suffix: str) -> None:
    """No judge column and a file name that is no judge name: one line, not a problem on every row."""
    frame, _ = beta_study(annotators=3, pairs=12, seed=1, items=("correctness", "relevance", "helpfulness"))
    labels = tmp_path / "labels.csv"
    frame.to_csv(labels, index=False)
    records = [{"pair_id": pair, "preference": 1} for pair in sorted(set(frame["pair_id"]))]
    judge = (write_csv if suffix == ".csv" else write_jsonl)(tmp_path / f"my judge!{suffix}", records)
    report = tmp_path / "report.json"
    args = ["analyze", "--labels", str(labels), "--judges", str(judge), "--json", str(report)]
    line = _one_line(runner.invoke(app, args))
    said = "header: missing column(s)" if suffix == ".csv" else "missing field(s)"
    assert line.startswith(f"error: {judge}: {said} 'judge' (the file's name 'my judge!' is no judge name)")
    assert not report.exists()


@pytest.mark.nodb  # files only
def test_a_folder_given_as_a_judge_file_is_called_a_folder(tmp_path: Path) -> None:
    """analyze --judges FOLDER said "no such file" (and judges import "a folder, not a pair file")."""
    frame, _ = beta_study(annotators=3, pairs=12, seed=1, items=("correctness", "relevance", "helpfulness"))
    labels = tmp_path / "labels.csv"
    frame.to_csv(labels, index=False)
    folder = tmp_path / "judge.csv"
    folder.mkdir()
    line = _one_line(runner.invoke(app, ["analyze", "--labels", str(labels), "--judges", str(folder)]))
    assert line == f"error: {folder}: a folder, not a file"


@pytest.mark.nodb  # files only
@pytest.mark.parametrize("kept", ["chosen", "rejected"])
def test_a_labels_file_that_scores_one_response_only_is_one_line(tmp_path: Path, kept: str) -> None:
    items = ("correctness", "relevance", "helpfulness", "rubric:0", "rubric:1")
    frame, _ = beta_study(annotators=3, pairs=12, seed=2, items=items)
    frame.loc[frame["item"].str.startswith("rubric:"), "value"] = 1  # an aspect's points: 0..2
    labels = tmp_path / "labels.csv"
    frame[frame["response"] == kept].to_csv(labels, index=False)
    report = tmp_path / "report.json"
    line = _one_line(runner.invoke(app, ["analyze", "--labels", str(labels), "--json", str(report)]))
    assert line.startswith("error: cannot analyse study 'labels': ")
    assert "both the chosen and the rejected response" in line or "for both responses of 0 pair(s)" in line
    assert not report.exists()


@pytest.mark.nodb  # files only
@pytest.mark.parametrize("reading", [[], ["--by-item"]], ids=["whole", "by-item"])
@pytest.mark.parametrize(
    ("items", "scale_max", "said"),
    [
        (("correctness",), 5, "no scores for 'relevance', 'helpfulness', which the study rates"),
        (("correctness", "tone"), 5, "column 'item' holds 'tone', which is neither a quality dimension"),
        (("correctness", "relevance", "helpfulness"), 7, "column 'value (correctness)' must hold integers"),
    ],
)
def test_labels_that_do_not_fit_the_default_study_point_to_config(
    tmp_path: Path, items: tuple[str, ...], scale_max: int, said: str, reading: list[str]
) -> None:
    """Labels of other dimensions or another scale are one line that says the settings were the default
    study's; with a study TOML of those dimensions and that scale they are analysed."""
    frame, _ = beta_study(annotators=3, pairs=12, seed=3, items=items)
    frame["value"] = (frame["value"] - 1) * (scale_max - 1) // 4 + 1  # 1-5 onto 1..scale_max
    labels = tmp_path / "labels.csv"
    frame.to_csv(labels, index=False)
    report = tmp_path / "report.json"
    words = ["analyze", "--labels", str(labels), *reading, "--json", str(report)]
    line = _one_line(runner.invoke(app, words))
    assert line.startswith(f"error: {labels}: {said}") or (reading and said in line), line
    assert line.endswith("(the study's settings are the default study's: give yours with --config FILE)")
    assert not report.exists()
    points = ", ".join(f'"{k}"' for k in range(1, scale_max + 1))
    dimension = '[[quality.dimensions]]\nname = "{0}"\nquestion = "{0}?"\nlabels = [{1}]\n'
    dimensions = "".join(dimension.format(item, points) for item in items)
    config = tmp_path / "study.toml"
    config.write_text(f"[quality]\nscale_min = 1\nscale_max = {scale_max}\n{dimensions}", encoding="utf-8")
    args = ["analyze", "--labels", str(labels), *reading, "--config", str(config), "--json", str(report)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(report.read_text("utf-8"))["study"] == "labels"


@pytest.mark.nodb  # files only
@pytest.mark.parametrize("reading", [[], ["--by-item"]], ids=["whole", "by-item"])
def test_a_labels_file_of_its_header_only_has_no_judgments_yet(tmp_path: Path, reading: list[str]) -> None:
    """Read whole or item by item, labels with no rows are no judgments yet (item by item it said 'no
    scores for item ...', as if the labels were of another study)."""
    frame, _ = beta_study(annotators=3, pairs=12, seed=3, items=("correctness",))
    labels = tmp_path / "labels.csv"
    frame.head(0).to_csv(labels, index=False)
    line = _one_line(runner.invoke(app, ["analyze", "--labels", str(labels), *reading]))
    assert line.endswith("no judgments to analyse yet"), line


# ------------------------------------------------------------------------------- a missing database

#: Commands that work on an existing database (only init and demo create one).
NEEDS_DATABASE = {
    "users list": ["users", "list"],
    "import": ["import", "{tmp}/pairs.jsonl", "--study", "s"],
    "assign": ["assign", "--study", "s", "--overlap", "1"],
    "export": ["export", "labels", "--study", "s", "--format", "csv", "--out", "{tmp}/labels.csv"],
    "analyze": ["analyze", "--study", "s"],
    "quality": ["quality", "--study", "s"],
    "adjudicate queue": ["adjudicate", "--study", "s", "--queue"],
    "models queue": ["models", "queue", "--study", "s"],
    "owners list": ["owners", "list", "--study", "s"],
    "recount": ["recount"],
    "backup": ["backup", "{tmp}/copy.db"],
    "serve": ["serve"],
}


@pytest.mark.sqlite_only  # a file path; a PostgreSQL database is never created by the tool
@pytest.mark.parametrize("command", list(NEEDS_DATABASE))
def test_a_command_on_a_missing_database_file_creates_nothing(tmp_path: Path, command: str) -> None:
    write_jsonl(tmp_path / "pairs.jsonl", make_records(2))
    missing = tmp_path / "typo" / "dir" / "x.db"
    args = [a.replace("{tmp}", str(tmp_path)) for a in NEEDS_DATABASE[command]]
    line = _one_line(runner.invoke(app, ["--db", f"sqlite:///{missing}", *args]))
    assert line == f"error: no database at {missing}; run `annotator init` first"
    assert not (tmp_path / "typo").exists()
    assert not (tmp_path / "copy.db").exists() and not (tmp_path / "labels.csv").exists()


@pytest.mark.sqlite_only
def test_the_default_database_is_made_by_init_only(tmp_path: Path) -> None:
    """Without --db (the default data/annotations.db under the current folder): a reading command
    makes no data/ folder; `init` makes the database, after which the command runs."""
    line = _one_line(runner.invoke(app, ["users", "list"]))
    assert line == "error: no database at data/annotations.db; run `annotator init` first"
    assert not (tmp_path / "data").exists()
    assert runner.invoke(app, ["init"]).exit_code == 0
    assert (tmp_path / "data" / "annotations.db").is_file()
    assert runner.invoke(app, ["users", "list"]).exit_code == 0


@pytest.mark.nodb
def test_an_in_memory_database_is_not_a_missing_file() -> None:
    line = _one_line(runner.invoke(app, ["--db", "sqlite://", "users", "list"]))
    assert "not initialised; run `annotator init` first" in line


def test_a_pairs_file_with_a_bom_and_crlf_line_ends_imports(
    env_db: str, engine: Engine, tmp_path: Path
) -> None:
    """Unchanged behaviour, checked while here: a byte-order mark and Windows line ends are read."""
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r) + "\r\n" for r in make_records(3)).encode())
    result = runner.invoke(app, ["import", str(path), "--study", "s"])
    assert result.exit_code == 0, result.output
    assert counts(engine)["Pair"] == 3
