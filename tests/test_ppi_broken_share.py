"""The prediction-powered bound on the share of broken pairs over every judged pair, and the
people-only bound under an unequal draw."""

from __future__ import annotations

import dataclasses
import json

import jsonschema
import numpy as np
import pandas as pd
import pytest

from analysis import render
from analysis.broken_share import broken_share
from analysis.frames import split_controls
from analysis.ppi_broken_share import ppi_broken_share
from analysis.ppi_report import prediction_powered_section
from analysis.report import ReportSettings, build_report
from analysis.simulation import SimDesign, SimEffects, simulate_frame
from annotator.review.study_report import judge_report
from annotator.study import load_config
from tests.test_ppi_report import ITEMS, _judge_rows

pytestmark = pytest.mark.derived


def _people(gaps: np.ndarray, ids: np.ndarray, rng: np.random.Generator, per_pair: int = 3) -> pd.DataFrame:
    """3 of a pool of 20 annotators on each pair of `ids` with true gaps `gaps`."""
    n = len(ids)
    pair = np.repeat(np.arange(n), per_pair)
    who = np.argsort(rng.random((n, 20)), axis=1)[:, :per_pair].ravel()
    bias = rng.normal(0, 0.1, 20)
    diff = gaps[pair] + bias[who] + rng.normal(0, 0.6, len(pair))
    return pd.DataFrame({"pair_id": ids[pair], "annotator": who, "diff": diff})


def test_the_estimate_equals_a_hand_computation() -> None:
    """Two annotators per rated pair: U_i = d_i1 * d_i2; f = judge gap^2; lambda = Cov_L(U, f) (divisor
    n) / ((1 + n / N_u) Var(f) over all pairs (divisor N - 1)); M = lambda mean_U f + mean_L(U - lambda f)."""
    d = np.array([[0.5, 0.7], [0.1, -0.2], [1.0, 0.6], [0.0, 0.3], [0.8, 0.9]])
    rated = [f"r{i}" for i in range(5)]
    frame = pd.DataFrame({"pair_id": np.repeat(rated, 2), "annotator": ["a", "b"] * 5, "diff": d.ravel()})
    gap = pd.Series([0.6, 0.0, 0.9, 0.2, 0.7, 0.5, 0.1, 1.1], index=[*rated, "u0", "u1", "u2"])
    res = ppi_broken_share(frame, gap, margin=0.5)
    u = d[:, 0] * d[:, 1]
    f = gap.to_numpy() ** 2
    fl, fu = f[:5], f[5:]
    cov = ((u - u.mean()) * (fl - fl.mean())).sum() / 5
    lam = min(max(cov / ((1 + 5 / 3) * f.var(ddof=1)), 0.0), 1.0)
    assert 0 < lam < 1
    assert res.lam == pytest.approx(lam, abs=1e-12)
    assert res.mean_square == pytest.approx(lam * fu.mean() + (u - lam * fl).mean(), abs=1e-12)
    assert res.people_mean_square == pytest.approx(u.mean(), abs=1e-12)
    assert (res.n_pairs, res.n_rated) == (8, 5)


