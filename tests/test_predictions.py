"""Model predictions: import (every problem named, nothing written on error), read back, the queue."""

import json
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from annotator.errors import IngestError, UserError
from annotator.people.authorization import SYSTEM
from annotator.review import predictions
from annotator.store import db
from annotator.store.models import Assignment, ModelPrediction, id_of
from tests.utils.factories import make_annotators, make_study, write_csv, write_jsonl, write_parquet_table


def _count(engine: Engine) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(ModelPrediction)).one())


def _study(engine: Engine, tmp_path: Path, n: int = 4) -> None:
    make_study(engine, tmp_path, n, account=SYSTEM)


def test_import_scores_derives_the_choice(engine: Engine, tmp_path: Path) -> None:
    _study(engine, tmp_path)
    path = write_jsonl(
        tmp_path / "m.jsonl",
        [
            {"id": "pair-0", "score_chosen": 2.5, "score_rejected": 1.0},
            {"id": "pair-1", "score_chosen": 0.1, "score_rejected": 0.9},
            {"id": "pair-2", "score_chosen": 1, "score_rejected": 1},
        ],
    )
    summary = predictions.import_predictions(engine, path, study="s1", model="rm-a", account=SYSTEM)
    assert (summary.imported, summary.pairs_without) == (3, 1)
    with Session(engine) as session:
        frame = predictions.prediction_frame(session, study="s1", account=SYSTEM)
    assert frame.set_index("pair_id")["choice"].to_dict() == {
        "pair-0": "chosen",
        "pair-1": "rejected",
        "pair-2": "tie",
    }


def test_import_choice_with_confidence_from_csv(engine: Engine, tmp_path: Path) -> None:
    _study(engine, tmp_path)
    path = write_csv(tmp_path / "m.csv", [{"pair_id": "pair-0", "choice": "Chosen", "confidence": "0.8"}])
    predictions.import_predictions(engine, path, study="s1", model="judge", account=SYSTEM)
    with Session(engine) as session:
        row = predictions.prediction_frame(session, study="s1", account=SYSTEM).iloc[0]
    assert (row["choice"], row["confidence"]) == ("chosen", 0.8)


def test_import_parquet(engine: Engine, tmp_path: Path) -> None:
    _study(engine, tmp_path)
    path = write_parquet_table(
        tmp_path / "m.parquet",
        {"id": ["pair-0", "pair-1"], "score_chosen": [1.0, 2.0], "score_rejected": [0.0, 3.0]},
    )
    assert predictions.import_predictions(engine, path, study="s1", model="m", account=SYSTEM).imported == 2


def test_every_problem_is_named_by_line_and_field_and_nothing_is_written(
    engine: Engine, tmp_path: Path
) -> None:
    _study(engine, tmp_path)
    path = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {"id": "pair-0", "score_chosen": 1.0, "score_rejected": 0.0},
            {"id": "nope", "choice": "chosen"},
            {"id": "pair-1", "score_chosen": "high", "score_rejected": 0.0},
            {"id": "pair-2", "choice": "maybe"},
            {"id": "pair-3", "choice": "chosen", "confidence": 1.5},
            {"id": "pair-0", "choice": "chosen"},
        ],
    )
    with pytest.raises(IngestError) as caught:
        predictions.import_predictions(engine, path, study="s1", model="m", account=SYSTEM)
    text = str(caught.value)
    assert "line 2, field id: no pair 'nope' in this study" in text
    assert "line 3, field score_chosen: expected a number" in text
    assert "line 4, field choice: expected one of chosen, rejected, tie" in text
    assert "line 5, field confidence: must be between 0 and 1" in text
    assert "line 6, field id: duplicate id 'pair-0' (first at line 1)" in text
    assert _count(engine) == 0


