"""Power and sample size for the paired TOST (analysis.power)."""

import re

import numpy as np
import pytest

from analysis.equivalence import tost_paired
from analysis.power import (
    MAX_PAIRS,
    MAX_POOL,
    Plan,
    design_power,
    pairs_needed,
    recommend_design,
    simulated_power,
    tost_power,
    variance_components,
)

pytestmark = pytest.mark.nodb  # no database: the PostgreSQL pass leaves it out


def _monte_carlo_power(n: int, sd: float, margin: float, true_diff: float, n_sim: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(n_sim):
        d = rng.normal(true_diff, sd, n)
        hits += tost_paired(d, np.zeros(n), low=-margin, high=margin).equivalent
    return hits / n_sim


@pytest.mark.parametrize(("n", "true_diff"), [(15, 0.0), (40, 0.2)])
def test_analytic_power_matches_monte_carlo(n: int, true_diff: float) -> None:
    """The exact (Owen) power agrees with simulated t-test TOSTs within 4 Monte Carlo SEs."""
    analytic = tost_power(n, margin=0.5, sd=1.0, true_diff=true_diff)
    n_sim = 3000
    simulated = _monte_carlo_power(n, 1.0, 0.5, true_diff, n_sim, seed=n)
    se = np.sqrt(analytic * (1 - analytic) / n_sim)
    assert abs(analytic - simulated) < 4 * se + 1e-3


def test_pairs_needed_is_the_smallest_sufficient_n() -> None:
    result = pairs_needed(margin=0.5, sd=1.0, power=0.8)
    assert result.power >= 0.8
    assert tost_power(result.n_pairs - 1, margin=0.5, sd=1.0) < 0.8


def test_more_annotators_need_fewer_pairs() -> None:
    one = pairs_needed(margin=0.5, sd=1.2, annotators=1).n_pairs
    three = pairs_needed(margin=0.5, sd=1.2, annotators=3).n_pairs
    assert three < one


def test_power_at_the_margin_is_at_most_alpha() -> None:
    assert tost_power(200, margin=0.5, sd=1.0, true_diff=0.5) <= 0.05 + 1e-9


def test_pairs_needed_exact_answer() -> None:
    """SD 1 per judgment, 3 annotators: per-pair SD 1/sqrt(3); 13 pairs reach 0.8 (12 do not)."""
    result = pairs_needed(margin=0.5, sd=1.0, annotators=3)
    assert result.n_pairs == 13
    assert tost_power(12, margin=0.5, sd=1 / np.sqrt(3)) < 0.8 <= result.power


def test_simulated_power_is_deterministic_for_a_seed() -> None:
    assert simulated_power(20, margin=0.5, n_sim=50) == 0.98
    assert simulated_power(20, margin=0.5, n_sim=50, seed=1) == simulated_power(
        20, margin=0.5, n_sim=50, seed=1
    )


def test_design_power_matches_a_simulation_of_the_reports_verdict() -> None:
    """The planning formula against the report's crossed-model TOST (REML, Satterthwaite df and the
    few-annotator guard) on simulated normal data, in a pool design of 6 annotators, 3 per pair."""
    from analysis.mixed import fit_crossed, guarded_se

    plan = Plan(
        n_pairs=60, per_pair=3, pool=6, margin=0.3, pair_var=0.05, annotator_var=0.04, residual_var=0.6
    )
    power, _, _ = design_power(plan)
    rng = np.random.default_rng(0)
    hits, n_sim = 0, 250
    from scipy import stats

    for _ in range(n_sim):
        pair = np.repeat(np.arange(60), 3)
        ann = np.concatenate([rng.choice(6, 3, replace=False) for _ in range(60)])
        d = (
            rng.normal(0, np.sqrt(0.04), 6)[ann]
            + rng.normal(0, np.sqrt(0.05), 60)[pair]
            + rng.normal(0, np.sqrt(0.6), 180)
        )
        fit = fit_crossed(d, np.ones((180, 1)), pair, ann)
        se, df, _ = guarded_se(fit, float(np.sqrt(fit.cov_params[0, 0])), float(fit.df[0]), 0.05)
        half = stats.t.ppf(0.95, df) * se
        hits += bool(-0.3 < fit.params[0] - half and fit.params[0] + half < 0.3)
    assert abs(hits / n_sim - power) < 0.08  # 2.6 Monte Carlo SE


def test_recommend_design_needs_more_annotators_when_they_differ() -> None:
    calm = recommend_design(
        Plan(60, 3, 500, 0.5, pair_var=0.05, annotator_var=0.0, residual_var=0.8), keep_pairs=True
    )
    varied = recommend_design(
        Plan(60, 3, 500, 0.5, pair_var=0.05, annotator_var=0.1, residual_var=0.8), keep_pairs=True
    )
    assert varied.pool > calm.pool and varied.power >= 0.8
    smaller = design_power(
        Plan(60, 3, varied.pool - 1, 0.5, pair_var=0.05, annotator_var=0.1, residual_var=0.8)
    )
    assert smaller[0] < 0.8
    with pytest.raises(ValueError, match=re.escape("the true difference must lie inside the margin")):
        recommend_design(Plan(MAX_PAIRS, 3, MAX_POOL, 0.5, 0.0, 0.0, 1.0, true_diff=0.5))


def test_variance_components_from_pilot_data() -> None:
    from analysis.simulation import SimDesign, SimEffects, simulate_frame

    frame = simulate_frame(
        np.random.default_rng(1),
        SimDesign(n_pairs=200, pool=20, rubric_aspects=0, items=("correctness",)),
        SimEffects(annotator_gap_sd=0.4),
    )
    vc = variance_components(frame, quality_items=["correctness"]).iloc[0]
    assert vc["annotator_var"] == pytest.approx(0.16 * 0.7, rel=0.6)  # rounding shrinks the latent SD
    assert vc["per_pair"] == 3.0 and vc["n_annotators"] == 20


def test_simulated_power_rises_with_pairs_and_falls_with_a_gap() -> None:
    """The simulator's model: more pairs help; a true quality gap beyond the margin kills equivalence."""
    small = simulated_power(8, margin=0.5, n_sim=200, seed=1)
    large = simulated_power(40, margin=0.5, n_sim=200, seed=1)
    gapped = simulated_power(40, margin=0.5, quality_gap=1.5, n_sim=200, seed=1)
    assert large > small
    assert gapped < 0.05


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match=re.escape("margin must be positive")):
        tost_power(10, margin=0, sd=1)
    with pytest.raises(ValueError, match=re.escape("the true difference must lie inside the margin")):
        pairs_needed(margin=0.5, sd=1, true_diff=0.6)


