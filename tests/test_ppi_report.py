"""The report's prediction-powered section: present only when a judge covers pairs beyond the people's."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from sqlalchemy.engine import Engine

from analysis import render
from analysis.frames import split_controls
from analysis.ppi_report import judge_item_gaps, prediction_powered_section, summary_sentences
from analysis.report import ReportSettings, build_report
from analysis.simulation import SimDesign, SimEffects, simulate_frame
from annotator.people import accounts
from annotator.people.authorization import SYSTEM, Account
from annotator.review.study_report import study_report
from annotator.store import db
from tests.utils.apphelpers import app_for, shown_tables
from tests.utils.factories import temp_engine
from tests.utils.judgehelpers import judged_beyond_people

pytestmark = pytest.mark.derived

ITEMS = ("correctness", "relevance", "helpfulness")


def _judge_rows(pairs: list[str], gaps: dict[str, float], name: str = "j") -> pd.DataFrame:
    """A judge frame: per pair and dimension, chosen at 3 + gap/2 and rejected at 3 - gap/2; the
    preference is the gap, clipped to -2..2."""
    rows = []
    for pair in pairs:
        for item in ITEMS:
            gap = gaps[pair]
            preference = float(np.clip(gap, -2, 2))
            for response, value in (("chosen", 3 + gap / 2), ("rejected", 3 - gap / 2)):
                rows.append((pair, name, "", response, item, value, preference, np.nan))
    return pd.DataFrame(
        rows, columns=["pair_id", "judge", "order", "response", "item", "value", "preference", "confidence"]
    )


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return simulate_frame(
        np.random.default_rng(4), SimDesign(n_pairs=40, pool=6, rubric_aspects=0), SimEffects(noise=0.5)
    )


def test_judge_gap_is_chosen_minus_rejected_averaged_over_orders() -> None:
    rows = _judge_rows(["p1"], {"p1": 1.0})
    swapped = rows.assign(
        order="rejected_first", value=rows["value"] + np.where(rows["response"] == "chosen", 1, 0)
    )
    gap = judge_item_gaps(pd.concat([rows.assign(order="chosen_first"), swapped]), "correctness")
    assert gap.to_dict() == {"p1": pytest.approx(1.5)}


def test_no_section_without_a_judge_beyond_the_peoples_pairs(frame: pd.DataFrame) -> None:
    main, _ = split_controls(frame)
    rated = sorted(set(main["pair_id"]))
    only_rated = _judge_rows(rated, dict.fromkeys(rated, 0.0))
    assert prediction_powered_section(main, only_rated, quality_items=ITEMS, margin=0.5) is None
    assert prediction_powered_section(main, only_rated.iloc[:0], quality_items=ITEMS, margin=0.5) is None


def test_a_report_without_a_judge_is_unchanged(frame: pd.DataFrame) -> None:
    report = build_report(frame, study="s", settings=ReportSettings(n_boot=20))
    assert report.prediction_powered is None
    data = render.to_json(report)
    assert not any(key.startswith("prediction_powered") for key in data)
    assert "prediction-powered" not in render.to_markdown(report)
    assert "prediction-powered" not in render.to_terminal(report)
    assert "prediction-powered" not in render.to_html(report)


def test_the_section_states_coverage_effective_size_lambda_and_what_the_judge_added(
    frame: pd.DataFrame,
) -> None:
    main, _ = split_controls(frame)
    rated = sorted(set(main["pair_id"]))
    people = main[main["item"] == "correctness"].pivot_table(
        index="pair_id", columns="response", values="value"
    )
    gaps = (people["chosen"] - people["rejected"]).to_dict()
    rng = np.random.default_rng(0)
    unrated = [f"u{i}" for i in range(400)]
    gaps |= {p: float(rng.normal(0, 0.5)) for p in unrated}
    section = prediction_powered_section(
        main, _judge_rows(rated + unrated, gaps), quality_items=ITEMS, margin=0.5
    )
    assert section is not None
    assert list(section.table["dimension"]) == list(ITEMS)
    assert (section.table["n_pairs"] == 440).all() and (section.table["n_rated"] == 40).all()
    verdict = section.verdicts.iloc[0]
    assert verdict["sentence"].startswith(
        "Verdict over 440 pairs, 40 of them rated by people (valid only if those are a uniform random "
        "sample of the judged pairs: no draw was recorded, so the data cannot show it), effective sample size"
    )
    assert "Lambda" in verdict["sentence"] and "What the judge added" in verdict["sentence"]
    report = dataclasses.replace(
        build_report(frame, study="s", settings=ReportSettings(n_boot=20)), prediction_powered=section
    )
    data = json.loads(json.dumps(render.to_json(report)))
    jsonschema.validate(data, render.REPORT_SCHEMA)
    assert len(data["prediction_powered"]) == 3 and data["prediction_powered_verdicts"][0]["judge"] == "j"
    share = data["prediction_powered_preference"][0]
    assert (share["n_pairs"], share["n_rated"]) == (440, 40)
    assert share["ci_low"] < share["share"] < share["ci_high"] and share["status"] in ("pass", "inconclusive")
    assert "preference for chosen over every judged pair" in render.to_markdown(report)
    assert "LLM judges: equivalence over every judged pair (prediction-powered)" in render.to_markdown(report)
    assert "Verdict over 440 pairs" in render.to_terminal(report)


def test_the_sentences_say_when_the_judge_added_nothing() -> None:
    assert "What the judge added: nothing" in summary_sentences(500, 50, [50.0, 50.0], [0.0, 0.0])
    sentence = summary_sentences(500, 50, [60.0, 80.0], [0.2, 0.6])
    assert "effective sample size 60 to 80" in sentence and "Lambda 0.20 to 0.60" in sentence
    assert "about 10 to 30 more pairs" in sentence


def test_a_study_with_a_judge_on_every_pair_gets_the_section(tmp_path: Path) -> None:
    with temp_engine() as engine:
        judged_beyond_people(engine, tmp_path, rated=40, unrated=120)
        with db.session_scope(engine) as session:
            report = study_report(session, study="s1", n_boot=20, account=SYSTEM)
            filtered = study_report(
                session, study="s1", n_boot=20, account=SYSTEM, annotators=["sim_01", "sim_02"]
            )
    section = report.prediction_powered
    assert section is not None and filtered.prediction_powered is None
    assert set(section.table["n_pairs"]) == {160} and set(section.table["n_rated"]) == {40}
    assert "Verdict over 160 pairs, 40 of them rated by people" in section.verdicts.iloc[0]["sentence"]


@pytest.mark.page
def test_the_validation_page_shows_the_section(env_db: str, engine: Engine, tmp_path: Path) -> None:
    judged_beyond_people(engine, tmp_path, rated=30, unrated=60)
    with db.session_scope(engine) as session:
        user = accounts.add_user(
            session, username="boss", role="researcher", password="boss-password", account=SYSTEM
        )
        boss = Account(id=user.id or 0, username="boss", role="researcher")
    at = app_for(boss, timeout=180)
    at.switch_page("views/validation.py").run()
    assert not at.exception
    titles = [s.value for s in [*at.header, *at.subheader]]
    assert "LLM judges: equivalence over every judged pair (prediction-powered)" in titles
    assert "LLM judges: what each judge added" in titles
    assert any(
        "Verdict over 90 pairs, 30 of them rated by people" in str(frame.to_dict())
        for frame in shown_tables(at)
    )


def test_a_judges_verdict_is_the_people_only_claim_over_every_judged_pair() -> None:
    """PASS needs what the people-only equivalence verdict needs: the mean gap within the margin and
    the share of broken pairs below its bound on every dimension, and the study's minimum of pairs rated
    by two or more annotators; the sentence says what held a PASS back; a mean gap outside is FAIL."""
    from types import SimpleNamespace

    from analysis.ppi_report import _judge_verdict

    def result(**changed: float | bool) -> SimpleNamespace:
        fields = {"equivalent": True, "ci_low": -0.1, "ci_high": 0.1, "low": -0.5, "high": 0.5}
        fields |= {"effective_pairs": 60.0, "lam": 0.5, "n_pairs": 500, "n_rated": 40}
        return SimpleNamespace(**(fields | changed))

    results = [result() for _ in ITEMS]
    below = [{"dimension": item, "below": True} for item in ITEMS]

    def verdict(
        results: list[SimpleNamespace], bounds: list[dict[str, object]], replicated: int = 40
    ) -> dict:
        return _judge_verdict(
            "j", results, bounds, n_items=len(ITEMS), replicated=replicated, min_pairs=20, drawn=False
        )

    assert verdict(results, below)["status"] == "pass"
    assert "Not a PASS" not in verdict(results, below)["sentence"]
    one_broken = [*below[:2], {"dimension": ITEMS[2], "below": False}]
    held = verdict(results, one_broken)
    assert held["status"] == "inconclusive"
    assert "the share of broken pairs is not shown below its bound on every dimension" in held["sentence"]
    few = verdict(results, below, replicated=15)
    assert few["status"] == "inconclusive"
    assert few["sentence"].endswith(
        "Not a PASS: 15 pairs are rated by two or more annotators, the study asks 20."
    )
    wide = verdict([*results[:2], result(equivalent=False, ci_low=-0.6)], below)
    assert wide["status"] == "inconclusive" and "mean gap is not shown within the margin" in wide["sentence"]
    outside = verdict([*results[:2], result(equivalent=False, ci_low=0.6, ci_high=0.9)], below)
    assert outside["status"] == "fail"
    assert verdict(results[:2], below[:2])["status"] == "inconclusive"  # a dimension the judge left out


def test_the_verdict_says_which_sample_it_rests_on() -> None:
    """Without a recorded draw the people's pairs are assumed a uniform sample of the judged ones, which
    the data cannot show: the verdict's first sentence says so; with the tool's draw it names it."""
    assumed = summary_sentences(800, 200, [200.0], [0.0])
    drawn = summary_sentences(800, 200, [200.0], [0.0], drawn=True)
    assert "valid only if those are a uniform random sample" in assumed
    assert "drawn by the tool" in drawn and "uniform" not in drawn
