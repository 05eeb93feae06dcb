"""The vectorized simulation of prediction-powered verdicts: its arithmetic and a reduced Monte Carlo."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.crossed_mean import crossed_mean
from analysis.ppi_simulation import Design, balanced_crossed_mean, draw, simulate, verdicts
from analysis.prediction_powered import PPIQuestion, prediction_powered_tost

pytestmark = pytest.mark.nodb  # statistics and static checks: no database


@pytest.mark.parametrize(("n", "q", "annotator_sd"), [(30, 3, 0.0), (40, 5, 0.3), (60, 3, 0.1)])
def test_balanced_kernel_equals_the_reml_crossed_mean(n: int, q: int, annotator_sd: float) -> None:
    rng = np.random.default_rng(n + q)
    y = (
        0.2
        + rng.normal(0, 0.5, (4, n, 1))
        + rng.normal(0, annotator_sd, (4, 1, q))
        + rng.normal(0, 0.6, (4, n, q))
    )
    mean, se, df = balanced_crossed_mean(y, 0.05)
    pairs, annotators = np.repeat(np.arange(n), q), np.tile(np.arange(q), n)
    for s in range(4):
        ref = crossed_mean(y[s].ravel(), pairs, annotators, item="q", alpha=0.05)
        assert mean[s] == pytest.approx(ref.estimate, abs=1e-10)
        assert se[s] == pytest.approx(ref.se, rel=1e-5)
        assert df[s] == pytest.approx(ref.df, rel=1e-3)


def test_simulated_verdicts_equal_the_report_function_on_the_same_studies() -> None:
    design = Design(n_total=300, n_rated=30, panel=3, mean_gap=0.2, judge="biased toward chosen")
    d, fl, fu = draw(design, 5, np.random.default_rng(1))
    fast = verdicts(design, d, fl, fu)
    pairs, annotators = np.repeat(np.arange(30), 3).astype(str), np.tile(np.arange(3), 30).astype(str)
    ids = np.arange(300).astype(str)
    for s in range(5):
        frame = pd.DataFrame({"pair_id": pairs, "annotator": annotators, "diff": d[s].ravel()})
        res = prediction_powered_tost(
            frame, pd.Series(np.concatenate([fl[s], fu[s]]), index=ids), PPIQuestion("q", 0.5)
        )
        assert res.lam == pytest.approx(float(fast["lam"][s]), abs=1e-12)
        assert res.estimate == pytest.approx(float(fast["estimate"][s]), abs=1e-10)
        assert res.se == pytest.approx(float(fast["se"][s]), rel=1e-5)
        assert res.equivalent == bool(fast["ppi"][s])


def test_a_biased_judge_does_not_create_false_passes_at_the_margin() -> None:
    studies = 1000
    bound = 0.05 + 2 * math.sqrt(0.05 * 0.95 / studies)
    rng = np.random.default_rng(20261204)
    for judge in ("biased toward chosen", "position-biased", "good on one category only"):
        design = Design(
            n_total=1000, n_rated=60, panel=3, mean_gap=0.5, judge=judge, margin=0.5, category_shift=0.3
        )
        result = simulate(design, studies, rng)
        assert float(np.mean(result["ppi"])) <= bound, judge


def test_a_tracking_judge_raises_power_and_a_useless_one_does_not() -> None:
    rng = np.random.default_rng(5)
    good = simulate(
        Design(n_total=3000, n_rated=30, panel=5, mean_gap=0.0, judge="tracking", margin=0.3), 800, rng
    )
    bad = simulate(
        Design(n_total=3000, n_rated=30, panel=5, mean_gap=0.0, judge="useless", margin=0.3), 800, rng
    )
    assert np.mean(good["ppi"]) > np.mean(good["people"]) + 0.1
    assert abs(np.mean(bad["ppi"]) - np.mean(bad["people"])) < 0.03
    assert float(np.mean(bad["lam"])) < 0.1
    with pytest.raises(ValueError, match="can correlate at most"):
        simulate(
            Design(n_total=100, n_rated=20, panel=3, mean_gap=0.0, judge="tracking", judge_corr=0.99), 2, rng
        )
