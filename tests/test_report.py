"""The validation report: verdicts and the overall result, JSON against its schema,
self-contained HTML, Markdown verdicts, the same numbers as analysis.validation, and the `annotator
analyze` (database and --labels) and `annotator power` commands."""

import base64
import html
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import jsonschema
import numpy as np
import pandas as pd
import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from analysis.render import (
    REPORT_FORMATS,
    REPORT_SCHEMA,
    escape_text,
    figure_captions,
    format_of_file,
    json_text,
    methods_paragraph,
    to_html,
    to_json,
    to_markdown,
    to_terminal,
)
from analysis.report import VERDICT_KEYS, Report, ReportSettings, build_report
from analysis.simulation import SimDesign, SimEffects, simulate_frame
from analysis.validation import validate_pairs
from annotator.cli import app
from annotator.demo import SAMPLE
from annotator.intake import ingest
from annotator.people.authorization import SYSTEM
from annotator.review.readers import label_frame
from annotator.review.study_report import study_report
from annotator.store import db
from annotator.study import get_study, parse_config
from annotator.synthetic import SimulationSpec, simulate
from tests.utils.databases import fresh_db_url
from tests.utils.factories import write_labels

pytestmark = pytest.mark.derived

STUDY = "sample"
runner = CliRunner()


def _database(tmp_path: Path, *, judged: bool = True, keep: bool = False) -> tuple[str, Engine]:
    url = fresh_db_url(tmp_path, migrated=True, keep=keep)
    engine = db.make_engine(url)
    ingest.import_file(engine, SAMPLE, study=STUDY, account=SYSTEM)
    if judged:
        simulate(engine, study=STUDY, spec=SimulationSpec(seed=0))
    return url, engine


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Engine, Report]]:
    """The judged sample study and its report, built once for the tests that only read them."""
    url, engine = _database(tmp_path_factory.mktemp("report"), keep=True)
    with db.session_scope(engine) as session:
        report = study_report(session, study=STUDY, n_boot=100, account=SYSTEM)
    yield url, engine, report
    engine.dispose()


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


def test_labels_collected_by_this_tool_are_called_blind_by_its_configuration(
    study: tuple[str, Engine, Report],
) -> None:
    """A study in the database was rated on this tool's A/B pages; its sides were assigned here."""
    _, _, report = study
    text = methods_paragraph(report)
    assert "with this tool" in text and "blind by the tool's configuration" in text
    n = report.summary["side_judgments"]
    assert n == report.summary["n_judgments"] and "chosen was shown on side A in " in text
    assert 0.3 < report.summary["side_a_share"] < 0.7  # assigned balanced


def test_the_json_file_holds_the_report_one_table_row_per_line(study: tuple[str, Engine, Report]) -> None:
    _, _, report = study
    text = json_text(report)
    assert json.loads(text) == json.loads(json.dumps(to_json(report)))
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    start = lines.index('  "cleaning": [') + 1
    rows = lines[start : start + len(report.cleaning)]
    assert [json.loads(row.rstrip(","))["pair_id"] for row in rows] == report.cleaning["pair_id"].tolist()
    assert lines[start + len(report.cleaning)].strip().startswith("]"), (
        "each row of the cleaning list is one line"
    )
    assert "NaN" not in text and "Infinity" not in text