def test_the_weighted_estimate_equals_a_hand_computation() -> None:
    """Under the tool's draw: w = 1 / probability on the rated pairs;
    lambda = sum_L w (1/p - 1)(U - U_w)(f - f_bar) / sum_all (1/p - 1)(f - f_bar)^2, clipped to [0, 1];
    M = lambda f_bar + sum_L w (U - lambda f) / sum_L w (Hajek); the people-only M with lambda 0."""
    d = np.array([[0.5, 0.7], [0.1, -0.2], [1.0, 0.6], [0.0, 0.3], [0.8, 0.9]])
    rated = [f"r{i}" for i in range(5)]
    frame = pd.DataFrame({"pair_id": np.repeat(rated, 2), "annotator": ["a", "b"] * 5, "diff": d.ravel()})
    ids = [*rated, "u0", "u1", "u2"]
    gap = pd.Series([0.6, 0.0, 0.9, 0.2, 0.7, 0.5, 0.1, 1.1], index=ids)
    p = np.array([0.5, 0.8, 0.4, 0.6, 0.5, 0.3, 0.7, 0.2])
    res = ppi_broken_share(frame, gap, margin=0.5, probability=pd.Series(p, index=ids))
    u, f = d[:, 0] * d[:, 1], gap.to_numpy() ** 2
    w, fc = 1 / p[:5], f - f.mean()
    u_w = (w * u).sum() / w.sum()
    lam = ((w * (1 / p[:5] - 1) * (u - u_w) * fc[:5]).sum()) / ((1 / p - 1) * fc**2).sum()
    lam = min(max(lam, 0.0), 1.0)
    assert 0 < lam < 1
    assert res.lam == pytest.approx(lam, abs=1e-12)
    assert res.mean_square == pytest.approx(
        lam * f.mean() + (w * (u - lam * f[:5])).sum() / w.sum(), abs=1e-12
    )
    assert res.people_mean_square == pytest.approx(u_w, abs=1e-12)
    assert res.people_mean_square != pytest.approx(u.mean(), abs=1e-3)  # the weights matter here
    assert (res.n_pairs, res.n_rated) == (8, 5)


def test_lambda_zero_is_the_people_only_bound_on_the_rated_pairs() -> None:
    rng = np.random.default_rng(3)
    ids = np.array([f"p{i}" for i in range(600)])
    gaps = np.where(rng.random(600) < 0.1, 0.55, 0.0)
    people = _people(gaps[:150], ids[:150], rng)
    constant = pd.Series(1.0, index=ids)  # no variation: nothing to predict with
    res = ppi_broken_share(people, constant, margin=0.5)
    alone = broken_share(people, margin=0.5)
    assert res.lam == 0.0
    assert res.mean_square == pytest.approx(alone.mean_square, abs=1e-12)
    assert res.mean_square_se == pytest.approx(alone.mean_square_se, abs=1e-12)
    assert res.upper == pytest.approx(alone.upper, abs=1e-12) and res.below == alone.below
    assert res.people_upper == pytest.approx(alone.upper, abs=1e-12)


def test_a_useless_judge_gets_lambda_near_zero_and_a_tracking_one_a_larger_one() -> None:
    rng = np.random.default_rng(5)
    ids = np.array([f"p{i}" for i in range(5000)])
    gaps = np.where(rng.random(5000) < 0.1, 1.0, 0.0)
    people = _people(gaps[:400], ids[:400], rng)
    useless = ppi_broken_share(people, pd.Series(rng.normal(0.3, 1.0, 5000), index=ids), margin=0.5)
    tracking = ppi_broken_share(people, pd.Series(gaps + rng.normal(0, 0.2, 5000), index=ids), margin=0.5)
    assert useless.lam < 0.1
    assert tracking.lam > 0.3 and tracking.mean_square_se < useless.mean_square_se


def test_an_unequal_draw_is_weighted_where_the_unweighted_bound_understates() -> None:
    """The tool oversampled the pairs at 0 (where the judge was unsure): the unweighted mean squared gap
    of the rated sample understates the study's; weighting by 1 / probability recovers it."""
    rng = np.random.default_rng(11)
    n_pairs = 4000
    ids = np.array([f"p{i}" for i in range(n_pairs)])
    broken = rng.random(n_pairs) < 0.15
    gaps = np.where(broken, 0.8, 0.0)
    probability = np.where(broken, 0.1, 0.4)
    drawn = rng.random(n_pairs) < probability
    people = _people(gaps[drawn], ids[drawn], rng)
    judge = pd.Series(rng.normal(0.3, 1.0, n_pairs), index=ids)
    truth = float((gaps**2).mean())
    weighted = ppi_broken_share(people, judge, margin=0.5, probability=pd.Series(probability, index=ids))
    rated_only = broken_share(people, margin=0.5)
    assert rated_only.mean_square < truth / 2  # the rated sample is not the study
    assert abs(weighted.people_mean_square - truth) < 3 * weighted.mean_square_se
    assert abs(weighted.mean_square - truth) < 3 * weighted.mean_square_se
    assert rated_only.upper < weighted.people_upper
    assert not weighted.people_below and not weighted.below  # 15% broken: not below 10%


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return simulate_frame(
        np.random.default_rng(4), SimDesign(n_pairs=40, pool=6, rubric_aspects=0), SimEffects(noise=0.5)
    )


