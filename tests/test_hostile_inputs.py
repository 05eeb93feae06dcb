"""Hostile input files: prediction files get the pair importer's checks (depth, big integers, NaN,
NUL, size; one line naming row and field), and one import reads at most --max-bytes of decoded text
(512 MB by default, the browser's upload limit too), checked while reading, before anything is written."""

import json
import tomllib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from annotator import server, textguard
from annotator.cli import app
from annotator.errors import UserError
from annotator.intake import ingest
from annotator.people.authorization import SYSTEM
from annotator.review import predictions
from annotator.store.models import ModelPrediction
from tests.utils.factories import counts, make_records, make_study, write_jsonl

ROOT = Path(__file__).resolve().parents[1]


def _models_import(env_db: str, path: Path, *extra: str) -> str:
    result = CliRunner().invoke(app, ["models", "import", str(path), "--study", "s1", "--model", "m", *extra])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return result.output


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            '{"id": "pair-0", "score_chosen": 1' + "0" * 400 + ', "score_rejected": 0}',
            "line 1, field score_chosen",
        ),
        ('{"id": "pair-0", "score_chosen": NaN, "score_rejected": 0}', "line 1: not valid JSON: NaN"),
        ('{"id": "pair-0", "choice": "chosen", "x": ' + "[" * 200 + "]" * 200 + "}", "nested more than 64"),
        ('{"id": "pair-0\\u0000", "choice": "chosen"}', "line 1, field id: contains a NUL character"),
        (
            '{"id": "pair-0", "choice": "chosen", "note": "' + "x" * 2000 + '"}',
            "line 1, field note: 2,000 chara",
        ),
    ],
)
def test_a_hostile_prediction_file_is_one_line_per_problem(
    env_db: str, engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, expected: str
) -> None:
    make_study(engine, tmp_path, 2, account=SYSTEM)
    monkeypatch.setenv(textguard.MAX_TEXT_ENV, "1000")
    path = tmp_path / "predictions.jsonl"
    path.write_text(value + "\n", encoding="utf-8")
    output = _models_import(env_db, path)
    assert expected in output
    assert "nothing was imported" in output
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(ModelPrediction)).one() == 0


def test_a_huge_score_in_a_csv_is_named_by_row_and_field(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 2, account=SYSTEM)
    path = tmp_path / "predictions.csv"
    path.write_text("id,score_chosen,score_rejected\npair-0,1" + "0" * 400 + ",0\n", encoding="utf-8")
    with pytest.raises(UserError, match="row 2, field score_chosen: must be a finite number"):
        predictions.import_predictions(engine, path, study="s1", model="m", account=SYSTEM)


def test_a_hostile_model_name_is_refused(engine: Engine, tmp_path: Path) -> None:
    make_study(engine, tmp_path, 2, account=SYSTEM)
    path = write_jsonl(tmp_path / "p.jsonl", [{"id": "pair-0", "choice": "chosen"}])
    with pytest.raises(UserError, match="the model name contains a NUL"):
        predictions.import_predictions(engine, path, study="s1", model="m\x00", account=SYSTEM)


def _bomb(path: Path, rows: int, text_size: int, *, dictionary_type: bool) -> Path:
    """A small Parquet file whose rows repeat one long text (dictionary encoding, compressed): a few
    kilobytes on disk, rows x text_size bytes once decoded. With `dictionary_type` the column is also
    read back as an Arrow dictionary (the file's schema says so), which holds the text only once."""
    record = make_records(1)[0]
    text = "a" * text_size
    columns = {key: [value] * rows for key, value in record.items() if key != "id"}
    columns["id"] = [f"p{i}" for i in range(rows)]
    arrays = {key: pa.array(columns[key]) for key in record if key != "chosen"}
    arrays["chosen"] = (
        pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array([text]))
        if dictionary_type
        else pa.array([text] * rows)
    )
    pq.write_table(pa.table({key: arrays[key] for key in record}), path, compression="zstd")
    return path


@pytest.mark.parametrize("dictionary_type", [False, True])
def test_a_small_parquet_file_that_decodes_to_too_much_text_is_refused_while_reading(
    engine: Engine, tmp_path: Path, dictionary_type: bool
) -> None:
    path = _bomb(tmp_path / "bomb.parquet", rows=2048, text_size=64 * 1024, dictionary_type=dictionary_type)
    assert path.stat().st_size < 200_000
    limit = 16 * 2**20
    read = []
    with pytest.raises(UserError, match=r"the decoded text exceeds 16,777,216 bytes \(16 MB, --max-bytes\)"):
        for where, _record in ingest.read_records(path, max_bytes=limit):
            read.append(where)
    assert len(read) * 64 * 1024 < 2 * limit  # it stopped near the limit, not at the end of the file
    with pytest.raises(UserError, match="nothing was imported"):
        ingest.import_file(engine, path, study="s", account=SYSTEM, max_bytes=limit)
    assert counts(engine)["Pair"] == 0


def test_the_cli_takes_max_bytes_and_refuses_a_bigger_file(
    env_db: str, engine: Engine, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "pairs.jsonl", make_records(20))
    result = CliRunner().invoke(app, ["import", str(path), "--study", "s", "--max-bytes", "1000"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert (
        f"the file has {path.stat().st_size:,} bytes, the decoded text exceeds 1,000 bytes" in result.output
    )
    assert counts(engine)["Pair"] == 0
    result = CliRunner().invoke(app, ["import", str(path), "--study", "s", "--max-bytes", str(10**6)])
    assert result.exit_code == 0, result.output
    assert counts(engine)["Pair"] == 20


def test_the_limit_is_512_mb_in_the_cli_and_in_the_browser() -> None:
    assert textguard.MAX_BYTES_DEFAULT == 512 * 2**20
    assert "--server.maxUploadSize=512" in server.FLAGS  # Streamlit's MB are 2**20 bytes
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["maxUploadSize"] == 512
    assert json.dumps(textguard.MAX_BYTES_DEFAULT) in json.dumps(ingest.import_file.__kwdefaults__)