def test_json_numbers_equal_validate_pairs(study: tuple[str, Engine, Report]) -> None:
    """The report (used by the app and the CLI) holds exactly what validate_pairs computes."""
    _, engine, report = study
    with db.session_scope(engine) as session:
        frame = label_frame(session, study=STUDY, account=SYSTEM)
        config = parse_config(get_study(session, STUDY).config)
    frame = frame[frame["control"] == ""]  # controls never enter the main analysis
    direct = validate_pairs(
        frame,
        quality_items=config.dimension_names,
        margin=config.analysis.margin,
        alpha=config.analysis.alpha,
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
    for got, want in zip(data["equivalence_crossed"], direct.crossed.to_dict("records"), strict=True):
        for key in ("estimate", "se", "df", "ci_low", "ci_high"):
            assert math.isclose(got[key], want[key], rel_tol=1e-9), key


def test_html_is_self_contained(study: tuple[str, Engine, Report]) -> None:
    _, _, report = study
    page = to_html(report)
    assert not re.search(r"<script\b", page, flags=re.IGNORECASE), "no script at all"
    assert not re.search(r"(src|href)\s*=\s*['\"]?https?://", page, flags=re.IGNORECASE)
    images = re.findall(r"<img src='data:image/svg\+xml;base64,([^']+)' alt='([^']+)'>", page)
    assert len(images) == len(figure_captions(report)) - report.categories.empty  # no categories: a line
    for encoded, alt in images:
        assert ElementTree.fromstring(base64.b64decode(encoded)).tag.endswith("svg")
        assert alt in {html.escape(caption) for caption in figure_captions(report).values()}
    assert html.escape(methods_paragraph(report)) in page
    for name in report.parameters["quality_items"]:
        assert name in page
    assert "<h2>Methods</h2>" in page


def test_html_aligns_words_left_and_numbers_right(study: tuple[str, Engine, Report]) -> None:
    """A column of words (a verdict's sentence, a reason) is left-aligned; a column of numbers is not."""
    _, _, report = study
    page = to_html(report)
    assert ".text{text-align:left}" in page.replace("th:first-child,.text", ".text")
    cells = re.findall(r"<td data-label='([^']*)'( class='text')?>([^<]*)</td>", page)
    assert cells
    for label, text_class, value in cells:
        shown = html.unescape(value).strip()
        number = re.fullmatch(r"[<>]?\s*-?[0-9.,]+(e-?[0-9]+)?%?", shown)
        if shown and not number:
            assert text_class, (label, value)
    assert any(not text_class and value.strip() for _, text_class, value in cells)


def test_markdown_has_one_line_per_verdict(study: tuple[str, Engine, Report]) -> None:
    _, _, report = study
    text = to_markdown(report)
    words = "PASS|FAIL|INCONCLUSIVE|NOT ASSESSED"
    lines = [line for line in text.splitlines() if re.match(rf"- \*\*({words})\*\* \(", line)]
    assert len(lines) == len(report.verdicts) == len(VERDICT_KEYS)
    for line, verdict in zip(lines, report.verdicts, strict=True):
        assert line.startswith(
            f"- **{verdict.status.replace('_', ' ').upper()}** ({verdict.key}): "
            + escape_text(verdict.claim, "markdown")
        )
    assert f"**Overall: {report.overall}**" in text
    assert escape_text(methods_paragraph(report), "markdown") in text


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
    marks = re.findall(r"^(PASS|FAIL|INCONCLUSIVE|NOT ASSESSED) ", result.output, flags=re.MULTILINE)
    assert marks == [v.status.replace("_", " ").upper() for v in report.verdicts]
    assert f"OVERALL {report.overall}" in result.output
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    jsonschema.validate(data, REPORT_SCHEMA)
    expected = to_json(report)
    assert data["equivalence"] == expected["equivalence"]
    assert data["verdicts"] == expected["verdicts"]
    assert "<!DOCTYPE html>" in paths["html"].read_text(encoding="utf-8")
    assert "# Validation report: sample" in paths["md"].read_text(encoding="utf-8")


def test_cli_analyze_writes_every_registered_format_by_suffix(
    tmp_path: Path, study: tuple[str, Engine, Report]
) -> None:
    """`--out FILE` (repeatable) writes each registered format, chosen by the file's suffix, with the
    same bytes the registry's renderer gives; an unknown suffix is one line and nothing is written."""
    url, _, report = study
    paths = [tmp_path / f"report.{fmt.suffix}" for fmt in REPORT_FORMATS]
    args = ["--db", url, "analyze", "--study", STUDY, "--n-boot", "100"]
    result = runner.invoke(app, args + [x for path in paths for x in ("--out", str(path))])
    assert result.exit_code == 0, result.output
    for path, fmt in zip(paths, REPORT_FORMATS, strict=True):
        assert format_of_file(path) is fmt
        assert path.stat().st_size > 0
    assert json.loads(paths[[f.name for f in REPORT_FORMATS].index("json")].read_text()) == json.loads(
        json_text(report)
    )
    bad = tmp_path / "report.docx"
    result = runner.invoke(app, args + ["--out", str(bad)])
    assert result.exit_code == 1
    assert "must end in one of .html, .json, .md" in _one_clear_line(result.output)
    assert not bad.exists()


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
    # per-pair SD 1 / sqrt(3); the exact TOST power (tost_power) first reaches 0.8 at 13 pairs
    assert int(found.group(1)) == 13
    assert "from a pool of" in result.output


# ------------------------------------------------------------------------------------------ verdicts


def _frame(seed: int, design: SimDesign, effects: SimEffects = SimEffects()) -> pd.DataFrame:
    return simulate_frame(np.random.default_rng(seed), design, effects)


def test_reliable_study_passes_with_every_verdict_keyed() -> None:
    # 8 judgments per pair: few broken pairs, for any distribution of gaps, needs precise pair means
    frame = _frame(3, SimDesign(n_pairs=200, per_pair=8, pool=12, positive_controls=8), SimEffects(noise=0.4))
    rep = build_report(frame, study="ok", settings=ReportSettings(n_boot=200))
    assert [v.key for v in rep.verdicts] == list(VERDICT_KEYS)
    assert rep.overall == "PASS", rep.overall_reason
    # the positive controls show assay sensitivity, so alpha is reported, not a gate
    assert all(v.status == "pass" for v in rep.verdicts if v.key != "reliability")
    assert rep.verdict("reliability").status == "not_assessed"
    assert "reported only" in rep.verdict("reliability").detail
    assert rep.summary["n_control_pairs"] == 8 and rep.summary["n_pairs"] == 200


def test_pure_noise_ratings_do_not_pass() -> None:
    """Uniform 1-5 quality ratings were "equivalent"; reliability now fails them."""
    rep = build_report(
        _frame(1, SimDesign(n_pairs=60), SimEffects(pure_noise=True)),
        study="noise",
        settings=ReportSettings(n_boot=200),
    )
    assert rep.verdict("reliability").status == "fail"
    assert rep.overall == "FAIL"
    assert "reliability: failed" in rep.overall_reason


def test_two_pairs_rated_once_all_fours_is_not_a_pass() -> None:
    """Once p = 0 and PASS from zero variance; now too few pairs, and the exact bound for unanimous
    judgments over the one annotator: p = (7/8)^1, no equivalence."""
    frame = _frame(0, SimDesign(n_pairs=2, per_pair=1, items=("correctness",), rubric_aspects=0))
    frame["value"] = 4.0
    rep = build_report(frame, study="tiny", settings=ReportSettings(quality_items=["correctness"], n_boot=50))
    assert rep.overall != "PASS"
    assert rep.verdict("sample_size").status == "inconclusive"
    assert "at least 20 are needed before the study can PASS overall" in rep.verdict("sample_size").detail
    crossed = rep.validation.crossed.iloc[0]
    assert crossed["pvalue"] == pytest.approx(0.875) and not crossed["equivalent"]


def test_a_single_annotator_cannot_generalize() -> None:
    frame = _frame(4, SimDesign(n_pairs=60, per_pair=1), SimEffects(noise=0.4))
    rep = build_report(frame, study="one", settings=ReportSettings(n_boot=100))
    eq = rep.verdict("equivalence")
    assert eq.status == "inconclusive"
    assert "only one annotator" in eq.detail
    assert rep.overall == "INCONCLUSIVE"


def test_panel_equivalence_that_does_not_generalize_says_how_many_annotators() -> None:
    """Three annotators who disagree on the gap: the per-pair TOST passes for this panel, the crossed
    test does not, and the verdict names the pool that would be needed."""
    frame = _frame(
        7, SimDesign(n_pairs=150, items=("correctness",)), SimEffects(annotator_gap_sd=0.35, noise=0.4)
    )
    rep = build_report(
        frame, study="panel", settings=ReportSettings(quality_items=["correctness"], n_boot=100)
    )
    assert rep.validation.iut_panel.equivalent and not rep.validation.iut.equivalent
    eq = rep.verdict("equivalence")
    assert eq.status == "inconclusive"
    assert "conditional on this panel of 3 annotators" in eq.detail
    assert re.search(r"about \d+ annotators", eq.detail)


def test_positive_controls_required_but_missing_blocks_pass() -> None:
    frame = _frame(3, SimDesign(n_pairs=60, pool=12), SimEffects(noise=0.4))
    assert (
        build_report(frame, study="x", settings=ReportSettings(n_boot=100)).verdict("sensitivity").status
        == "not_assessed"
    )
    rep = build_report(frame, study="x", settings=ReportSettings(n_boot=100, require_positive_controls=True))
    assert rep.verdict("sensitivity").status == "inconclusive" and rep.overall == "INCONCLUSIVE"


def test_positive_controls_that_are_not_seen_fail() -> None:
    frame = _frame(
        3, SimDesign(n_pairs=60, pool=12, positive_controls=10), SimEffects(control_defect=0.0, noise=0.4)
    )
    rep = build_report(frame, study="x", settings=ReportSettings(n_boot=100))
    assert rep.verdict("sensitivity").status in ("fail", "inconclusive")
    assert rep.overall != "PASS"
    few = build_report(
        _frame(3, SimDesign(n_pairs=60, pool=12, positive_controls=3), SimEffects(noise=0.4)),
        study="x",
        settings=ReportSettings(n_boot=100),
    )
    assert "too few control pairs (3 of 5)" in few.verdict("sensitivity").detail


def test_controls_never_enter_the_main_analysis() -> None:
    frame = _frame(5, SimDesign(n_pairs=40, positive_controls=10), SimEffects(noise=0.4))
    with_controls = build_report(frame, study="x", settings=ReportSettings(n_boot=50))
    without = build_report(frame[frame["control"] == ""], study="x", settings=ReportSettings(n_boot=50))
    pd.testing.assert_frame_equal(with_controls.validation.crossed, without.validation.crossed)
    assert with_controls.summary["n_pairs"] == 40


def test_bias_and_category_tables() -> None:
    frame = _frame(6, SimDesign(n_pairs=60, pool=10), SimEffects(noise=0.4))
    frame["category"] = np.where(frame["pair_id"].str[-1].isin(list("01234")), "cooking", "travel")
    rep = build_report(frame, study="x", settings=ReportSettings(n_boot=50))
    terms = set(rep.bias["term"])
    assert "rate of preferring side A (non-tied judgments)" in terms
    assert "side: chosen shown as A" in terms and "length: chosen - rejected, per 1000 characters" in terms
    assert set(rep.categories["category"]) == {"cooking", "travel"}
    assert {"correctness", "rubric"} <= set(rep.categories["item"])
    assert "mde" in rep.validation.superiority.columns


def test_renderings_of_a_frame_report() -> None:
    rep = build_report(
        _frame(3, SimDesign(n_pairs=40), SimEffects(noise=0.4)), study="x", settings=ReportSettings(n_boot=50)
    )
    data = to_json(rep)
    jsonschema.validate(data, REPORT_SCHEMA)
    json.dumps(data, allow_nan=False)
    assert "krippendorff_alpha" in data["agreement"][0] and "alpha" not in data["agreement"][0]
    assert data["parameters"]["alpha"] == 0.05  # the significance level
    assert [v["key"] for v in data["verdicts"]] == list(VERDICT_KEYS)
    terminal = to_terminal(rep)
    assert f"OVERALL {rep.overall}" in terminal and "conditional on this panel" in terminal


def test_cli_analyze_labels_file_without_a_database(tmp_path: Path) -> None:
    """Labels from any tool: the long label format as CSV gives the same report as the frame."""
    frame = _frame(3, SimDesign(n_pairs=30), SimEffects(noise=0.4))
    path = tmp_path / "labels.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["analyze", "--labels", str(path), "--json", str(out), "--n-boot", "50"])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(data, REPORT_SCHEMA)
    direct = to_json(build_report(frame, study="labels", settings=ReportSettings(n_boot=50)))
    assert data["equivalence_crossed"] == direct["equivalence_crossed"]
    assert data["verdicts"] == direct["verdicts"]
    both = runner.invoke(app, ["analyze"])
    assert both.exit_code == 1 and "either --study S" in _one_clear_line(both.output)


def test_cli_analyze_a_bad_labels_file_names_the_file_the_column_and_the_row(tmp_path: Path) -> None:
    frame = _frame(3, SimDesign(n_pairs=30), SimEffects(noise=0.4)).astype({"value": object})
    frame.loc[6, "value"] = "good"
    path = tmp_path / "labels.csv"
    frame.to_csv(path, index=False)
    result = runner.invoke(app, ["analyze", "--labels", str(path)])
    assert result.exit_code == 1
    line = " ".join(_one_clear_line(result.output).split())  # the terminal may wrap the path
    assert (
        "labels.csv" in line and "column 'value' has non-numeric values: 'good' (first at row 8)" in line
    )  # the header is row 1


@pytest.mark.parametrize(("suffix", "row"), [(".csv", 8), (".jsonl", 7), (".parquet", 7)])
def test_a_labels_files_bad_row_is_counted_as_the_pair_and_judge_imports_count_it(
    tmp_path: Path, suffix: str, row: int
) -> None:
    """Record 7 is row 8 of a CSV file (its header is row 1, as a spreadsheet shows it and as `import`
    and `judges import` name a CSV row), row 7 of a JSON lines or Parquet file."""
    frame = _frame(3, SimDesign(n_pairs=30), SimEffects(noise=0.4))
    frame.loc[6, "value"] = 9.0  # off the 1-5 scale: found by the study's scales, after the frame's checks
    path = write_labels(tmp_path / f"labels{suffix}", frame)
    result = runner.invoke(app, ["analyze", "--labels", str(path)])
    line = " ".join(_one_clear_line(result.output).split())
    assert result.exit_code == 1 and f"must hold integers in 1..5, got: 9.0 (first at row {row})" in line


@pytest.mark.parametrize("item", ["correctness", "rubric"])
def test_an_item_scored_on_one_pair_only_is_named_in_one_error(item: str) -> None:
    """Early in a study (or after a filter) an item may have scores for both responses of one pair:
    the report refuses with the item's name, never with a bare arithmetic error."""
    frame = simulate_frame(np.random.default_rng(3), SimDesign(n_pairs=4, per_pair=2, rubric_aspects=1))
    rows = frame["item"].str.startswith("rubric") if item == "rubric" else frame["item"] == item
    frame = frame[~rows | (frame["pair_id"] == frame["pair_id"].iloc[0])]
    with pytest.raises(ValueError, match=f"'{item}' has scores for both responses of 1 pair"):
        build_report(frame, study="s", settings=ReportSettings(n_boot=20, min_pairs=2))


def test_the_methods_and_the_test_count_dimensions_and_degrees_with_their_nouns() -> None:
    """One quality dimension and two annotators: "over 1 dimension", "on 1 degree of freedom"."""
    frame = _frame(5, SimDesign(n_pairs=30, per_pair=2, items=("correctness",), rubric_aspects=0))
    rep = build_report(frame, study="two", settings=ReportSettings(quality_items=["correctness"], n_boot=50))
    assert "intersection-union over 1 dimension;" in rep.verdict("equivalence").test
    assert "rests on 1 degree of freedom," in methods_paragraph(rep)
