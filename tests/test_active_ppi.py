"""Active inference for the prediction-powered verdict: inclusion probabilities by the judge's
uncertainty, the inverse-probability-weighted PPI++ mean, and its simulation kernel."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.active_ppi import (
    inclusion_probabilities,
    judge_uncertainty,
    weighted_ppi,
    weighted_ppi_tost,
    weighted_share,
    weighted_superiority,
)
from analysis.active_simulation import (
    ActiveDesign,
    Drawn,
    draw_active,
    draw_preferences,
    one_sided_verdicts,
    simulate_active,
    weighted_verdicts,
)
from analysis.ppi_simulation import Design
from analysis.prediction_powered import PPIQuestion

pytestmark = pytest.mark.nodb  # statistics and static checks: no database


def test_probabilities_follow_the_uncertainty_within_the_floor_and_sum_to_the_sample_size() -> None:
    u = np.random.default_rng(0).lognormal(0.0, 1.5, 500)
    p = inclusion_probabilities(u, 50, min_share=0.2)
    assert p.sum() == pytest.approx(50.0)
    assert p.min() == pytest.approx(0.2 * 50 / 500) and p.max() <= 1.0
    inside = (p > p.min() + 1e-9) & (p < 1.0)  # strictly proportional where not floored or capped
    assert np.ptp(p[inside] / u[inside]) < 1e-9
    assert np.all(np.diff(p[np.argsort(u)]) >= -1e-12)
    assert inclusion_probabilities(np.zeros(10), 4).tolist() == [0.4] * 10
    assert inclusion_probabilities(u, 50, min_share=1.0) == pytest.approx(np.full(500, 0.1))
    batch = inclusion_probabilities(np.stack([u, u[::-1]]), 50, min_share=0.2)
    assert batch[0] == pytest.approx(p) and batch[1] == pytest.approx(p[::-1])


def test_bad_probability_inputs_are_named() -> None:
    with pytest.raises(ValueError, match=re.escape("the sample size must be in (0, 3], got 4")):
        inclusion_probabilities([1.0, 2.0, 3.0], 4)
    with pytest.raises(ValueError, match="finite values >= 0"):
        inclusion_probabilities([1.0, -1.0], 1)
    with pytest.raises(ValueError, match="min_share must be in"):
        inclusion_probabilities([1.0, 1.0], 1, min_share=0.0)


def test_uncertainty_is_one_minus_confidence_over_the_orders() -> None:
    rows = pd.DataFrame(
        {
            "pair_id": ["a", "a", "a", "b", "c"],
            "order": ["chosen_first", "chosen_first", "rejected_first", "", ""],
            "confidence": [0.9, 0.9, 0.5, 0.2, np.nan],
        }
    )
    assert judge_uncertainty(rows).to_dict() == pytest.approx({"a": 0.3, "b": 0.8, "c": 0.55})
    with pytest.raises(ValueError, match="the judge gave no confidence"):
        judge_uncertainty(rows.assign(confidence=np.nan))


def test_every_pair_drawn_gives_the_people_mean_and_lambda_zero() -> None:
    """With probability 1 everywhere there is nothing to predict: lambda 0, the mean of the pair means,
    and the pair part of the variance is their variance over N."""
    rng = np.random.default_rng(1)
    h, f = rng.normal(0.2, 1.0, 40), rng.normal(0.0, 1.0, 40)
    res = weighted_ppi(
        h, f, np.ones(40, bool), np.ones(40), annotator_c2=0.0, annotator_unit_var=0.0, n_annotators=3
    )
    assert float(res.lam) == 0.0 and float(res.estimate) == pytest.approx(h.mean())
    assert float(res.se) ** 2 == pytest.approx(h.var(ddof=1) / 40)


def test_a_uniform_draw_tunes_lambda_to_cov_over_var_and_weights_correct_an_active_draw() -> None:
    rng = np.random.default_rng(2)
    n_total = 4000
    g = rng.normal(0.0, 1.0, n_total)
    f = g + rng.normal(0.0, 0.5, n_total)
    drawn = rng.random(n_total) < 0.25
    res = weighted_ppi(
        g, f, drawn, np.full(n_total, 0.25), annotator_c2=0.0, annotator_unit_var=0.0, n_annotators=3
    )
    assert float(res.lam) == pytest.approx(np.cov(g[drawn], f[drawn])[0, 1] / f.var(), abs=0.03)
    # a draw that favours large gaps: the unweighted mean of the drawn pairs is far off, the weighted not
    p = inclusion_probabilities(np.exp(g), 500, min_share=0.2)
    taken = rng.random(n_total) < p
    weighted = weighted_ppi(g, f, taken, p, annotator_c2=0.0, annotator_unit_var=0.0, n_annotators=3)
    assert g[taken].mean() > 0.5
    assert abs(float(weighted.estimate) - g.mean()) < 3 * float(weighted.se)


def _frame(data: Drawn, s: int, q: int) -> tuple[pd.DataFrame, pd.Series, pd.Series]:
    ids = np.array([f"p{i}" for i in range(data.f.shape[1])])
    k = int(data.drawn[s].sum())
    rows = data.rows[s, :k]
    frame = pd.DataFrame(
        {
            "pair_id": np.repeat(ids[rows], q),
            "annotator": np.tile([f"a{j}" for j in range(q)], k),
            "diff": data.d[s, :k].ravel(),
        }
    )
    return frame, pd.Series(data.f[s], index=ids), pd.Series(data.probability[s], index=ids)


def test_the_simulation_kernel_equals_the_report_function_on_the_same_studies() -> None:
    """The vectorized verdict (balanced ANOVA components) equals weighted_ppi_tost (REML components)
    on drawn studies: estimate to 1e-12, SE to 1e-5."""
    spec = ActiveDesign(Design(n_total=300, n_rated=30, panel=3, mean_gap=0.2, judge="knows its errors"))
    data = draw_active(spec, 8, np.random.default_rng(3))
    fast = weighted_verdicts(spec, data)
    for s in range(8):
        frame, gap, prob = _frame(data, s, 3)
        res = weighted_ppi_tost(frame, gap, prob, PPIQuestion("q", 0.5))
        assert res.estimate == pytest.approx(float(fast["estimate"][s]), abs=1e-12)
        assert res.se == pytest.approx(float(fast["se"][s]), rel=1e-5)
        assert res.n_pairs == 300 and res.n_rated == int(data.drawn[s].sum())
        assert res.equivalent == bool(fast["ppi"][s])


@pytest.mark.parametrize(
    ("judge", "uncertainty"),
    [
        ("knows its errors", "random"),
        ("biased toward chosen", "misleading"),
        ("anti-correlated", "misleading"),
    ],
)
def test_active_draws_keep_the_false_pass_rate_at_the_margin(judge: str, uncertainty: str) -> None:
    """600 studies at the boundary (true gap = +margin), the default floor: the share of PASS stays
    within alpha + 3 MC SE (the benchmark runs 2,000 per row at alpha + 2 MC SE)."""
    design = Design(n_total=800, n_rated=60, panel=3, mean_gap=0.5, judge=judge, margin=0.5)
    res = simulate_active(ActiveDesign(design, uncertainty=uncertainty), 600, np.random.default_rng(7))
    assert float(res["ppi"].mean()) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 600)


def test_a_frame_needs_two_drawn_pairs_and_two_annotators() -> None:
    frame = pd.DataFrame({"pair_id": ["p0", "p0"], "annotator": ["a", "b"], "diff": [1.0, 0.0]})
    ids = pd.Index(["p0", "p1", "p2"])
    with pytest.raises(ValueError, match="need at least 2 drawn pairs and 2 annotators"):
        weighted_ppi_tost(frame, pd.Series(0.0, index=ids), pd.Series(0.5, index=ids), PPIQuestion("q", 0.5))


def test_the_weighted_rubric_test_is_one_sided_on_the_equivalence_estimate() -> None:
    """weighted_superiority tests the same weighted estimate as weighted_ppi_tost, one-sided against 0:
    p = P(t_df > estimate / SE), the interval estimate +- t(1 - alpha) SE, the people-only figures the
    same estimate with lambda 0."""
    spec = ActiveDesign(Design(n_total=300, n_rated=30, panel=3, mean_gap=0.2, judge="tracking"))
    data = draw_active(spec, 3, np.random.default_rng(5))
    for s in range(3):
        frame, gap, prob = _frame(data, s, 3)
        tost = weighted_ppi_tost(frame, gap, prob, PPIQuestion("rubric", 0.5))
        res = weighted_superiority(frame, gap, prob, item="rubric", alpha=0.05, judge="j")
        assert (res.estimate, res.se, res.df, res.lam) == pytest.approx(
            (tost.estimate, tost.se, tost.df, tost.lam)
        )
        assert res.p_greater == pytest.approx(float(stats.t.sf(res.estimate / res.se, res.df)))
        t = float(stats.t.ppf(0.95, res.df))
        assert (res.ci_low, res.ci_high) == pytest.approx(
            (res.estimate - t * res.se, res.estimate + t * res.se)
        )
        assert (res.people_ci_low, res.people_ci_high) == pytest.approx(
            (tost.people_ci_low, tost.people_ci_high)
        )
        assert res.n_pairs == 300 and res.n_rated == int(data.drawn[s].sum()) and res.judge == "j"


def test_the_weighted_share_weights_each_rated_pair_by_its_inverse_probability() -> None:
    """Two pairs rated, drawn with probabilities 0.5 and 0.25: the people-only share is the Hajek mean of
    the pairs' shares (weights 2 and 4), whatever the judge; a judge that gives every pair its people's
    share earns lambda > 0."""
    ids = [f"p{i}" for i in range(8)]
    scores = pd.DataFrame(
        {
            "pair_id": ["p0"] * 3 + ["p1"] * 3 + ["p2"] * 3,
            "annotator": ["a", "b", "c"] * 3,
            "score": [1.0, 1.0, 0.5, 0.0, 0.5, 0.0, 1.0, 0.0, 1.0],
        }
    )
    prob = pd.Series([0.5, 0.25, 0.25, 0.5, 0.5, 0.5, 0.5, 0.5], index=ids)
    shares = scores.groupby("pair_id")["score"].mean()
    hajek = (2 * shares["p0"] + 4 * shares["p1"] + 4 * shares["p2"]) / 10
    judge = pd.Series([*shares.to_list(), 0.9, 0.1, 0.6, 0.4, 0.5], index=ids)
    res = weighted_share(scores, judge, prob, judge="j")
    assert res.people_share == pytest.approx(hajek)
    assert res.n_pairs == 8 and res.n_rated == 3 and 0.0 < res.lam <= 1.0
    assert weighted_share(scores, pd.Series(0.5, index=ids), prob).people_share == pytest.approx(hajek)
    with pytest.raises(ValueError, match="need at least 2 drawn pairs and 2 annotators on 'preference'"):
        weighted_share(scores[scores["annotator"] == "a"], judge, prob)


def test_the_preference_kernel_equals_the_report_function_on_the_same_studies() -> None:
    """Drawn preference studies (discrete scores): the vectorized one-sided verdict equals
    weighted_share (REML components): estimate to 1e-12, SE to 1e-5, the same PASS."""
    spec = ActiveDesign(Design(n_total=300, n_rated=30, panel=3, mean_gap=0.0, judge="tracking"))
    data = draw_preferences(spec, 6, np.random.default_rng(8), "two camps")
    fast = one_sided_verdicts(spec, data)
    for s in range(6):
        frame, predicted, prob = _frame(data, s, 3)
        scores = frame.rename(columns={"diff": "score"}).assign(score=lambda f: f["score"] + 0.5)
        res = weighted_share(scores, predicted + 0.5, prob)
        assert res.share - 0.5 == pytest.approx(float(fast["estimate"][s]), abs=1e-12)
        assert res.se == pytest.approx(float(fast["se"][s]), rel=1e-5)
        assert (res.p_greater < 0.05) == bool(fast["ppi"][s])


@pytest.mark.parametrize(
    ("judge", "lean", "uncertainty"),
    [("always chosen", "heavy-tailed", "random"), ("tracking", "two camps", "misleading")],
)
def test_active_draws_keep_the_preference_false_pass_rate_at_its_null(
    judge: str, lean: str, uncertainty: str
) -> None:
    """600 studies with the share exactly 0.5: one-sided PASS within alpha + 3 MC SE (the benchmark
    runs 2,000 per row at alpha + 2 MC SE)."""
    spec = ActiveDesign(
        Design(n_total=800, n_rated=60, panel=3, mean_gap=0.0, judge=judge), uncertainty=uncertainty
    )
    rng = np.random.default_rng(9)
    passes = [one_sided_verdicts(spec, draw_preferences(spec, 200, rng, lean))["ppi"] for _ in range(3)]
    assert float(np.concatenate(passes).mean()) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 600)
