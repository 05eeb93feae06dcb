"""Prediction-powered verdicts: PPI++ against the reference implementation and the crossed version."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from analysis.prediction_powered import (
    PPIQuestion,
    power_tuned_lambda,
    ppi_mean,
    prediction_powered_share,
    prediction_powered_tost,
)

pytestmark = pytest.mark.nodb  # statistics and static checks: no database


def _labeled(seed: int, n: int, n_u: int, slope: float, noise: float) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    truth = rng.normal(0.1, 0.6, n + n_u)
    judge = 0.3 + slope * truth + rng.normal(0, noise, n + n_u)
    y = truth[:n] + rng.normal(0, 0.5, n)
    return y, judge[:n], judge[n:]


@pytest.mark.parametrize(
    ("seed", "n", "n_u", "slope", "noise", "alpha"),
    [
        (0, 50, 2000, 1.0, 0.3, 0.1),
        (1, 200, 500, 0.5, 1.0, 0.05),
        (2, 30, 30, 1.5, 0.2, 0.1),
        (3, 100, 5000, 0.0, 1.0, 0.1),  # a useless judge
        (4, 80, 800, -1.0, 0.3, 0.2),  # an anti-correlated judge: lambda clipped to 0
    ],
)
def test_ppi_mean_equals_ppi_py(
    seed: int, n: int, n_u: int, slope: float, noise: float, alpha: float
) -> None:
    y, f, fu = _labeled(seed, n, n_u, slope, noise)
    ours = ppi_mean(y, f, fu, alpha=alpha)
    point = float(np.asarray(ppi_mean_pointestimate(y, f, fu, lam=None)).squeeze())
    low, high = (float(np.asarray(v).squeeze()) for v in ppi_mean_ci(y, f, fu, alpha=alpha, lam=None))
    assert ours.estimate == pytest.approx(point, abs=1e-8)
    assert ours.ci_low == pytest.approx(low, abs=1e-8)
    assert ours.ci_high == pytest.approx(high, abs=1e-8)


def test_ppi_mean_with_a_fixed_lambda_equals_ppi_py() -> None:
    y, f, fu = _labeled(5, 60, 600, 1.0, 0.5)
    for lam in (0.0, 0.4, 1.0):
        ours = ppi_mean(y, f, fu, alpha=0.1, lam=lam)
        low, high = (float(np.asarray(v).squeeze()) for v in ppi_mean_ci(y, f, fu, alpha=0.1, lam=lam))
        assert ours.estimate == pytest.approx(float(ppi_mean_pointestimate(y, f, fu, lam=lam)[0]), abs=1e-8)
        assert (ours.ci_low, ours.ci_high) == pytest.approx((low, high), abs=1e-8)


def test_lambda_is_zero_for_an_anti_correlated_judge_and_near_zero_for_a_useless_one() -> None:
    y, f, fu = _labeled(6, 100, 1000, -1.0, 0.2)
    assert float(power_tuned_lambda(y, f, fu)) == 0.0
    lams = [float(power_tuned_lambda(*_labeled(s, 100, 5000, 0.0, 1.0)[:3])) for s in range(20)]
    assert max(lams) < 0.15
    assert np.mean(lams) < 0.05


def test_power_tuned_lambda_is_vectorized_over_studies() -> None:
    parts = [_labeled(s, 40, 400, 1.0, 0.5) for s in range(4)]
    batch = power_tuned_lambda(*(np.stack([p[k] for p in parts]) for k in range(3)))
    one_by_one = [float(power_tuned_lambda(*p)) for p in parts]
    assert batch.shape == (4,)
    assert batch.tolist() == pytest.approx(one_by_one, abs=1e-12)


def _differences(gaps: np.ndarray, annotators: int, rng: np.random.Generator, sd_a: float) -> pd.DataFrame:
    n = len(gaps)
    bias = rng.normal(0, sd_a, annotators)
    rows = [
        (f"p{i}", f"a{j}", gaps[i] + bias[j] + rng.normal(0, 0.7))
        for i in range(n)
        for j in range(annotators)
    ]
    return pd.DataFrame(rows, columns=["pair_id", "annotator", "diff"])


def test_one_rating_per_pair_reduces_to_ppi_py_with_unbiased_variances() -> None:
    rng = np.random.default_rng(7)
    gaps = rng.normal(0.05, 0.5, 1000)
    judge = pd.Series(0.2 + gaps + rng.normal(0, 0.3, 1000), index=[f"p{i}" for i in range(1000)])
    diffs = _differences(gaps[:80], 1, rng, 0.0)
    res = prediction_powered_tost(diffs, judge, PPIQuestion("correctness", 0.5))
    y, f, fu = diffs["diff"].to_numpy(), judge.to_numpy()[:80], judge.to_numpy()[80:]
    lam = float(power_tuned_lambda(y, f, fu))
    assert res.lam == pytest.approx(lam, abs=1e-12)
    assert res.estimate == pytest.approx(float(ppi_mean_pointestimate(y, f, fu, lam=None)[0]), abs=1e-8)
    # the crossed model's variance of the correction and the judge part use divisor n - 1, ppi_py n
    expected = (y - lam * f).var(ddof=1) / 80 + lam**2 * fu.var(ddof=1) / 920
    assert res.se**2 == pytest.approx(expected, rel=1e-8)
    assert (res.n_pairs, res.n_rated, res.n_unrated) == (1000, 80, 920)
    assert not res.equivalent  # one annotator: no claim about annotators in general


def test_a_good_judge_adds_effective_pairs_and_a_useless_one_adds_none() -> None:
    rng = np.random.default_rng(8)
    gaps = rng.normal(0.0, 0.6, 3000)
    ids = [f"p{i}" for i in range(3000)]
    diffs = _differences(gaps[:60], 3, rng, 0.05)
    good = prediction_powered_tost(
        diffs, pd.Series(gaps + rng.normal(0, 0.2, 3000), index=ids), PPIQuestion("q", 0.5)
    )
    useless = prediction_powered_tost(
        diffs, pd.Series(rng.normal(0, 1, 3000), index=ids), PPIQuestion("q", 0.5)
    )
    assert good.lam > 0.5
    assert good.effective_pairs > 1.5 * good.n_rated
    assert good.se < good.people_se
    assert useless.lam < 0.15
    assert useless.effective_pairs == pytest.approx(60, rel=0.1)


def test_an_anti_correlated_judge_gives_the_people_only_verdict() -> None:
    rng = np.random.default_rng(9)
    gaps = rng.normal(0.0, 0.6, 500)
    judge = pd.Series(-gaps, index=[f"p{i}" for i in range(500)])
    res = prediction_powered_tost(_differences(gaps[:50], 3, rng, 0.1), judge, PPIQuestion("q", 0.5))
    assert res.lam == 0.0
    assert res.estimate == pytest.approx(res.people_estimate, abs=1e-12)
    assert res.se == pytest.approx(res.people_se, abs=1e-12)
    assert res.equivalent == res.people_equivalent


def test_without_unrated_pairs_the_verdict_is_the_people_only_one() -> None:
    rng = np.random.default_rng(10)
    gaps = rng.normal(0.0, 0.4, 40)
    judge = pd.Series(gaps, index=[f"p{i}" for i in range(40)])
    res = prediction_powered_tost(_differences(gaps, 3, rng, 0.1), judge, PPIQuestion("q", 0.5))
    assert res.lam == 0.0 and res.n_unrated == 0
    assert (res.estimate, res.se) == (res.people_estimate, res.people_se)
    assert any("people-only" in w for w in res.warnings)


def test_rated_pairs_the_judge_missed_are_left_out_with_a_warning() -> None:
    rng = np.random.default_rng(11)
    gaps = rng.normal(0.0, 0.4, 200)
    judge = pd.Series(gaps[5:], index=[f"p{i}" for i in range(5, 200)])
    res = prediction_powered_tost(_differences(gaps[:40], 3, rng, 0.1), judge, PPIQuestion("q", 0.5))
    assert res.n_rated == 35
    assert any("5 rated pair(s) without a judge rating" in w for w in res.warnings)
    with pytest.raises(ValueError, match="margin must be a positive number"):
        prediction_powered_tost(_differences(gaps[:40], 3, rng, 0.1), judge, PPIQuestion("q", 0))
    assert math.isfinite(res.df)


def test_the_preference_share_is_ppi_plus_plus_on_the_scores() -> None:
    rng = np.random.default_rng(12)
    lean = rng.normal(0.3, 1.0, 800)  # the pair's lean toward chosen
    judge = pd.Series(np.clip(lean / 2 + 0.5, 0, 1), index=[f"p{i}" for i in range(800)])
    score = np.where(lean[:60] + rng.normal(0, 0.5, 60) > 0, 1.0, 0.0)
    scores = pd.DataFrame({"pair_id": [f"p{i}" for i in range(60)], "annotator": "a0", "score": score})
    res = prediction_powered_share(scores, judge)
    point = float(ppi_mean_pointestimate(score, judge.to_numpy()[:60], judge.to_numpy()[60:], lam=None)[0])
    assert res.share == pytest.approx(point, abs=1e-8)
    assert res.lam > 0.3 and res.n_pairs == 800 and res.n_rated == 60
    assert res.effective_pairs > 60
    assert not res.annotator_estimable  # one annotator: no claim about annotators in general
