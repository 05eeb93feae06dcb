"""The study configuration (annotator.study) and how the first import fixes it."""

import re
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from annotator import study as study_module
from annotator.cli import app
from annotator.errors import ConfigError, UserError
from annotator.intake.ingest import import_file
from annotator.people.authorization import SYSTEM
from annotator.store.models import Study
from tests.utils.factories import make_records, write_jsonl

runner = CliRunner()
DEFAULT_TEXT = study_module.DEFAULT_CONFIG.read_text(encoding="utf-8")


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    assert old in DEFAULT_TEXT
    path = tmp_path / "variant.toml"
    path.write_text(DEFAULT_TEXT.replace(old, new, 1), encoding="utf-8")
    return path


def test_the_default_study_loads() -> None:
    config = study_module.load_config()
    assert config.dimension_names == ["correctness", "relevance", "helpfulness"]
    assert config.quality.scale.values == (1, 2, 3, 4, 5)
    assert len(config.preference.labels) == 5
    assert (config.analysis.overlap, config.analysis.margin, config.analysis.alpha) == (3, 0.5, 0.05)


def test_an_unknown_key_is_named(tmp_path: Path) -> None:
    path = _variant(tmp_path, "[display]\n", '[display]\ncolour = "red"\n')
    with pytest.raises(ConfigError, match=re.escape("display.colour: unknown key")):
        study_module.load_config(path)


def test_a_wrong_label_count_names_the_dimension(tmp_path: Path) -> None:
    path = _variant(tmp_path, '    "1 - Off topic",\n', "")
    with pytest.raises(ConfigError, match=r"quality: .*'relevance' has 4 labels; the scale 1-5 needs 5"):
        study_module.load_config(path)


def test_a_wrong_preference_label_count_names_the_key(tmp_path: Path) -> None:
    path = _variant(tmp_path, '"B better", "B much better"]', '"B better"]')
    with pytest.raises(ConfigError, match=re.escape("preference.labels")):
        study_module.load_config(path)


def test_a_table_given_incomplete_is_named() -> None:
    with pytest.raises(ConfigError, match=re.escape("preference.labels: Field required")):
        study_module.parse_config({"preference": {}})


def test_a_config_with_only_an_analysis_table_takes_the_default_questions(tmp_path: Path) -> None:
    path = tmp_path / "study.toml"
    path.write_text("[analysis]\nmargin = 0.3\noverlap = 2\n", encoding="utf-8")
    config = study_module.load_config(path)
    default = study_module.load_config()
    assert (config.analysis.margin, config.analysis.overlap) == (0.3, 2)
    assert (config.quality, config.rubric, config.preference) == (
        default.quality,
        default.rubric,
        default.preference,
    )


def test_a_missing_config_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        study_module.load_config(tmp_path / "nope.toml")


def test_invalid_toml_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[quality\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        study_module.load_config(path)


def test_config_at_first_import_is_stored(env_db: str, tmp_path: Path, engine: Engine) -> None:
    config = _variant(tmp_path, "overlap = 3", "overlap = 2")
    pairs = write_jsonl(tmp_path / "pairs.jsonl", make_records(2))
    result = runner.invoke(app, ["import", str(pairs), "--study", "s1", "--config", str(config)])
    assert result.exit_code == 0, result.output
    with Session(engine) as session:
        stored = session.exec(select(Study.config).where(Study.name == "s1")).one()
    assert stored["analysis"]["overlap"] == 2
    assert stored == study_module.load_config(config).model_dump()


def test_without_config_the_default_is_stored(engine: Engine, tmp_path: Path) -> None:
    import_file(engine, write_jsonl(tmp_path / "p.jsonl", make_records(1)), study="s1", account=SYSTEM)
    with Session(engine) as session:
        stored = session.exec(select(Study.config)).one()
    assert stored == study_module.load_config().model_dump()


def test_a_different_config_for_an_existing_study_is_refused(engine: Engine, tmp_path: Path) -> None:
    pairs = write_jsonl(tmp_path / "p.jsonl", make_records(1))
    import_file(engine, pairs, study="s1", account=SYSTEM)
    other = study_module.load_config(_variant(tmp_path, "overlap = 3", "overlap = 5"))
    with pytest.raises(UserError, match="already exists with another configuration"):
        import_file(engine, pairs, study="s1", config=other, account=SYSTEM)
