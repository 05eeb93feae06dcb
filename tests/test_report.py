"""The validation report: JSON against its schema, self-contained HTML, Markdown verdicts, the same
numbers as analysis.validation, and the `annotator analyze` and `annotator power` commands."""

import html
import json
import math
import re
from pathlib import Path

import jsonschema
import plotly.offline
import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from analysis.report import REPORT_SCHEMA, Report, methods_paragraph, to_html, to_json, to_markdown
from analysis.validation import validate_pairs
from annotator import ingest
from annotator.accounts import SYSTEM
from annotator.cli import app
from annotator.demo import SAMPLE
from annotator.readers import label_frame
from annotator.reporting import study_report
from annotator.simulate import SimulationSpec, simulate
from annotator.store import db
from annotator.study import get_study, parse_config
from tests.databases import fresh_db_url

STUDY = "sample"
runner = CliRunner()


def _database(tmp_path: Path, *, judged: bool = True) -> tuple[str, Engine]:
    url = fresh_db_url(tmp_path)
    db.upgrade(url)
    engine = db.make_engine(url)
    ingest.import_file(engine, SAMPLE, study=STUDY, account=SYSTEM)
    if judged:
        simulate(engine, study=STUDY, spec=SimulationSpec(seed=0))
    return url, engine


@pytest.fixture
def study(tmp_path: Path) -> tuple[str, Engine, Report]:
    url, engine = _database(tmp_path)
    with db.session_scope(engine) as session:
        report = study_report(session, study=STUDY, n_boot=100, account=SYSTEM)
    return url, engine, report


def test_json_validates_and_has_no_nan(study: tuple[str, Engine, Report]) -> None:
    _, _, report = study
    data = to_json(report)
    jsonschema.validate(data, REPORT_SCHEMA)
    text = json.dumps(data, allow_nan=False)
    assert json.loads(text) == data
    assert [row["dimension"] for row in data["equivalence"]] == report.parameters["quality_items"]
    for row in data["equivalence"]:
        for key in ("dimension", "estimate", "ci_low", "ci_high", "low", "high", "p_value", "equivalent"):
            assert key in row
        assert row["ci_low"] <= row["estimate"] <= row["ci_high"]
        assert row["low"] == -report.parameters["margin"] and row["high"] == report.parameters["margin"]
        assert isinstance(row["equivalent"], bool)


def test_json_numbers_equal_validate_pairs(study: tuple[str, Engine, Report]) -> None:
    """The report (used by the app and the CLI) holds exactly what validate_pairs computes."""
    _, engine, report = study
    with db.session_scope(engine) as session:
        frame = label_frame(session, study=STUDY, account=SYSTEM)
        config = parse_config(get_study(session, STUDY).config)
    direct = validate_pairs(
        frame,
        quality_items=config.dimension_names,
        margin=config.analysis.margin,
        alpha=config.analysis.alpha,
        mixed=False,
    )
    data = to_json(report)
    for got, want in zip(data["equivalence"], direct.equivalence.to_dict("records"), strict=True):
        for key in ("dimension", "n_pairs", "equivalent"):
            assert got[key] == want[key]
        for key in ("estimate", "ci_low", "ci_high", "low", "high", "p_value", "wilcoxon_p_value"):
            assert math.isclose(got[key], want[key], rel_tol=1e-12, abs_tol=1e-15), key
    sup, want_sup = data["rubric_superiority"][0], direct.superiority.iloc[0]
    for key in ("estimate", "ci_low", "ci_high", "p_holm"):
        assert math.isclose(sup[key], float(want_sup[key]), rel_tol=1e-12, abs_tol=1e-300), key
    pref, want_pref = data["preference"], direct.preference.iloc[0]
    for key in ("rate", "ci_low", "ci_high", "p_greater"):
        assert math.isclose(pref[key], float(want_pref[key]), rel_tol=1e-12, abs_tol=1e-300), key
    assert data["intersection_union"]["equivalent"] == bool(direct.iut.equivalent)


def test_html_is_self_contained(study: tuple[str, Engine, Report]) -> None:
    _, _, report = study
    page = to_html(report)
    assert "<script src=" not in page
    tags = re.findall(r"<script\b[^>]*>", page, flags=re.IGNORECASE)
    assert tags
    assert not [tag for tag in tags if re.search(r"\bsrc\s*=", tag, flags=re.IGNORECASE)]
    assert not [tag for tag in tags if re.search(r"https?://", tag, flags=re.IGNORECASE)]
    bundle_head = plotly.offline.get_plotlyjs()[:200]
    assert page.count(bundle_head) == 1
    assert page.count("plotly.js v") == 1
    assert html.escape(methods_paragraph(report)) in page
    for name in report.parameters["quality_items"]:
        assert name in page
    assert "<h2>Methods</h2>" in page


def test_markdown_has_one_line_per_verdict(study: tuple[str, Engine, Report]) -> None:
    _, _, report = study
    text = to_markdown(report)
    lines = [line for line in text.splitlines() if re.match(r"- \*\*(PASS|FAIL)\*\*: ", line)]
    assert len(lines) == len(report.verdicts) == 3
    for line, verdict in zip(lines, report.verdicts, strict=True):
        assert line.startswith(f"- **{'PASS' if verdict.passed else 'FAIL'}**: {verdict.claim}")
    assert methods_paragraph(report) in text


def test_cli_analyze_writes_three_files(tmp_path: Path, study: tuple[str, Engine, Report]) -> None:
    url, _, report = study
    paths = {kind: tmp_path / f"report.{kind}" for kind in ("json", "html", "md")}
    result = runner.invoke(
        app,
        [
            "--db",
            url,
            "analyze",
            "--study",
            STUDY,
            "--json",
            str(paths["json"]),
            "--html",
            str(paths["html"]),
            "--markdown",
            str(paths["md"]),
            "--n-boot",
            "100",
        ],
    )
    assert result.exit_code == 0, result.output
    assert all(path.stat().st_size > 0 for path in paths.values())
    marks = re.findall(r"^(PASS|FAIL) ", result.output, flags=re.MULTILINE)
    assert marks == ["PASS" if v.passed else "FAIL" for v in report.verdicts]
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    jsonschema.validate(data, REPORT_SCHEMA)
    expected = to_json(report)
    assert data["equivalence"] == expected["equivalence"]
    assert data["verdicts"] == expected["verdicts"]
    assert "<!DOCTYPE html>" in paths["html"].read_text(encoding="utf-8")
    assert "# Validation report: sample" in paths["md"].read_text(encoding="utf-8")


def _one_clear_line(output: str) -> str:
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    return lines[0]


def test_cli_analyze_unknown_study(tmp_path: Path) -> None:
    url, _ = _database(tmp_path, judged=False)
    result = runner.invoke(app, ["--db", url, "analyze", "--study", "nope"])
    assert result.exit_code == 1
    assert "nope" in _one_clear_line(result.output)


def test_cli_analyze_study_without_judgments(tmp_path: Path) -> None:
    url, _ = _database(tmp_path, judged=False)
    result = runner.invoke(app, ["--db", url, "analyze", "--study", STUDY])
    assert result.exit_code == 1
    line = _one_clear_line(result.output)
    assert "no judgments" in line and STUDY in line


def test_cli_power_prints_pairs() -> None:
    result = runner.invoke(app, ["power", "--margin", "0.5", "--sd", "1", "--annotators", "3"])
    assert result.exit_code == 0, result.output
    found = re.search(r"(\d+) pairs with 3 annotators", result.output)
    assert found is not None, result.output
    assert 2 <= int(found.group(1)) <= 36