def test_achieved_power_uses_the_study_pairs_and_their_sd() -> None:
    """Per dimension: the exact TOST power at the study's n and observed SD of per-pair differences."""
    import pandas as pd

    from analysis.aggregates import pair_means
    from analysis.power import achieved_power

    rng = np.random.default_rng(4)
    rows = [
        (f"p{i}", a, r, "correctness", float(rng.integers(3, 6)), 1, 2, 30.0)
        for i in range(25)
        for a in ("x", "y")
        for r in ("chosen", "rejected")
    ]
    frame = pd.DataFrame(
        rows,
        columns=["pair_id", "annotator", "response", "item", "value", "preference", "confidence", "time_s"],
    )
    result = achieved_power(frame, quality_items=["correctness"], margin=0.5)
    diff = pair_means(frame, "correctness")["diff"]
    assert int(result.loc[0, "n_pairs"]) == 25
    assert result.loc[0, "power"] == pytest.approx(tost_power(25, margin=0.5, sd=float(np.std(diff, ddof=1))))


def test_a_wider_margin_never_needs_more_pairs() -> None:
    """A margin of 100 scale points needed "more than 1000000 pairs" where 70 needed 2: the power's
    integral over the chi-square ran to a bound so far out that the quadrature missed its mass."""
    from analysis.power import pairs_needed, tost_power

    needed = [
        pairs_needed(margin=m, sd=1.0, power=0.8).n_pairs for m in (0.5, 1.0, 10.0, 70.0, 100.0, 1000.0)
    ]
    assert needed == sorted(needed, reverse=True) and needed[-1] == 2
    assert tost_power(8, margin=100.0, sd=0.577) > 0.999


@pytest.mark.parametrize(("margin", "sd"), [(0.5, 1e-160), (1e300, 1.0)])
def test_a_margin_of_many_sds_has_full_power_not_an_overflow(margin: float, sd: float) -> None:
    """The integral's bound squared margin / SD first: 1e154 SDs or more raised OverflowError."""
    assert tost_power(10, margin=margin, sd=sd) == pytest.approx(1.0)
