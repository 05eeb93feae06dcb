"""The rubric claim over every judged pair (prediction-powered, the same PPI++ core as equivalence):
the people-only answer without unrated pairs, a report table when a judge rates the rubric aspects of
pairs beyond the people's, and under a weighted draw its weighted form."""

from __future__ import annotations

import jsonschema
import numpy as np
import pandas as pd
import pytest

from analysis import render
from analysis.aggregates import judgment_differences
from analysis.crossed_mean import crossed_mean
from analysis.frames import split_controls
from analysis.ppi_report import judge_rubric_gaps, prediction_powered_section
from analysis.prediction_powered import prediction_powered_superiority
from analysis.report import ReportSettings, build_report
from analysis.simulation import SimDesign, SimEffects, simulate_frame

pytestmark = pytest.mark.nodb  # statistics and static checks: no database

ITEMS = ("correctness", "relevance", "helpfulness")


@pytest.fixture(scope="module")
def main() -> pd.DataFrame:
    frame = simulate_frame(
        np.random.default_rng(8),
        SimDesign(n_pairs=40, per_pair=3, pool=6, rubric_aspects=2),
        SimEffects(rubric_gap=0.6),
    )
    return split_controls(frame)[0]


def _rubric_judge(main: pd.DataFrame, extra: int) -> pd.DataFrame:
    """A judge that gives the people's pairs their mean rubric ratings and `extra` more pairs a rubric
    gap of 0.6 (chosen 3.3, rejected 2.7), on aspects rubric:0 and rubric:1."""
    rubric = main[main["item"].astype(str).str.startswith("rubric:")]
    means = rubric.groupby(["pair_id", "response", "item"])["value"].mean()
    rows = [
        (pair, "j", "", response, item, float(value), np.nan, np.nan)
        for (pair, response, item), value in means.items()
    ]
    for k in range(extra):
        for item in ("rubric:0", "rubric:1"):
            rows += [(f"new-{k}", "j", "", "chosen", item, 3.3, np.nan, np.nan)]
            rows += [(f"new-{k}", "j", "", "rejected", item, 2.7, np.nan, np.nan)]
    columns = ["pair_id", "judge", "order", "response", "item", "value", "preference", "confidence"]
    return pd.DataFrame(rows, columns=columns)


def test_without_unrated_pairs_the_rubric_test_is_the_people_only_one(main: pd.DataFrame) -> None:
    d = judgment_differences(main, "rubric")
    gap = judge_rubric_gaps(_rubric_judge(main, 0))
    res = prediction_powered_superiority(d, gap, item="rubric")
    people = crossed_mean(d["diff"], d["pair_id"], d["annotator"], item="rubric")
    assert res.lam == 0.0 and res.n_pairs == res.n_rated == d["pair_id"].nunique()
    assert res.estimate == pytest.approx(people.estimate) and res.p_greater == pytest.approx(people.p_greater)


def test_a_judge_on_more_pairs_adds_the_rubric_table(main: pd.DataFrame) -> None:
    judges = _rubric_judge(main, 80)
    section = prediction_powered_section(main, judges, quality_items=ITEMS, margin=0.5)
    assert section is not None
    [row] = section.rubric.to_dict("records")
    assert row["judge"] == "j" and row["n_pairs"] == 120 and row["n_rated"] == 40
    assert 0.0 < row["lam"] <= 1.0 and row["effective_pairs"] > 40
    assert row["status"] == ("pass" if row["p_greater"] < 0.05 else "inconclusive")
    drawn = pd.Series(1 / 3, index=judges["pair_id"].unique())  # the people's 40 of 120: a uniform draw
    weighted = prediction_powered_section(main, judges, quality_items=ITEMS, margin=0.5, probability=drawn)
    assert weighted is not None
    [again] = weighted.rubric.to_dict("records")
    assert again["n_pairs"] == 120 and again["n_rated"] == 40
    assert again["estimate"] == pytest.approx(row["estimate"], abs=0.05)
    assert again["people_estimate"] == pytest.approx(
        float(judgment_differences(main, "rubric")["diff"].mean())
    )


def test_the_rubric_table_reaches_every_output(main: pd.DataFrame) -> None:
    import dataclasses

    report = build_report(main, study="s", settings=ReportSettings(n_boot=20))
    section = prediction_powered_section(main, _rubric_judge(main, 80), quality_items=ITEMS, margin=0.5)
    report = dataclasses.replace(report, prediction_powered=section)
    data = render.to_json(report)
    jsonschema.validate(data, render.REPORT_SCHEMA)
    assert data["prediction_powered_rubric"][0]["n_pairs"] == 120
    assert "rubric alignment over every judged pair" in render.to_markdown(report)
    assert "rubric alignment over 120 pairs (40 rated by people)" in render.to_terminal(report)