def test_a_huge_score_or_an_id_that_is_no_id_is_named_in_one_short_line(
    engine: Engine, tmp_path: Path
) -> None:
    """A 5,000-digit score was repeated whole in its message; an id `true` was called missing and an
    id object was looked up as the text of a dict."""
    _study(engine, tmp_path)
    path = write_csv(
        tmp_path / "big.csv", [{"id": "pair-0", "score_chosen": "9" * 5000, "score_rejected": 0}]
    )
    with pytest.raises(IngestError) as caught:
        predictions.import_predictions(engine, path, study="s1", model="m", account=SYSTEM)
    assert "row 2, field score_chosen: must be a finite number, got '999" in str(caught.value)
    assert "(5,000 characters)" in str(caught.value)
    assert len(str(caught.value)) < 300
    path = write_jsonl(
        tmp_path / "ids.jsonl", [{"id": True, "choice": "chosen"}, {"id": {"a": 1}, "choice": "tie"}]
    )
    with pytest.raises(IngestError) as caught:
        predictions.import_predictions(engine, path, study="s1", model="m", account=SYSTEM)
    assert "line 1, field id: expected the pair's id, got True" in str(caught.value)
    assert "line 2, field id: expected the pair's id, got {'a': 1}" in str(caught.value)
    assert _count(engine) == 0


def test_a_choice_that_contradicts_the_scores_is_refused(engine: Engine, tmp_path: Path) -> None:
    _study(engine, tmp_path)
    path = write_jsonl(
        tmp_path / "m.jsonl", [{"id": "pair-0", "score_chosen": 0, "score_rejected": 1, "choice": "chosen"}]
    )
    with pytest.raises(IngestError, match="line 1, field choice: 'chosen' contradicts the scores"):
        predictions.import_predictions(engine, path, study="s1", model="m", account=SYSTEM)


def test_reimporting_a_model_replaces_its_predictions(engine: Engine, tmp_path: Path) -> None:
    _study(engine, tmp_path)
    first = write_jsonl(tmp_path / "a.jsonl", [{"id": f"pair-{i}", "choice": "chosen"} for i in range(3)])
    second = write_jsonl(tmp_path / "b.jsonl", [{"id": "pair-0", "choice": "rejected"}])
    predictions.import_predictions(engine, first, study="s1", model="m", account=SYSTEM)
    summary = predictions.import_predictions(engine, second, study="s1", model="m", account=SYSTEM)
    assert (summary.imported, summary.replaced, _count(engine)) == (1, 3, 1)


def test_an_annotator_may_not_import_predictions(engine: Engine, tmp_path: Path) -> None:
    from annotator.errors import AuthError
    from annotator.people.authorization import Account

    _study(engine, tmp_path)
    make_annotators(engine, 1)
    path = write_jsonl(tmp_path / "m.jsonl", [{"id": "pair-0", "choice": "chosen"}])
    with pytest.raises(AuthError):
        predictions.import_predictions(
            engine, path, study="s1", model="m", account=Account(id=1, username="ann00", role="annotator")
        )


def test_an_empty_model_name_is_refused(engine: Engine, tmp_path: Path) -> None:
    _study(engine, tmp_path)
    path = write_jsonl(tmp_path / "m.jsonl", [{"id": "pair-0", "choice": "chosen"}])
    with pytest.raises(UserError, match="the model name is empty"):
        predictions.import_predictions(engine, path, study="s1", model="  ", account=SYSTEM)


def test_send_back_adds_the_pairs_to_annotators_without_them(engine: Engine, tmp_path: Path) -> None:
    _study(engine, tmp_path, 3)
    make_annotators(engine, 3)
    with db.session_scope(engine) as session:
        created = predictions.send_back(
            session, study="s1", pair_ids=["pair-0", "pair-1"], extra=2, account=SYSTEM
        )
    with Session(engine) as session:
        per_pair = dict(
            session.exec(select(Assignment.pair_id, func.count()).group_by(Assignment.pair_id)).all()  # type: ignore[arg-type]
        )
    assert created == 4
    assert sorted(per_pair.values()) == [2, 2]


