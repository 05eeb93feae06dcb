"""`annotator analyze --labels FILE --judges FILE`: the alternative annotator test and its content-blind
baseline from files alone, with the checks of `judges import` (every problem named by file, row and
field; nothing written) and hostile text kept as text."""

import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from analysis.render import REPORT_SCHEMA
from annotator.cli import app
from tests.utils.judgehelpers import beta_study, preference_judge

pytestmark = pytest.mark.nodb  # files only, no database: CI's PostgreSQL pass leaves it out

runner = CliRunner()


@pytest.fixture(scope="module")
def labels(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """A labels CSV (5 annotators x 60 pairs, P(chosen) ~ Beta(3, 1)) and each pair's P(chosen)."""
    frame, p_chosen = beta_study(
        annotators=5, pairs=60, seed=11, items=("correctness", "relevance", "helpfulness")
    )
    path = tmp_path_factory.mktemp("labels") / "labels.csv"
    frame.to_csv(path, index=False)
    return path, p_chosen


def _pairs() -> list[str]:
    return [f"p{i:03d}" for i in range(60)]


def _good_judge(path: Path, p_chosen: np.ndarray) -> Path:
    """No judge column (the name comes from the file); the preference in both orders."""
    pref = np.where(p_chosen > 0.5, 2.0, -2.0)
    frame = preference_judge(
        "x",
        [*_pairs(), *_pairs()],
        np.concatenate([pref, pref]),
        ["chosen_first"] * 60 + ["rejected_first"] * 60,
    )
    frame = frame.drop(columns=["judge", "value", "confidence"]).assign(rationale="<script>alert(1)</script>")
    frame.to_csv(path, index=False)
    return path


def _first_judge(path: Path) -> Path:
    """A judge column; picks whichever response it was shown first."""
    first = np.random.default_rng(2).random(60) < 0.5
    orders = ["chosen_first" if f else "rejected_first" for f in first]
    frame = preference_judge("first-position", _pairs(), np.where(first, 2.0, -2.0), orders)
    frame.drop(columns=["value", "confidence"]).to_csv(path, index=False)
    return path


def _lines(output: str) -> list[str]:
    assert "Traceback" not in output
    return [" ".join(line.split()) for line in output.splitlines() if line.strip()]


def test_analyze_runs_the_alt_test_and_the_baseline_on_files(
    labels: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    path, p_chosen = labels
    good = _good_judge(tmp_path / "good-judge.csv", p_chosen)
    first = _first_judge(tmp_path / "judge-two.csv")
    out, html = tmp_path / "report.json", tmp_path / "report.html"
    result = runner.invoke(
        app,
        [
            "analyze",
            "--labels",
            str(path),
            "--judges",
            str(good),
            "--judges",
            str(first),
            "--json",
            str(out),
            "--html",
            str(html),
            "--n-boot",
            "20",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(data, REPORT_SCHEMA)
    rows = {(row["judge"], row["item"]): row for row in data["judges"]}
    assert list(rows) == [("first-position", "preference"), ("good-judge", "preference")]
    assert rows[("good-judge", "preference")]["can_replace"] is True
    assert rows[("first-position", "preference")]["can_replace"] is False
    assert rows[("first-position", "preference")]["beats_baseline"] is False
    assert rows[("first-position", "preference")]["baseline"] in ("first position", "longer response")
    cards = {card["judge"]: card for card in data["judge_cards"]}
    assert cards["first-position"]["position_bias"] is True
    page = html.read_text(encoding="utf-8")
    assert "content-blind" in page and "<script>alert(1)" not in page


def test_a_bad_judge_file_names_file_row_and_field_and_writes_nothing(
    labels: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    path, p_chosen = labels
    bad = _good_judge(tmp_path / "bad-judge.csv", p_chosen)
    frame = pd.read_csv(bad)
    frame.loc[2, "preference"] = 7
    frame.to_csv(bad, index=False)
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["analyze", "--labels", str(path), "--judges", str(bad), "--json", str(out)])
    assert result.exit_code == 1
    lines = _lines(result.output)
    assert "bad-judge.csv" in lines[0] and lines[0].endswith("1 problem(s), nothing was analysed")
    assert lines[1:] == ["row 4, field preference: must be between -2 and 2, got 7"]
    assert not out.exists()


def test_a_pair_outside_the_labels_is_refused(labels: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    path, _ = labels
    judge = preference_judge("j", ["p000", "nope"], np.array([1.0, 1.0]), ["", ""])
    file = tmp_path / "j.csv"
    judge.to_csv(file, index=False)
    result = runner.invoke(app, ["analyze", "--labels", str(path), "--judges", str(file)])
    assert result.exit_code == 1
    assert (
        "row 3, field pair_id: no pair 'nope' in the labels file (give the pair file with --pairs for "
        "pairs no person rated)"
    ) in _lines(result.output)


def test_a_hostile_judge_name_is_refused_as_text(labels: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    path, _ = labels
    judge = preference_judge("<img src=x onerror=alert(1)>", ["p000"], np.array([1.0]), [""])
    file = tmp_path / "hostile.csv"
    judge.to_csv(file, index=False)
    result = runner.invoke(app, ["analyze", "--labels", str(path), "--judges", str(file)])
    assert result.exit_code == 1
    lines = _lines(result.output)
    assert lines[1].startswith("row 2, field judge: '<img src=x onerror=alert(1)>' may hold only letters")


def test_a_row_without_a_judge_needs_a_file_name_that_is_a_judge_name(
    labels: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    path, _ = labels
    file = tmp_path / "my judge!.csv"
    preference_judge("", ["p000"], np.array([1.0]), [""]).to_csv(file, index=False)
    result = runner.invoke(app, ["analyze", "--labels", str(path), "--judges", str(file)])
    assert result.exit_code == 1
    assert "row 2, field judge: missing (and the file's name is no judge name to take instead)" in _lines(
        result.output
    )


@pytest.mark.parametrize(
    ("option", "refusal"),
    [
        (
            ["--config", "study.toml"],
            "--config goes with --labels (a study in the database has its own settings)",
        ),
        (["--by-item"], "--by-item and --in-memory go with --labels"),
        (["--in-memory"], "--by-item and --in-memory go with --labels"),
    ],
)
def test_options_for_files_are_refused_with_a_study_not_ignored(option: list[str], refusal: str) -> None:
    result = runner.invoke(app, ["analyze", "--study", "s1", *option])
    assert result.exit_code == 1 and _lines(result.output) == [f"error: {refusal}"]


def test_judges_need_labels_and_one_file_per_judge(labels: tuple[Path, np.ndarray], tmp_path: Path) -> None:
    path, p_chosen = labels
    good = _good_judge(tmp_path / "good.csv", p_chosen)
    alone = runner.invoke(app, ["analyze", "--study", "s1", "--judges", str(good)])
    assert alone.exit_code == 1 and _lines(alone.output) == [
        "error: --judges goes with --labels (a study's judges come from `annotator judges import`)"
    ]
    copy = tmp_path / "copy.csv"
    pd.read_csv(good).assign(judge="good").to_csv(copy, index=False)
    twice = runner.invoke(
        app, ["analyze", "--labels", str(path), "--judges", str(good), "--judges", str(copy)]
    )
    assert twice.exit_code == 1
    assert any("judge 'good' is already given in" in line for line in _lines(twice.output))


def test_analyze_on_files_adds_the_prediction_powered_verdicts_over_every_judged_pair(
    labels: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    """A pair file with 60 pairs beyond the people's 60 and a judge rating all 120: the report (text and
    JSON) has the prediction-powered section over 120 pairs, 60 of them rated by people; a judge on the
    people's pairs only adds none."""
    from tests.utils.factories import make_record, write_jsonl

    path, _ = labels
    people = pd.read_csv(path)
    means = people.groupby(["pair_id", "response", "item"])["value"].mean()
    ids = [f"p{i:03d}" for i in range(120)]
    pair_file = write_jsonl(tmp_path / "pairs.jsonl", [make_record(i, id=pair) for i, pair in enumerate(ids)])
    rows = [
        {
            "pair_id": pair,
            "response": response,
            "item": item,
            "value": float(np.clip(means.get((pair, response, item), 3.0 + (i % 3) / 2), 1, 5)),
        }
        for i, pair in enumerate(ids)
        for item in ("correctness", "relevance", "helpfulness")
        for response in ("chosen", "rejected")
    ]
    judge = tmp_path / "every-pair.csv"
    pd.DataFrame(rows).to_csv(judge, index=False)
    out = tmp_path / "report.json"
    args = ["analyze", "--labels", str(path), "--judges", str(judge), "--n-boot", "20", "--json", str(out)]
    result = runner.invoke(app, [*args, "--pairs", str(pair_file)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(data, REPORT_SCHEMA)
    table = data["prediction_powered"]
    assert {row["dimension"] for row in table} == {"correctness", "relevance", "helpfulness"}
    assert {(row["judge"], row["n_pairs"], row["n_rated"]) for row in table} == {("every-pair", 120, 60)}
    assert all(0.0 <= row["lam"] <= 1.0 for row in table)
    [verdict] = data["prediction_powered_verdicts"]
    assert verdict["sentence"].startswith("Verdict over 120 pairs, 60 of them rated by people")
    assert "Verdict over 120 pairs, 60 of them rated by people" in " ".join(_lines(result.output))
    pd.DataFrame(rows[: 60 * 6]).to_csv(judge, index=False)  # the people's pairs only: no section
    rated_only = runner.invoke(app, args)
    assert rated_only.exit_code == 0, rated_only.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["judges"] and not any(key.startswith("prediction_powered") for key in data)
    assert "Verdict over" not in rated_only.output


def test_a_judged_pair_outside_the_pair_file_names_the_pair_file(
    labels: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    from tests.utils.factories import make_record, write_jsonl

    path, _ = labels
    pair_file = write_jsonl(tmp_path / "pairs.jsonl", [make_record(i, id=f"p{i:03d}") for i in range(60)])
    judge = preference_judge("j", ["p000", "elsewhere"], np.array([1.0, 1.0]), ["", ""])
    file = tmp_path / "j.csv"
    judge.to_csv(file, index=False)
    result = runner.invoke(
        app, ["analyze", "--labels", str(path), "--judges", str(file), "--pairs", str(pair_file)]
    )
    assert result.exit_code == 1
    assert f"row 3, field pair_id: no pair 'elsewhere' in the pair file {pair_file}" in _lines(result.output)


def test_labels_of_pairs_outside_the_pair_file_are_one_line_not_a_report_without_judges(
    labels: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    """The pair file names other pairs than the labels rate (a judge checked against it would share no
    pair with the people, and the report would drop it without a word): one line, nothing written."""
    from tests.utils.factories import make_record, write_jsonl

    path, _ = labels
    pair_file = write_jsonl(tmp_path / "pairs.jsonl", [make_record(i, id=f"other{i}") for i in range(2)])
    judge = preference_judge("j", ["other0", "other1"], np.array([1.0, 1.0]), ["", ""])
    file = tmp_path / "j.csv"
    judge.to_csv(file, index=False)
    out = tmp_path / "report.json"
    result = runner.invoke(
        app,
        [
            "analyze",
            "--labels",
            str(path),
            "--judges",
            str(file),
            "--pairs",
            str(pair_file),
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 1 and not out.exists()
    [line] = _lines(result.output)
    assert line.startswith(f"error: {pair_file}: 60 labelled pair(s) are not in this pair file (e.g. 'p000')")


def test_an_output_that_cannot_be_written_is_refused_before_anything_is_written(
    labels: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    path, _ = labels
    good = tmp_path / "report.json"
    folder = tmp_path / "a-folder.html"
    folder.mkdir()
    for bad, said in [
        (tmp_path / "absent" / "report.html", f"no folder {tmp_path / 'absent'}"),
        (folder, "it is a folder"),
    ]:
        result = runner.invoke(
            app, ["analyze", "--labels", str(path), "--json", str(good), "--out", str(bad)]
        )
        assert result.exit_code == 1 and not good.exists()
        assert _lines(result.output) == [f"error: cannot write {bad}: {said}"]


def test_the_terminal_says_why_a_judge_that_passes_the_alt_test_cannot_replace() -> None:
    """A judge that passes the alt-test but does not beat the content-blind judge by the margin: its
    line says so; a judge that fails the alt-test, or beats the baseline, gets no such clause."""
    from types import SimpleNamespace

    from analysis.render.as_terminal import judge_lines

    base = {"item": "helpfulness", "winning_rate": 1.0, "advantage_probability": 0.8, "n_pairs": 39}
    base |= {
        "baseline": "longer response",
        "baseline_advantage": 0.75,
        "epsilon_too_loose": True,
        "margin": 0.05,
    }
    table = pd.DataFrame(
        [
            {
                **base,
                "judge": "blind",
                "passes_alt_test": True,
                "beats_baseline": False,
                "can_replace": False,
            },
            {**base, "judge": "reader", "passes_alt_test": True, "beats_baseline": True, "can_replace": True},
            {
                **base,
                "judge": "weak",
                "passes_alt_test": False,
                "beats_baseline": False,
                "can_replace": False,
            },
        ]
    )
    report = SimpleNamespace(judges=SimpleNamespace(table=table, parameters={"epsilon": 0.2}))
    lines = {line.split()[0]: line for line in judge_lines(report)[2:]}  # type: ignore[arg-type]
    clause = "passes the alt-test but does not beat the content-blind judge by 0.05"
    assert lines["blind"].endswith(clause) and " cannot replace " in lines["blind"]
    assert clause not in lines["reader"] and " can replace " in lines["reader"]
    assert clause not in lines["weak"]
    assert judge_lines(SimpleNamespace(judges=None)) == []  # type: ignore[arg-type]


def test_a_judge_that_rates_every_response_4_cannot_replace_the_people(tmp_path: Path) -> None:
    """Integer ratings around 4, 150 pairs, 3 of 5 annotators: a judge that gives every response 4
    ties the left-out annotator whenever the others agree (a tie counts as the judge's win), so it
    passed the alt-test and beat the people's mean rating, which never ties: "can replace" without
    reading a response. The constant 4 is now among the content-blind judges; the judge cannot beat
    itself."""
    rng = np.random.default_rng(3)
    rows, judge = [], []
    quality = rng.normal(4, 0.5, 150)
    for i in range(150):
        for a in rng.choice(5, 3, replace=False):
            for item in ("correctness", "relevance", "helpfulness"):
                for response in ("chosen", "rejected"):
                    value = int(np.clip(round(quality[i] + rng.normal(0, 0.7)), 1, 5))
                    rows.append((f"p{i:03d}", f"a{a}", response, item, value, 1, 2, 30.0))
        judge += [
            (f"p{i:03d}", r, item, 4, 1)
            for r in ("chosen", "rejected")
            for item in ("correctness", "relevance", "helpfulness")
        ]
    columns = ["pair_id", "annotator", "response", "item", "value", "preference", "confidence", "time_s"]
    pd.DataFrame(rows, columns=columns).to_csv(tmp_path / "labels.csv", index=False)
    pd.DataFrame(judge, columns=["pair_id", "response", "item", "value", "preference"]).to_csv(
        tmp_path / "always-four.csv", index=False
    )
    out = tmp_path / "report.json"
    labels_file, judge_file = tmp_path / "labels.csv", tmp_path / "always-four.csv"
    result = runner.invoke(
        app, ["analyze", "--labels", str(labels_file), "--judges", str(judge_file), "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    rows_out = [r for r in json.loads(out.read_text())["judges"] if r["item"] != "preference"]
    assert len(rows_out) == 3
    assert all(r["baseline"] == "same rating 4" and r["can_replace"] is False for r in rows_out)


def test_a_judge_on_too_few_pairs_to_test_has_no_baseline_p_value(
    labels: tuple[Path, np.ndarray], tmp_path: Path
) -> None:
    """A judge on 20 pairs: no annotator shares the alt-test's minimum of instances with it, nothing is
    tested, and the baseline's p value is null (it was 1.0 beside an advantage of NaN)."""
    path, _ = labels
    few = preference_judge("few", _pairs()[:20], np.full(20, 2.0), ["chosen_first"] * 20)
    few.drop(columns=["value", "confidence"]).to_csv(tmp_path / "few.csv", index=False)
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["analyze", "--labels", str(path), "--judges", str(tmp_path / "few.csv"),
                                 "--json", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    row = json.loads(out.read_text())["judges"][0]
    assert row["passes_alt_test"] is None and row["baseline_p_value"] is None
