"""One analysis settings model (analysis/settings.py): the shipped study.toml, the study config and the
report's settings all hold its defaults, and a study's own values reach build_report unchanged."""

import dataclasses
import tomllib
from pathlib import Path

import pytest

from analysis.report import ReportSettings
from analysis.settings import DEFAULTS, AnalysisSettings
from annotator.study import StudyConfig, load_config

pytestmark = pytest.mark.nodb  # statistics and static checks: no database

SHIPPED = Path(__file__).resolve().parents[1] / "annotator" / "defaults" / "study.toml"
NAMES = [f.name for f in dataclasses.fields(AnalysisSettings)]


def test_the_shipped_study_states_the_models_defaults() -> None:
    data = tomllib.loads(SHIPPED.read_text(encoding="utf-8"))
    explicit = {**data["analysis"], **data["validation"]}
    assert set(explicit) <= set(NAMES)
    assert {k: v for k, v in explicit.items() if v != getattr(DEFAULTS, k)} == {}


def test_a_study_that_sets_nothing_has_the_defaults() -> None:
    data = load_config().model_dump()
    data.pop("analysis"), data.pop("validation")
    assert StudyConfig.model_validate(data).analysis_settings() == DEFAULTS
    assert load_config().analysis_settings() == DEFAULTS


def test_every_setting_reaches_the_report_settings() -> None:
    shifted = {
        name: (not value) if isinstance(value, bool) else value * 2 if isinstance(value, int) else value / 2
        for name, value in DEFAULTS.as_dict().items()
    }
    data = load_config().model_dump()
    data["analysis"] = {k: v for k, v in shifted.items() if k not in ("max_broken_share", "fdr")}
    data["validation"] = {"max_broken_share": shifted["max_broken_share"], "fdr": shifted["fdr"]}
    config = StudyConfig.model_validate(data)
    assert config.analysis_settings() == AnalysisSettings(**shifted)
    settings = ReportSettings.of(config.analysis_settings(), seed=3)
    shared = set(NAMES) & {f.name for f in dataclasses.fields(ReportSettings)}
    assert shared == set(NAMES) - {"overlap"}
    assert {name: getattr(settings, name) for name in shared} == {name: shifted[name] for name in shared}
    assert settings.seed == 3


def test_the_report_settings_default_to_the_model() -> None:
    plain = ReportSettings()
    assert all(getattr(plain, name) == getattr(DEFAULTS, name) for name in NAMES if name != "overlap")