def test_the_jsonl_reader_reports_bad_json_by_line(engine: Engine, tmp_path: Path) -> None:
    _study(engine, tmp_path)
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"id": "pair-0", "choice": "chosen"}) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(IngestError, match="line 2: not valid JSON"):
        predictions.import_predictions(engine, path, study="s1", model="m", account=SYSTEM)


def test_cli_models_import_prints_the_summary(env_db: str, engine: Engine, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from annotator.cli import app

    _study(engine, tmp_path)
    path = write_jsonl(tmp_path / "m.jsonl", [{"id": "pair-0", "choice": "chosen"}])
    result = CliRunner().invoke(app, ["models", "import", str(path), "--study", "s1", "--model", "rm"])
    assert result.exit_code == 0, result.output
    assert "model 'rm': imported 1 predictions" in result.output


def test_cli_models_import_error_is_one_clear_message(env_db: str, engine: Engine, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from annotator.cli import app

    _study(engine, tmp_path)
    path = write_jsonl(tmp_path / "m.jsonl", [{"id": "pair-9", "choice": "chosen"}])
    result = CliRunner().invoke(app, ["models", "import", str(path), "--study", "s1", "--model", "rm"])
    assert result.exit_code == 1
    assert "line 1, field id: no pair 'pair-9'" in result.output
    assert "Traceback" not in result.output


def test_the_disagreement_queue_lists_pairs_where_a_model_differs_from_people(
    engine: Engine, tmp_path: Path
) -> None:
    from tests.utils.sciencehelpers import add_models, simulated_study

    simulated_study(engine, tmp_path, 10)
    add_models(engine, tmp_path, 10)
    with Session(engine) as session:
        queue = predictions.disagreement_queue(session, study="s1", account=SYSTEM)
        frame = predictions.prediction_frame(session, study="s1", account=SYSTEM)
    weak_wrong = set(frame.loc[(frame["model"] == "weak") & (frame["choice"] != "chosen"), "pair_id"])
    assert not queue.empty and queue["pair_db_id"].notna().all()
    assert weak_wrong & set(queue["pair_id"])


def test_cli_models_queue_sends_the_pairs_back(env_db: str, engine: Engine, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from annotator.cli import app
    from tests.utils.sciencehelpers import add_models, simulated_study

    simulated_study(engine, tmp_path, 8)
    add_models(engine, tmp_path, 8)
    make_annotators(engine, 2, prefix="extra")
    result = CliRunner().invoke(app, ["models", "queue", "--study", "s1", "--send-back", "1"])
    assert result.exit_code == 0, result.output
    assert "sent back:" in result.output and "Traceback" not in result.output


@pytest.mark.page
def test_the_validation_page_shows_models_and_the_human_ceiling(
    env_db: str, engine: Engine, tmp_path: Path
) -> None:

    from annotator.people.authorization import Account
    from tests.utils.apphelpers import app_for
    from tests.utils.factories import make_user
    from tests.utils.sciencehelpers import add_models, simulated_study

    simulated_study(engine, tmp_path, 10)
    add_models(engine, tmp_path, 10)
    with db.session_scope(engine) as session:
        boss = make_user(session, "boss", role="researcher")
        account = Account(id=id_of(boss), username="boss", role="researcher")
    at = app_for(account, timeout=120)
    at.switch_page("views/validation.py").run()
    assert not at.exception
    assert "Models and the human ceiling" in [h.value for h in at.header]


def test_importing_predictions_changes_the_data_version(engine: Engine, tmp_path: Path) -> None:
    from annotator.review import study_progress

    _study(engine, tmp_path)
    with Session(engine) as session:
        before = study_progress.data_version(session, "s1", account=SYSTEM)
    path = write_jsonl(tmp_path / "m.jsonl", [{"id": "pair-0", "choice": "chosen"}])
    predictions.import_predictions(engine, path, study="s1", model="m", account=SYSTEM)
    with Session(engine) as session:
        assert study_progress.data_version(session, "s1", account=SYSTEM) != before
