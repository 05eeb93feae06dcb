"""The report read one item at a time (analysis.report_columns) gives the in-memory report's numbers
and verdicts, names what it did not compute, and `annotator analyze --labels` takes that path."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from analysis.label_columns import LabelColumns
from analysis.report import Report, ReportSettings, build_report
from analysis.report_columns import NOT_COMPUTED, build_columns_report
from analysis.simulation import SimDesign, SimEffects, simulate_frame
from annotator.cli import app
from annotator.publish.export import write_label_dataset

runner = CliRunner()
SETTINGS = ReportSettings(n_boot=200)


def _labels(tmp_path: Path, design: SimDesign, seed: int) -> tuple[pd.DataFrame, Path]:
    """A simulated study as a label frame and as the Parquet label dataset the export writes."""
    frame = simulate_frame(np.random.default_rng(seed), design, SimEffects(noise=0.6))
    folder = tmp_path / "labels"
    write_label_dataset(frame, folder)
    return frame, folder


def _same_table(a: pd.DataFrame, b: pd.DataFrame, name: str) -> None:
    assert list(a.columns) == list(b.columns), name
    assert len(a) == len(b), name
    for column in a.columns:
        left, right = a[column], b[column]
        if pd.api.types.is_numeric_dtype(left) and not pd.api.types.is_bool_dtype(left):
            np.testing.assert_allclose(
                left.to_numpy(float), right.to_numpy(float), rtol=1e-9, atol=1e-12, err_msg=f"{name}.{column}"
            )
        else:
            assert left.astype(str).tolist() == right.astype(str).tolist(), f"{name}.{column}"


def _same_numbers(memory: Report, by_item: Report) -> None:
    for name in ("crossed", "equivalence", "broken", "superiority", "rubric_crossed", "preference_crossed"):
        _same_table(getattr(memory.validation, name), getattr(by_item.validation, name), name)
    for name in ("preference", "preference_judgments", "holm"):
        _same_table(getattr(memory.validation, name), getattr(by_item.validation, name), name)
    _same_table(memory.agreement, by_item.agreement, "agreement")
    _same_table(memory.design, by_item.design, "design")
    _same_table(memory.controls, by_item.controls, "controls")
    assert [v.to_dict() for v in memory.verdicts] == [v.to_dict() for v in by_item.verdicts]
    assert memory.overall == by_item.overall
    assert by_item.overall_reason.startswith(memory.overall_reason)
    for key in ("n_pairs", "n_annotators", "n_judgments", "n_scores", "n_control_pairs"):
        assert memory.summary[key] == by_item.summary[key], key


@pytest.mark.parametrize(
    "design",
    [
        SimDesign(n_pairs=300, per_pair=3, rubric_aspects=3),  # balanced: a fixed panel of 3
        SimDesign(n_pairs=400, per_pair=3, pool=9, rubric_aspects=2, positive_controls=8),  # 3 of 9
    ],
    ids=["balanced", "pool-with-controls"],
)
def test_the_report_read_by_item_equals_the_in_memory_report(tmp_path: Path, design: SimDesign) -> None:
    frame, folder = _labels(tmp_path, design, seed=5)
    memory = build_report(frame, study="s", settings=SETTINGS)
    by_item = build_columns_report(LabelColumns(folder), study="s", settings=SETTINGS, limit=10)
    _same_numbers(memory, by_item)
    if design.positive_controls:
        assert by_item.verdict("sensitivity").status != "not_assessed"
    assert set(by_item.not_computed) == set(NOT_COMPUTED)
    assert all("not computed at this size" in why for why in by_item.not_computed.values())
    assert "it rests on the verdicts sample_size, equivalence, rubric" in by_item.overall_reason


def test_an_unbalanced_study_with_missing_judgments_gives_the_same_numbers(tmp_path: Path) -> None:
    frame = simulate_frame(np.random.default_rng(8), SimDesign(n_pairs=500, per_pair=3, pool=6), SimEffects())
    judgments = frame[["pair_id", "annotator"]].drop_duplicates()
    dropped = judgments.sample(frac=0.2, random_state=1)  # some pairs keep 2 annotators, some 1
    keep = ~frame.set_index(["pair_id", "annotator"]).index.isin(
        dropped.set_index(["pair_id", "annotator"]).index
    )
    frame = frame[keep].reset_index(drop=True)
    path = tmp_path / "labels.parquet"
    frame.astype(dict.fromkeys(("pair_id", "annotator", "response", "item"), str)).to_parquet(path)
    memory = build_report(frame, study="s", settings=SETTINGS)
    by_item = build_columns_report(LabelColumns(path), study="s", settings=SETTINGS, limit=10)
    _same_numbers(memory, by_item)


def test_analyze_reads_a_dataset_by_item_and_every_output_names_what_was_not_computed(tmp_path: Path) -> None:
    _, folder = _labels(tmp_path, SimDesign(n_pairs=120, per_pair=3), seed=2)
    out_json, out_md, out_html = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.html"
    result = runner.invoke(
        app,
        ["analyze", "--labels", str(folder), "--by-item", "--n-boot", "50"]
        + ["--json", str(out_json), "--markdown", str(out_md), "--html", str(out_html)],
    )
    assert result.exit_code == 0, result.output
    assert "Not computed at this size:" in result.output
    assert "Cleaning list: not computed at this size" in result.output
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert set(report["not_computed"]) == set(NOT_COMPUTED)
    assert "read one item at a time, it rests on the verdicts" in report["overall_reason"]
    assert [v["key"] for v in report["verdicts"]][:2] == ["sample_size", "equivalence"]
    for path in (out_md, out_html):
        text = path.read_text(encoding="utf-8")
        assert "Not computed at this size" in text
        assert "needs every item of a pair at once" in text


def test_a_small_dataset_folder_is_read_whole_by_default(tmp_path: Path) -> None:
    _, folder = _labels(tmp_path, SimDesign(n_pairs=60, per_pair=3), seed=3)
    out_json = tmp_path / "r.json"
    result = runner.invoke(
        app, ["analyze", "--labels", str(folder), "--n-boot", "50", "--json", str(out_json)]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert report["not_computed"] == {}
    assert report["failed_pairs"] is not None and report["annotator_diagnostics"]


def test_a_bad_value_read_by_item_is_one_line_naming_file_item_row_and_column(
    tmp_path: Path,
) -> None:
    frame = simulate_frame(np.random.default_rng(4), SimDesign(n_pairs=30, per_pair=3), SimEffects())
    frame["value"] = frame["value"].astype(object)
    rows = np.flatnonzero((frame["item"] == "relevance").to_numpy())
    frame.loc[rows[6], "value"] = "lots"
    folder = tmp_path / "labels"
    write_label_dataset(frame.astype({"value": str}), folder)
    result = runner.invoke(app, ["analyze", "--labels", str(folder), "--by-item", "--n-boot", "20"])
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert str(folder) in lines[0]
    assert "item 'relevance'" in lines[0] and "column 'value'" in lines[0] and "row 7" in lines[0]
    assert "Traceback" not in result.output


def test_judges_with_labels_read_by_item_are_refused_in_one_line(tmp_path: Path) -> None:
    _, folder = _labels(tmp_path, SimDesign(n_pairs=20, per_pair=3), seed=1)
    judge = tmp_path / "judge.csv"
    judge.write_text("pair_id,preference\np0000,1\n", encoding="utf-8")
    result = runner.invoke(app, ["analyze", "--labels", str(folder), "--by-item", "--judges", str(judge)])
    assert result.exit_code != 0
    assert "--judges needs the whole label frame" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("by_item", ["--by-item", "--in-memory"])
@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"value": 9}, "column 'value (relevance)' must hold integers in 1..5, got: 9.0"),
        ({"value": float("inf")}, "column 'value (relevance)' must hold integers in 1..5, got: inf"),
        ({"value": 3.5}, "column 'value (relevance)' must hold integers in 1..5, got: 3.5"),
        ({"item": "relevanse"}, "column 'item' holds 'relevanse', which is neither a quality dimension"),
    ],
)
def test_a_quality_score_off_the_study_scale_or_an_unknown_item_is_one_line_naming_the_row(
    tmp_path: Path, by_item: str, change: dict[str, object], said: str
) -> None:
    frame = simulate_frame(np.random.default_rng(4), SimDesign(n_pairs=30, per_pair=3), SimEffects())
    rows = np.flatnonzero((frame["item"] == "relevance").to_numpy())
    for column, value in change.items():
        frame[column] = frame[column].astype(object)
        frame.loc[rows[6], column] = value
    path = tmp_path / "labels.csv"
    frame.to_csv(path, index=False)
    result = runner.invoke(app, ["analyze", "--labels", str(path), by_item, "--n-boot", "20"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1, result.output
    assert said in lines[0] and str(path) in lines[0]
    if by_item == "--in-memory":
        assert f"(first at row {rows[6] + 2})" in lines[0]  # the file's row as a spreadsheet counts it
    else:
        assert "within that item's rows" in lines[0]


def test_rubric_aspects_scored_on_one_response_only_are_left_out_on_both_paths(tmp_path: Path) -> None:
    """A judgment that scored an aspect on one response only: chosen and rejected are averaged over the
    aspects both were scored on (a chosen scored on aspects 0-1 and a rejected on 1-2 compared only on
    1), in memory and read by item alike."""
    from analysis.aggregates import judgment_differences

    frame = simulate_frame(np.random.default_rng(3), SimDesign(n_pairs=200, per_pair=3, rubric_aspects=3))
    aspect = frame["item"].str.startswith("rubric:")
    first = frame[["pair_id", "annotator"]].drop_duplicates().sample(frac=0.3, random_state=2)
    picked = frame.set_index(["pair_id", "annotator"]).index.isin(
        first.set_index(["pair_id", "annotator"]).index
    )
    lone = (
        picked
        & aspect
        & (
            ((frame["response"] == "chosen") & (frame["item"] == "rubric:2"))
            | ((frame["response"] == "rejected") & (frame["item"] == "rubric:0"))
        )
    )
    frame = frame[~lone].reset_index(drop=True)
    diffs = judgment_differences(frame, "rubric").set_index(["pair_id", "annotator"])["diff"]
    rows = frame[frame["item"].str.startswith("rubric:")]
    wide = rows.pivot_table(
        index=["pair_id", "annotator", "item"], columns="response", values="value"
    ).dropna()
    expected = (wide["chosen"] - wide["rejected"]).groupby(level=[0, 1]).mean()
    pd.testing.assert_series_equal(diffs.sort_index(), expected.sort_index(), check_names=False)
    path = tmp_path / "labels.parquet"
    frame.astype(dict.fromkeys(("pair_id", "annotator", "response", "item"), str)).to_parquet(path)
    memory = build_report(frame, study="s", settings=SETTINGS)
    by_item = build_columns_report(LabelColumns(path), study="s", settings=SETTINGS, limit=10)
    _same_numbers(memory, by_item)