def _judged(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    main, _ = split_controls(frame)
    rated = sorted(set(main["pair_id"]))
    rng = np.random.default_rng(0)
    unrated = [f"u{i}" for i in range(400)]
    gaps = dict.fromkeys(rated, 0.0) | {p: float(rng.normal(0, 0.3)) for p in unrated}
    return main, _judge_rows(rated + unrated, gaps), rated + unrated


def test_the_section_has_the_bound_per_judge_and_dimension_and_renders_it(frame: pd.DataFrame) -> None:
    main, judges, _ = _judged(frame)
    section = prediction_powered_section(main, judges, quality_items=ITEMS, margin=0.5, max_broken_share=0.2)
    assert section is not None
    broken = section.broken
    assert list(broken["dimension"]) == list(ITEMS) and set(broken["judge"]) == {"j"}
    assert (broken["n_pairs"] == 440).all() and (broken["n_rated"] == 40).all()
    assert (broken["below"] == (broken["upper"] < 0.2)).all()
    sentence = broken.iloc[0]["sentence"]
    assert sentence.startswith("Verdict over 440 pairs, 40 of them rated by people (valid only if those")
    assert "the data cannot show it): at most" in sentence
    assert "Markov's bound" in sentence and "annotators in general" in sentence and "lambda" in sentence
    report = build_report(frame, study="s", settings=ReportSettings(n_boot=20))
    report = dataclasses.replace(report, prediction_powered=section)
    data = json.loads(json.dumps(render.to_json(report)))
    jsonschema.validate(data, render.REPORT_SCHEMA)
    assert [row["dimension"] for row in data["prediction_powered_broken"]] == list(ITEMS)
    title = "LLM judges: share of broken pairs over every judged pair (prediction-powered)"
    assert title in render.to_markdown(report) and title in render.to_html(report)
    assert sentence in render.to_terminal(report)
    assert "stays the people-only" not in render.to_markdown(report)


def test_without_a_judge_there_is_no_bound_over_every_pair(frame: pd.DataFrame) -> None:
    report = build_report(frame, study="s", settings=ReportSettings(n_boot=20))
    assert "prediction_powered_broken" not in render.to_json(report)
    assert "share of broken pairs over every judged pair" not in render.to_markdown(report)
    assert "speaks for the rated sample" not in render.to_markdown(report)


def test_an_unequal_draw_says_people_only_verdicts_speak_for_the_rated_sample(frame: pd.DataFrame) -> None:
    main, judges, pairs = _judged(frame)
    report = build_report(frame, study="s", settings=ReportSettings(n_boot=20))
    config = load_config(None)
    probability = pd.Series(np.where(np.arange(len(pairs)) % 2 == 0, 0.05, 0.15), index=pairs)
    uniform = pd.Series(40 / 440, index=pairs)
    unequal = judge_report(
        report, frame, judges, config, n_boot=20, seed=0, whole=True, probability=probability
    )
    equal = judge_report(report, frame, judges, config, n_boot=20, seed=0, whole=True, probability=uniform)
    assert "speaks for the rated sample" in render.to_markdown(unequal)
    assert "like every people-only verdict of this report (the mean gap" in render.to_markdown(unequal)
    assert "speaks for the rated sample" not in render.to_markdown(equal)
    assert unequal.prediction_powered is not None
    assert "1 / its inclusion probability" in render.to_markdown(unequal)
