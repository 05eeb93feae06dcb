"""Tests for analysis.mixed: the crossed random-effects REML fit against statsmodels MixedLM and
against the hand-worked ANOVA answer of a balanced design, and the equivalence test built on it."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from analysis.frames import validate_frame
from analysis.mixed import fit_crossed, mixed_effect
from analysis.power import Plan, crossed_design_se
from analysis.simulation import SimDesign, SimEffects, simulate_frame

pytestmark = pytest.mark.nodb  # no database: the PostgreSQL pass leaves it out


def _pool_design(seed: int, n_pairs: int = 40, pool: int = 8, per_pair: int = 3) -> tuple[np.ndarray, ...]:
    """Unbalanced: a pool of annotators, each pair rated by `per_pair` of them."""
    rng = np.random.default_rng(seed)
    pair = np.repeat(np.arange(n_pairs), per_pair)
    ann = np.concatenate([rng.choice(pool, per_pair, replace=False) for _ in range(n_pairs)])
    d = (
        0.2
        + rng.normal(0, 0.3, pool)[ann]
        + rng.normal(0, 0.4, n_pairs)[pair]
        + rng.normal(0, 0.8, len(pair))
    )
    return d, pair, ann


def _statsmodels_fit(d: np.ndarray, pair: np.ndarray, ann: np.ndarray) -> tuple[object, dict[str, float]]:
    data = pd.DataFrame({"d": d, "pair": pair, "ann": ann, "g": 1})
    model = sm.MixedLM.from_formula(
        "d ~ 1",
        data=data,
        groups="g",
        re_formula="0",
        vc_formula={"pair": "0 + C(pair)", "ann": "0 + C(ann)"},
    )
    fit = model.fit(reml=True, method=["bfgs"], gtol=1e-12)
    return fit, dict(zip(model.exog_vc.names, np.asarray(fit.vcomp, dtype=float), strict=True))


@pytest.mark.parametrize("seed", [0, 1])
def test_crossed_fit_matches_statsmodels_to_1e_6(seed: int) -> None:
    """Same data, same model: REML with crossed random intercepts (statsmodels: one group, vc_formula)."""
    d, pair, ann = _pool_design(seed)
    ours = fit_crossed(d, np.ones((len(d), 1)), pair, ann)
    ref, vc = _statsmodels_fit(d, pair, ann)
    assert ours.reml_loglik == pytest.approx(ref.llf, rel=1e-9)
    assert float(ours.params[0]) == pytest.approx(float(ref.fe_params.iloc[0]), rel=1e-6, abs=1e-7)
    assert ours.pair_var == pytest.approx(vc["pair"], rel=1e-6, abs=1e-7)
    assert ours.annotator_var == pytest.approx(vc["ann"], rel=1e-6, abs=1e-7)
    assert ours.residual_var == pytest.approx(ref.scale, rel=1e-6)


def test_crossed_standard_error_is_the_gls_one() -> None:
    """The SE is sqrt((X' V^-1 X)^-1) with V built densely from the fitted variance components."""
    d, pair, ann = _pool_design(2)
    fit = fit_crossed(d, np.ones((len(d), 1)), pair, ann)
    zp = (pair[:, None] == np.unique(pair)[None, :]).astype(float)
    za = (ann[:, None] == np.unique(ann)[None, :]).astype(float)
    v = fit.pair_var * zp @ zp.T + fit.annotator_var * za @ za.T + fit.residual_var * np.eye(len(d))
    x = np.ones((len(d), 1))
    cov = np.linalg.inv(x.T @ np.linalg.solve(v, x))
    assert math.sqrt(float(fit.cov_params[0, 0])) == pytest.approx(math.sqrt(float(cov[0, 0])), rel=1e-9)
    gls = float((x.T @ np.linalg.solve(v, d))[0] * cov[0, 0])
    assert float(fit.params[0]) == pytest.approx(gls, rel=1e-9)


def test_balanced_design_equals_the_hand_worked_anova_answer() -> None:
    """Balanced crossed design (n pairs x k annotators): with positive ANOVA estimates REML equals the
    ANOVA estimators (Searle, Casella & McCulloch 1992, Variance Components, sec. 4.7), the variance of
    the grand mean is (MS_P + MS_A - MS_E) / (n k) and Satterthwaite's (1946) df for that linear
    combination of mean squares is (MS_P + MS_A - MS_E)^2 / (MS_P^2/(n-1) + MS_A^2/(k-1) +
    MS_E^2/((n-1)(k-1))); the same df lmerTest reports (Kuznetsova et al. 2017)."""
    rng = np.random.default_rng(3)
    n, k = 30, 4
    pair, ann = np.repeat(np.arange(n), k), np.tile(np.arange(k), n)
    d = 0.2 + rng.normal(0, 0.5, k)[ann] + rng.normal(0, 0.5, n)[pair] + rng.normal(0, 0.6, n * k)
    y = d.reshape(n, k)
    grand = y.mean()
    ms_p = k * ((y.mean(1) - grand) ** 2).sum() / (n - 1)
    ms_a = n * ((y.mean(0) - grand) ** 2).sum() / (k - 1)
    resid = y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + grand
    ms_e = (resid**2).sum() / ((n - 1) * (k - 1))
    var = (ms_p + ms_a - ms_e) / (n * k)
    df = (ms_p + ms_a - ms_e) ** 2 / (ms_p**2 / (n - 1) + ms_a**2 / (k - 1) + ms_e**2 / ((n - 1) * (k - 1)))
    fit = fit_crossed(d, np.ones((n * k, 1)), pair, ann)
    assert float(fit.params[0]) == pytest.approx(grand, rel=1e-9)
    assert float(fit.cov_params[0, 0]) == pytest.approx(var, rel=1e-5)
    assert fit.pair_var == pytest.approx((ms_p - ms_e) / k, rel=1e-5)
    assert fit.annotator_var == pytest.approx((ms_a - ms_e) / n, rel=1e-5)
    assert fit.residual_var == pytest.approx(ms_e, rel=1e-5)
    assert float(fit.df[0]) == pytest.approx(df, rel=1e-4)


def test_a_small_panel_gives_few_degrees_of_freedom() -> None:
    """3 annotators who differ in the gap they see: the df are about 2, not pairs - 1."""
    frame = validate_frame(
        simulate_frame(
            np.random.default_rng(5),
            SimDesign(n_pairs=200, items=("correctness",), rubric_aspects=0),
            SimEffects(annotator_gap_sd=0.5),
        )
    )
    res = mixed_effect(frame, "correctness", margin=0.5)
    assert res.df < 5
    assert res.annotator_var > 0
    assert res.n_annotators == 3 and res.annotator_estimable


def test_conservative_interval_is_the_classical_mean_square_one() -> None:
    """In a balanced design the moment-based variance is (MS_P + MS_A) / (n k)."""
    from analysis.mixed import _conservative_se

    rng = np.random.default_rng(3)
    n, k = 30, 4
    pair, ann = np.repeat(np.arange(n), k), np.tile(np.arange(k), n)
    d = 0.2 + rng.normal(0, 0.5, k)[ann] + rng.normal(0, 0.5, n)[pair] + rng.normal(0, 0.6, n * k)
    y = d.reshape(n, k)
    ms_p = k * ((y.mean(1) - y.mean()) ** 2).sum() / (n - 1)
    ms_a = n * ((y.mean(0) - y.mean()) ** 2).sum() / (k - 1)
    se, df = _conservative_se(fit_crossed(d, np.ones((n * k, 1)), pair, ann))
    assert se**2 == pytest.approx((ms_p + ms_a) / (n * k), rel=1e-5)
    assert df == pytest.approx((ms_p + ms_a) ** 2 / (ms_p**2 / (n - 1) + ms_a**2 / (k - 1)), rel=1e-4)


def test_recovers_a_known_gap_in_a_pool_design() -> None:
    frame = validate_frame(
        simulate_frame(
            np.random.default_rng(2),
            SimDesign(n_pairs=300, pool=20, items=("correctness",), rubric_aspects=0),
            SimEffects(quality_gap=0.3),
        )
    )
    res = mixed_effect(frame, "correctness", margin=0.5)
    assert abs(res.estimate - 0.28) < 4 * res.se  # rounding and clipping shrink a latent 0.3 a little
    assert res.ci_low < res.estimate < res.ci_high
    assert res.n_annotators == 20


def test_one_pair_raises() -> None:
    frame = validate_frame(simulate_frame(np.random.default_rng(0), SimDesign(n_pairs=1, rubric_aspects=0)))
    with pytest.raises(ValueError, match=re.escape("the crossed model needs at least 2 pairs")):
        mixed_effect(frame, "correctness", margin=0.5)


def test_no_more_judgments_than_fixed_effects_raises() -> None:
    """Three judgments and three fixed effects (intercept, side, length): no residual degrees of freedom
    (the REML criterion would divide by n - p = 0)."""
    X = np.column_stack([np.ones(3), [0.5, -0.5, 0.5], [0.1, 0.3, -0.2]])
    with pytest.raises(ValueError, match="no residual degrees of freedom"):
        fit_crossed(np.array([1.0, 0.0, 2.0]), X, [1, 2, 3], ["a", "b", "a"])


def test_identical_values_give_no_p_of_zero() -> None:
    """Two pairs rated once, all 4s: the test is undefined, never p = 0 and PASS."""
    frame = validate_frame(
        simulate_frame(np.random.default_rng(0), SimDesign(n_pairs=2, per_pair=1, rubric_aspects=0))
    )
    frame["value"] = 4.0
    res = mixed_effect(frame, "correctness", margin=0.5)
    assert math.isnan(res.pvalue) and not res.equivalent
    assert any("no variance" in w for w in res.warnings)


def test_judgments_without_noise_but_one_pair_give_no_df_rather_than_a_numerical_warning() -> None:
    """Every judgment 1 except the five of one pair (a pair effect and no residual): Satterthwaite's
    derivative cannot step around a residual variance at 0, so its df is undefined (the caller then
    uses pairs - 1), without a warning from a negative variance."""
    rng = np.random.default_rng(0)
    pairs = np.repeat(np.arange(55), 5)
    annotators = np.concatenate([rng.choice(20, 5, replace=False) for _ in range(55)])
    y = np.where(pairs == 43, 2 / 3, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = fit_crossed(y, np.ones((len(y), 1)), pairs, annotators)
    assert math.isnan(fit.df[0]) and fit.params[0] == pytest.approx(1.0, abs=0.01)


def test_a_covariate_that_explains_every_judgment_is_refused_without_a_numerical_warning() -> None:
    """One annotator, four pairs rated once, the side explains every difference: no residual variation
    at any variance ratio, so the REML criterion is infinite throughout (the scalar search subtracted
    infinities)."""
    X = np.column_stack([np.ones(4), [-0.25, -0.25, -0.25, 0.75]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="not finite"):
            fit_crossed(np.array([1.0, 1.0, 1.0, 0.0]), X, [0, 1, 2, 3], ["a"] * 4, start=(438.6, 0.0))


def test_two_annotators_whose_differences_a_covariate_explains_are_refused_without_a_warning() -> None:
    """Two pairs x two annotators, the side explains every difference: the criterion is infinite at
    every point of the two-component search too (Nelder-Mead subtracted infinities)."""
    X = np.column_stack([np.ones(4), [0.5, -0.5, 0.5, -0.5]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="not finite"):
            fit_crossed(np.array([1.0, 0.0, 1.0, 0.0]), X, [0, 0, 1, 1], ["a", "b", "a", "b"], start=(1, 1))


def test_single_annotator_is_flagged() -> None:
    frame = validate_frame(
        simulate_frame(np.random.default_rng(6), SimDesign(n_pairs=50, per_pair=1, rubric_aspects=0))
    )
    res = mixed_effect(frame, "correctness", margin=0.5)
    assert not res.annotator_estimable
    assert any("only 1 annotator" in w for w in res.warnings)
    assert np.isfinite(res.estimate) and np.isfinite(res.se)


def test_bad_margin() -> None:
    frame = validate_frame(simulate_frame(np.random.default_rng(0), SimDesign(n_pairs=5, rubric_aspects=0)))
    with pytest.raises(ValueError, match=re.escape("margin must be a positive number, got -0.5")):
        mixed_effect(frame, "correctness", margin=-0.5)


def test_unknown_item() -> None:
    frame = validate_frame(simulate_frame(np.random.default_rng(0), SimDesign(n_pairs=5, rubric_aspects=0)))
    with pytest.raises(ValueError, match=re.escape("no scores for item 'style'")):
        mixed_effect(frame, "style", margin=0.5)


def test_to_dict_is_flat() -> None:
    frame = validate_frame(simulate_frame(np.random.default_rng(0), SimDesign(n_pairs=20, rubric_aspects=0)))
    out = mixed_effect(frame, "correctness", margin=0.5).to_dict()
    assert isinstance(out["warnings"], str)
    assert all(not isinstance(v, list | dict | np.ndarray) for v in out.values())


def test_design_se_of_a_balanced_design() -> None:
    """var = s2_a / pool + s2_p / n + s2 / (n k): 0.04 / 4 + 0.1 / 50 + 0.8 / 200 = 0.016."""
    se, df = crossed_design_se(
        Plan(n_pairs=50, per_pair=4, pool=4, margin=0.5, pair_var=0.1, annotator_var=0.04, residual_var=0.8)
    )
    assert se == pytest.approx(math.sqrt(0.016))
    # Satterthwaite: 0.016^2 / (0.01^2 / 3 + 0.006^2 / 49)
    assert df == pytest.approx(0.016**2 / (0.01**2 / 3 + 0.006**2 / 49))


def test_the_crossed_results_share_one_flat_dict_with_the_warnings_joined() -> None:
    """The crossed mean and the mixed model give their fields in declaration order, ``warnings`` as
    one "; "-joined string (the base both take it from)."""
    from dataclasses import fields

    from analysis.crossed_mean import crossed_mean

    one = crossed_mean([0.2, 0.4, 0.1, 0.5], ["p1", "p1", "p2", "p2"], ["a", "a", "a", "a"], item="rubric")
    frame = validate_frame(simulate_frame(np.random.default_rng(6), SimDesign(n_pairs=30, per_pair=1)))
    mixed = mixed_effect(frame, "correctness", margin=0.5)
    for result in (one, mixed):
        out = result.to_dict()
        assert list(out) == [f.name for f in fields(result)]
        assert result.warnings and out["warnings"] == "; ".join(result.warnings)


def test_a_categorical_of_sorted_texts_is_fitted_as_its_texts() -> None:
    """Pairs and annotators given as a categorical (the label frame's codes) give the fit of the same
    labels as texts, to the last bit, also with unused categories."""
    rng = np.random.default_rng(5)
    pairs = np.repeat([f"p{i:03d}" for i in range(60)], 3)
    annotators = np.tile(["ann-b", "ann-a", "ann-c"], 60)
    y = rng.normal(0.2, 0.5, 60)[np.repeat(np.arange(60), 3)] + rng.normal(0, 0.4, 180)
    as_codes = pd.Series(pd.Categorical(pairs, categories=sorted({*pairs, "p999"})))
    by_codes = fit_crossed(y, np.ones((180, 1)), as_codes, pd.Series(pd.Categorical(annotators)))
    by_text = fit_crossed(y, np.ones((180, 1)), pairs, annotators)
    assert np.array_equal(by_codes.params, by_text.params)
    assert (by_codes.pair_var, by_codes.annotator_var, by_codes.residual_var) == (
        by_text.pair_var,
        by_text.annotator_var,
        by_text.residual_var,
    )


def test_annotators_who_always_answer_alike_are_not_taken_as_certain() -> None:
    """Each annotator gives the same score on every pair (no residual noise): REML's variance ratio
    runs to its bound and sized the annotator variance at 1e4 times a vanishing residual (p 0.026 for
    two annotators at +0.5 and one at -0.5). The guard then takes the annotator means' own variance:
    mean 1/6 with SE 1/3 on 2 df, no claim; the same panel's gaps of 0, 0 and 1 are no equivalence."""
    from analysis.crossed_mean import crossed_mean

    pairs, annotators = np.repeat(np.arange(40), 3), np.tile(np.arange(3), 40)
    y = np.array([0.5, 0.5, -0.5])[annotators]
    res = crossed_mean(y, pairs, annotators, item="preference")
    assert res.se == pytest.approx(1 / 3, rel=0.01) and res.df == pytest.approx(2, rel=0.01)
    assert res.p_greater > 0.3
    fit = fit_crossed(y, np.ones((len(y), 1)), pairs, annotators)
    assert fit.capped and fit.mean_vars == pytest.approx((0.0, 1 / 3))
    assert any("REML cannot size them" in w for w in res.warnings)
    rng = np.random.default_rng(2)
    noisy = y + rng.normal(0, 0.3, len(y))
    assert not fit_crossed(noisy, np.ones((len(y), 1)), pairs, annotators).capped
    rows = [
        (f"p{i}", f"a{a}", response, "correctness", value, 1, 2, 10.0)
        for i in range(40)
        for a, gap in enumerate((0, 0, 1))
        for response, value in (("chosen", 4.0 + gap), ("rejected", 4.0))
    ]
    cols = ["pair_id", "annotator", "response", "item", "value", "preference", "confidence", "time_s"]
    gaps = mixed_effect(validate_frame(pd.DataFrame(rows, columns=cols)), "correctness", margin=0.5)
    assert not gaps.equivalent and gaps.ci_high > 0.5


def test_pairs_that_every_annotator_answers_alike_are_sized_by_their_means() -> None:
    """Every annotator gives each pair the same score (80% of pairs +0.5, 20% -0.5, no noise): REML ran
    both variance ratios to their bound (an annotator variance of 0.05 where annotators do not differ
    at all, p 0.07 on 2.5 df). The moments: the pair means' variance over n, the annotators' none."""
    from analysis.crossed_mean import crossed_mean

    pairs, annotators = np.repeat(np.arange(80), 3), np.tile(np.arange(3), 80)
    y = np.where(np.arange(80) % 5 == 0, -0.5, 0.5)[pairs]
    res = crossed_mean(y, pairs, annotators, item="preference")
    assert res.se == pytest.approx(math.sqrt(np.var(y[::3], ddof=1) / 80))
    assert res.df == pytest.approx(79) and res.p_greater < 1e-6
