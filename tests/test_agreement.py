"""Tests for analysis.agreement: published worked examples, cross-checks against reference packages,
invariance properties and exact input-error messages."""

from __future__ import annotations

import re

import krippendorff
import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats import inter_rater

from analysis.agreement import (
    agreement_table,
    alpha_ci,
    cohen_kappa,
    fleiss_kappa,
    fleiss_table,
    gwet_ac1,
    gwet_ac2,
    icc,
    krippendorff_alpha,
    percent_agreement,
)
from analysis.agreement.alpha import _AlphaKernel, _prepare_alpha
from analysis.scale import Scale

pytestmark = pytest.mark.nodb  # no database: the PostgreSQL pass leaves it out

nan = np.nan
LEVELS = ["nominal", "ordinal", "interval", "ratio"]

# Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability, section C (4 observers x 12 units).
KRIPP_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
)

# Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychological Bulletin 76,
# 378-382: 30 patients x 6 psychiatrists x 5 diagnoses (raw ratings as in statsmodels' and R irr's
# `diagnoses` data set; kappa = 0.430).
FLEISS_1971 = np.array(
    [
        [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
        [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
        [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
        [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
        [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
        [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
        [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
    ]
)  # fmt: skip

# Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations. Psychological Bulletin 86, 420-428,
# Table 2: 6 targets x 4 judges.
SHROUT_FLEISS = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
)


def _long(wide: np.ndarray) -> pd.DataFrame:
    """targets x raters matrix -> long frame (rows with NaN are kept as missing ratings)."""
    t, r = np.indices(wide.shape)
    return pd.DataFrame({"t": t.ravel(), "r": r.ravel(), "y": wide.ravel().astype(float)}).dropna()


def _random_ratings(seed: int, raters: int = 5, units: int = 200, missing: float = 0.2) -> np.ndarray:
    """Correlated 1..5 ratings with missing values (raters x units)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=units)
    x = np.clip(truth + rng.integers(-1, 2, size=(raters, units)), 1, 5).astype(float)
    x[rng.random(x.shape) < missing] = nan
    return x


# ----------------------------------------------------------------------------------------------------
# published values
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("level", "expected"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_alpha_krippendorff_2011(level: str, expected: float) -> None:
    """Krippendorff (2011), Computing Krippendorff's Alpha-Reliability, section C: 0.743 / 0.815 / 0.849 /
    0.797 (the same values are doctests of the krippendorff package)."""
    assert round(krippendorff_alpha(KRIPP_2011, level=level), 3) == expected


def test_alpha_ordinal_with_declared_domain_krippendorff_2011() -> None:
    """Krippendorff (2011): ordinal alpha 0.815 also with the declared 1..5 scale."""
    value = krippendorff_alpha(KRIPP_2011, level="ordinal", value_domain=[1, 2, 3, 4, 5])
    assert round(value, 3) == 0.815


def test_fleiss_1971_diagnoses() -> None:
    """Fleiss (1971), 30 subjects x 6 raters x 5 categories: kappa = 0.430
    (R irr::kappam.fleiss and statsmodels' tests: 0.4302445)."""
    table = fleiss_table(FLEISS_1971.T)
    assert table.shape == (30, 5)
    assert round(fleiss_kappa(table), 3) == 0.430
    assert fleiss_kappa(table) == pytest.approx(0.4302445, abs=1e-7)


def test_fleiss_wikipedia_example() -> None:
    """Wikipedia, "Fleiss' kappa", worked example (10 subjects x 14 raters x 5 categories): kappa = 0.210."""
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]  # fmt: skip
    assert round(fleiss_kappa(table), 3) == 0.210


def test_icc_shrout_fleiss_1979() -> None:
    """Shrout & Fleiss (1979), Table 4: ICC(1,1)=.17, ICC(2,1)=.29, ICC(3,1)=.71, ICC(1,4)=.44,
    ICC(2,4)=.62, ICC(3,4)=.91."""
    res = icc(_long(SHROUT_FLEISS), targets="t", raters="r", ratings="y")
    assert res["ICC"].round(2).tolist() == [0.17, 0.29, 0.71, 0.44, 0.62, 0.91]
    assert list(res.index) == ["ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)", "ICC(C,k)"]
    assert list(res.columns) == ["Type", "Description", "ICC", "F", "df1", "df2", "pval", "ci_low", "ci_high"]


def test_cohen_kappa_wikipedia_example() -> None:
    """Wikipedia, "Cohen's kappa", example: 50 proposals, yes/yes 20, yes/no 5, no/yes 10, no/no 15:
    p_o = 0.7, p_e = 0.5, kappa = 0.4."""
    r1 = ["yes"] * 25 + ["no"] * 25
    r2 = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(r1, r2) == pytest.approx(0.4, abs=1e-12)


def test_gwet_ac1_handbook_example() -> None:
    """Gwet (2014), Handbook of Inter-Rater Reliability, Krippendorff's 4 x 12 data, as reproduced by the
    irrCAC package tests: AC1 = 0.77544, p_a = 0.81818, AC2 (quadratic weights) = 0.914."""
    assert round(gwet_ac1(KRIPP_2011), 5) == 0.77544
    assert round(percent_agreement(KRIPP_2011), 5) == 0.81818
    assert round(gwet_ac2(KRIPP_2011, weights="quadratic"), 5) == 0.914


# ----------------------------------------------------------------------------------------------------
# cross-checks against reference packages
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alpha_equals_krippendorff_package(level: str, seed: int) -> None:
    x = _random_ratings(seed, raters=6, units=150, missing=0.35)
    assert krippendorff_alpha(x, level=level) == pytest.approx(
        krippendorff.alpha(x, level_of_measurement=level), abs=1e-12
    )


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_continuous_values_equal_package(level: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(5, 1, size=60)[None, :] + rng.normal(0, 0.7, size=(3, 60))
    x[rng.random(x.shape) < 0.2] = nan
    assert krippendorff_alpha(x, level=level) == pytest.approx(
        krippendorff.alpha(x, level_of_measurement=level), abs=1e-12
    )


def test_alpha_interval_many_distinct_values_is_linear_in_memory() -> None:
    """300,000 distinct values: the package would need N x V^2 cells; the closed form needs O(N)."""
    rng = np.random.default_rng(4)
    truth = rng.normal(size=100_000)
    x = truth[None, :] + rng.normal(scale=0.5, size=(3, 100_000))
    expected = 1.0 - 0.25 / (1.0 + 0.25)  # between-unit variance 1, error variance 0.25
    assert krippendorff_alpha(x, level="interval") == pytest.approx(expected, abs=0.01)
    assert krippendorff_alpha(x, level="ordinal") == pytest.approx(
        krippendorff_alpha(np.argsort(np.argsort(x.ravel())).reshape(x.shape).astype(float), level="ordinal"),
        abs=1e-9,
    )


@pytest.mark.parametrize("level", LEVELS)
def test_bootstrap_replicate_equals_package_on_resampled_units(level: str) -> None:
    """The vectorised replicate for a set of resampled units equals the package on those units."""
    x = _random_ratings(5, raters=4, units=80, missing=0.3)
    units = _prepare_alpha(x, level, None)
    kernel = _AlphaKernel(units)
    pairable = x[:, (~np.isnan(x)).sum(axis=0) >= 2]
    rng = np.random.default_rng(0)
    for _ in range(5):
        idx = rng.integers(0, pairable.shape[1], size=pairable.shape[1])
        w = np.bincount(units.group[idx], minlength=units.sizes.size).astype(float)[None, :]
        assert kernel.alpha(w)[0] == pytest.approx(
            krippendorff.alpha(pairable[:, idx], level_of_measurement=level), abs=1e-12
        )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fleiss_kappa_equals_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.multinomial(7, [0.1, 0.2, 0.3, 0.4], size=40)
    assert fleiss_kappa(table) == pytest.approx(inter_rater.fleiss_kappa(table), abs=1e-12)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_equals_sklearn_and_statsmodels(weights: str | None) -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(1, 6, size=300)
    b = np.clip(a + rng.integers(-1, 2, size=300), 1, 5)
    ours = cohen_kappa(a, b, weights=weights)
    assert ours == pytest.approx(cohen_kappa_score(a, b, weights=weights), abs=1e-12)
    table = pd.crosstab(a, b).to_numpy()
    wt = {None: None, "linear": "linear", "quadratic": "quadratic"}[weights]
    assert ours == pytest.approx(inter_rater.cohens_kappa(table, wt=wt).kappa, abs=1e-12)


def test_cohen_kappa_labels_fix_the_scale() -> None:
    """An unused middle category (3) changes the weights; `labels` keeps it, like sklearn's `labels`."""
    a = np.array([1, 2, 5, 4, 4, 5, 2, 1, 2, 5])
    b = np.array([1, 2, 4, 4, 5, 5, 2, 2, 1, 4])
    with_5 = cohen_kappa(a, b, weights="linear", labels=[1, 2, 3, 4, 5])
    assert with_5 == pytest.approx(
        cohen_kappa_score(a, b, weights="linear", labels=[1, 2, 3, 4, 5]), abs=1e-12
    )
    assert with_5 != pytest.approx(cohen_kappa(a, b, weights="linear"), abs=1e-6)


@pytest.mark.parametrize("seed", [0, 1])
def test_icc_equals_pingouin_with_missing(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same numbers as pingouin.intraclass_corr (validated against R psych), listwise deletion."""
    rng = np.random.default_rng(seed)
    wide = rng.normal(size=(60, 1)) + rng.normal(size=(1, 4)) * 0.5 + rng.normal(size=(60, 4))
    wide[rng.random(wide.shape) < 0.05] = nan
    long = _long(wide)
    ours = icc(long, targets="t", raters="r", ratings="y")
    ref = pg.intraclass_corr(long, targets="t", raters="r", ratings="y", nan_policy="omit")
    np.testing.assert_allclose(ours["ICC"], ref["ICC"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours["F"], ref["F"], rtol=1e-10)
    np.testing.assert_allclose(ours["pval"], ref["pval"], rtol=1e-10, atol=1e-300)
    np.testing.assert_array_equal(ours["df1"], ref["df1"])
    np.testing.assert_array_equal(ours["df2"], ref["df2"])
    assert ours["Type"].tolist() == ref["Type"].tolist()
    # pingouin rounds CI95 to 2 decimals by default ...
    rounded = np.stack(ref["CI95"].to_numpy())
    np.testing.assert_allclose(ours[["ci_low", "ci_high"]].round(2), rounded, atol=1e-12)
    # ... and without rounding the intervals agree to 1e-6
    monkeypatch.setitem(pg.options, "round.column.CI95", None)
    exact = np.stack(
        pg.intraclass_corr(long, targets="t", raters="r", ratings="y", nan_policy="omit")["CI95"]
    )
    np.testing.assert_allclose(ours[["ci_low", "ci_high"]], exact, atol=1e-6)
    dropped = int(np.isnan(wide).any(axis=1).sum())
    assert ours.attrs["n_targets_dropped"] == dropped
    assert ours.attrs["n_targets"] == 60 - dropped


def test_icc_columns_are_flat_floats() -> None:
    res = icc(_long(SHROUT_FLEISS), targets="t", raters="r", ratings="y")
    for col in ["ICC", "F", "pval", "ci_low", "ci_high"]:
        assert res[col].dtype == np.float64
    assert (res["ci_low"] <= res["ICC"]).all() and (res["ICC"] <= res["ci_high"]).all()


def test_gwet_ac1_two_raters_matches_formula() -> None:
    """Gwet (2008), two raters: AC1 = (p_a - p_e) / (1 - p_e), p_e = 2 pi (1 - pi) for two categories."""
    r1 = np.array([1] * 40 + [0] * 10)
    r2 = np.array([1] * 35 + [0] * 5 + [1] * 3 + [0] * 7)
    p_a = np.mean(r1 == r2)
    pi = (r1.mean() + r2.mean()) / 2
    p_e = 2 * pi * (1 - pi)
    assert gwet_ac1(np.vstack([r1, r2])) == pytest.approx((p_a - p_e) / (1 - p_e), abs=1e-12)


def test_gwet_ac1_unused_category_changes_value() -> None:
    data = np.array([[1, 2, 2, 3], [1, 2, 3, 3]], dtype=float)
    assert gwet_ac1(data, categories=[1, 2, 3, 4, 5]) != pytest.approx(gwet_ac1(data), abs=1e-6)


# ----------------------------------------------------------------------------------------------------
# bootstrap
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("level", LEVELS)
def test_alpha_ci_deterministic_and_contains_estimate(level: str) -> None:
    x = _random_ratings(11, raters=4, units=300)
    first = alpha_ci(x, level=level, n_boot=300, seed=5)
    assert first == alpha_ci(x, level=level, n_boot=300, seed=5)
    assert first != alpha_ci(x, level=level, n_boot=300, seed=6)
    low, high = first
    assert low < krippendorff_alpha(x, level=level) < high


def test_alpha_ci_matches_loop_over_package() -> None:
    """Same resampling scheme as a plain loop over krippendorff.alpha: the intervals agree closely."""
    x = _random_ratings(12, raters=4, units=250)
    pairable = x[:, (~np.isnan(x)).sum(axis=0) >= 2]
    rng = np.random.default_rng(0)
    n = pairable.shape[1]
    loop = [
        krippendorff.alpha(pairable[:, rng.integers(0, n, n)], level_of_measurement="ordinal")
        for _ in range(1000)
    ]
    low, high = alpha_ci(x, level="ordinal", n_boot=4000, seed=1)
    ref_low, ref_high = np.quantile(loop, [0.025, 0.975])
    assert low == pytest.approx(ref_low, abs=0.02)
    assert high == pytest.approx(ref_high, abs=0.02)


def test_alpha_ci_continuous_values_use_index_resampling() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 500)) + rng.normal(scale=0.5, size=(3, 500))
    low, high = alpha_ci(x, level="interval", n_boot=400, seed=0)
    assert low < krippendorff_alpha(x, level="interval") < high
    assert high - low < 0.15


def test_alpha_ci_narrower_at_lower_confidence() -> None:
    x = _random_ratings(13)
    low90, high90 = alpha_ci(x, level="ordinal", confidence=0.90)
    low95, high95 = alpha_ci(x, level="ordinal", confidence=0.95)
    assert low95 <= low90 < high90 <= high95


# ----------------------------------------------------------------------------------------------------
# properties
# ----------------------------------------------------------------------------------------------------
@st.composite
def rating_matrices(draw: st.DrawFn) -> np.ndarray:
    raters = draw(st.integers(2, 5))
    units = draw(st.integers(3, 25))
    cells = st.one_of(st.integers(1, 5).map(float), st.just(nan))
    flat = draw(st.lists(cells, min_size=raters * units, max_size=raters * units))
    x = np.array(flat).reshape(raters, units)
    x[:, :2] = [[1.0, 3.0]] + [[2.0, 3.0]] * (raters - 1)  # two pairable units, at least two values
    return x


@settings(max_examples=60, deadline=None)
@given(x=rating_matrices(), data=st.data())
def test_coefficients_invariant_to_rater_and_unit_order(x: np.ndarray, data: st.DataObject) -> None:
    rows = data.draw(st.permutations(range(x.shape[0])))
    cols = data.draw(st.permutations(range(x.shape[1])))
    y = x[np.ix_(rows, cols)]
    for level in LEVELS:
        assert krippendorff_alpha(y, level=level) == pytest.approx(
            krippendorff_alpha(x, level=level), abs=1e-12
        )
    assert alpha_ci(y, level="ordinal", n_boot=50, seed=3) == pytest.approx(
        alpha_ci(x, level="ordinal", n_boot=50, seed=3), abs=1e-12
    )
    assert gwet_ac1(y) == pytest.approx(gwet_ac1(x), abs=1e-12)
    assert gwet_ac2(y, weights="linear") == pytest.approx(gwet_ac2(x, weights="linear"), abs=1e-12)
    assert percent_agreement(y) == pytest.approx(percent_agreement(x), abs=1e-12)
    complete = np.nan_to_num(x, nan=2.0)
    assert fleiss_kappa(fleiss_table(complete[np.ix_(rows, cols)])) == pytest.approx(
        fleiss_kappa(fleiss_table(complete)), abs=1e-12
    )
    a = icc(_long(complete.T), targets="t", raters="r", ratings="y")
    b = icc(_long(complete[np.ix_(rows, cols)].T), targets="t", raters="r", ratings="y")
    np.testing.assert_allclose(a["ICC"], b["ICC"], atol=1e-10)


# ----------------------------------------------------------------------------------------------------
# input errors
# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "kwargs", "message"),
    [
        ([[1.0, 2.0, 3.0]], {}, "data must have at least two raters (rows); got 1"),
        ([1.0, 2.0, 3.0], {}, "data must be a 2-D array of shape (raters, units); got shape (3,)"),
        ([[nan, nan], [nan, nan]], {}, "data has no non-missing values"),
        ([[1.0, nan], [nan, 2.0]], {}, "no unit has ratings from at least two raters; alpha is undefined"),
        ([[2.0, 2.0], [2.0, 2.0]], {},
         "all pairable values are identical; alpha is undefined (no variation)"),
        ([[1.0, 2.0], [1.0, 9.0]], {"value_domain": [1, 2, 3]},
         "data contains values outside value_domain: [9.0]"),
        ([[1.0, -2.0], [1.0, 2.0]], {"level": "ratio"}, "ratio level needs non-negative values"),
        ([[1.0, 2.0], [1.0, 2.0]], {"level": "likert"},
         "level must be one of 'nominal', 'ordinal', 'interval', 'ratio'; got 'likert'"),
    ],
)  # fmt: skip
def test_alpha_input_errors(data: list, kwargs: dict, message: str) -> None:
    kwargs = {"level": "nominal", **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        krippendorff_alpha(data, **kwargs)
    with pytest.raises(ValueError, match=re.escape(message)):
        alpha_ci(data, **kwargs)


def test_alpha_ci_argument_errors() -> None:
    with pytest.raises(ValueError, match=re.escape("n_boot must be a positive integer; got 0")):
        alpha_ci(KRIPP_2011, level="nominal", n_boot=0)
    with pytest.raises(ValueError, match=re.escape("confidence must be between 0 and 1; got 1.5")):
        alpha_ci(KRIPP_2011, level="nominal", confidence=1.5)


def test_fleiss_kappa_unequal_raters_points_to_alpha() -> None:
    message = (
        "fleiss_kappa needs the same number of ratings for every unit (found 1 to 4); "
        "use krippendorff_alpha for unequal numbers of raters"
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        fleiss_kappa(fleiss_table(KRIPP_2011))


def test_fleiss_kappa_other_errors() -> None:
    with pytest.raises(ValueError, match=re.escape("table must hold non-negative integer counts")):
        fleiss_kappa([[1.5, 0.5], [1, 1]])
    with pytest.raises(ValueError, match=re.escape("all ratings are in one category; kappa is undefined")):
        fleiss_kappa([[3, 0], [3, 0]])
    with pytest.raises(ValueError, match=re.escape("table must be a 2-D array of shape (units, categories)")):
        fleiss_kappa([1, 2, 3])


def test_cohen_kappa_errors() -> None:
    with pytest.raises(ValueError, match=re.escape("r1 and r2 must be 1-D and of equal length")):
        cohen_kappa([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match=re.escape("r1 and r2 must not contain missing values")):
        cohen_kappa([1, nan], [1, 2])
    with pytest.raises(ValueError, match=re.escape("r1 or r2 contains values not in labels")):
        cohen_kappa([1, 2], [1, 3], labels=[1, 2])
    with pytest.raises(
        ValueError, match=re.escape("weights must be None, 'linear' or 'quadratic'; got 'cubic'")
    ):
        cohen_kappa([1, 2], [1, 2], weights="cubic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=re.escape("both raters use a single, identical category")):
        cohen_kappa([1, 1], [1, 1])


def test_icc_errors() -> None:
    long = _long(SHROUT_FLEISS)
    with pytest.raises(ValueError, match=re.escape("each (t, r) pair must appear at most once")):
        icc(pd.concat([long, long]), targets="t", raters="r", ratings="y")
    with pytest.raises(ValueError, match=re.escape("data has no column(s) ['score']")):
        icc(long, targets="t", raters="r", ratings="score")
    with pytest.raises(ValueError, match=re.escape("all ratings are identical; the ICC is undefined")):
        icc(long.assign(y=1.0), targets="t", raters="r", ratings="y")
    single = long[long["r"] == 0]
    with pytest.raises(ValueError, match=re.escape("icc needs at least two targets and two raters")):
        icc(single, targets="t", raters="r", ratings="y")


# ----------------------------------------------------------------------------------------------------
# agreement_table
# ----------------------------------------------------------------------------------------------------
def _study_frame(seed: int = 0, pairs: int = 60, annotators: int = 3, aspects: int = 2) -> pd.DataFrame:
    """Simulated tidy label frame: every annotator rates every pair (fully crossed)."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(pairs):
        true_q = rng.integers(2, 6, size=(2, 2))
        true_rubric = rng.integers(0, 3, size=(2, aspects))
        for a in range(annotators):
            pref = int(np.clip(rng.integers(0, 3) + (a == 0), -2, 2))
            for r, response in enumerate(["chosen", "rejected"]):
                for i, item in enumerate(["correctness", "helpfulness"]):
                    value = int(np.clip(true_q[r, i] + rng.integers(-1, 2), 1, 5))
                    rows.append((f"p{p}", f"ann{a}", response, item, value, pref))
                for k in range(aspects):
                    value = int(np.clip(true_rubric[r, k] + rng.integers(-1, 2) * (rng.random() < 0.3), 0, 2))
                    rows.append((f"p{p}", f"ann{a}", response, f"rubric:{k}", value, pref))
    frame = pd.DataFrame(rows, columns=["pair_id", "annotator", "response", "item", "value", "preference"])
    return frame.assign(confidence=2, time_s=30.0)


def test_agreement_table_columns_and_units() -> None:
    frame = _study_frame()
    table = agreement_table(frame, quality_items=["correctness", "helpfulness"], n_boot=200)
    assert list(table.columns) == [
        "item", "level", "krippendorff_alpha", "krippendorff_alpha_ci_low", "krippendorff_alpha_ci_high",
        "icc_a1", "icc_ak", "fleiss_kappa", "ac1", "percent_agreement", "n_units", "n_ratings", "ci_level",
        "ci_covers", "note",
    ]  # fmt: skip
    assert table["item"].tolist() == ["correctness", "helpfulness", "rubric", "preference"]
    assert table["level"].tolist() == ["ordinal", "ordinal", "interval", "ordinal"]
    assert table["n_units"].tolist() == [120, 120, 120, 60]  # (pair, response) units; one unit per pair
    assert table["n_ratings"].tolist() == [360, 360, 360, 180]
    for row in table.itertuples():
        assert row.krippendorff_alpha_ci_low <= row.krippendorff_alpha <= row.krippendorff_alpha_ci_high


def test_agreement_table_values_match_functions() -> None:
    frame = _study_frame(1)
    table = agreement_table(frame, quality_items=["correctness"], n_boot=100, seed=4, bootstrap="unit")
    table = table.set_index("item")
    sub = frame[frame["item"] == "correctness"]
    wide = sub.pivot_table(index="annotator", columns=["pair_id", "response"], values="value").to_numpy()
    assert table.at["correctness", "krippendorff_alpha"] == pytest.approx(
        krippendorff_alpha(wide, level="ordinal", value_domain=range(1, 6)), abs=1e-12
    )
    assert table.at["correctness", "krippendorff_alpha_ci_low"] == pytest.approx(
        alpha_ci(wide, level="ordinal", n_boot=100, seed=4, value_domain=range(1, 6))[0], abs=1e-12
    )
    assert table.at["correctness", "fleiss_kappa"] == pytest.approx(
        fleiss_kappa(fleiss_table(wide)), abs=1e-12
    )
    assert table.at["correctness", "ac1"] == pytest.approx(gwet_ac1(wide, categories=range(1, 6)), abs=1e-12)
    long = sub.assign(unit=sub["pair_id"] + "/" + sub["response"])
    ref = icc(long, targets="unit", raters="annotator", ratings="value")
    assert table.at["correctness", "icc_a1"] == pytest.approx(ref.at["ICC(A,1)", "ICC"], abs=1e-12)
    assert table.at["correctness", "icc_ak"] == pytest.approx(ref.at["ICC(A,k)", "ICC"], abs=1e-12)
    rubric = frame[frame["item"].str.startswith("rubric:")]
    mean = (
        rubric.groupby(["annotator", "pair_id", "response"])["value"].mean().unstack(["pair_id", "response"])
    )
    assert table.at["rubric", "krippendorff_alpha"] == pytest.approx(
        krippendorff_alpha(mean.to_numpy(), level="interval"), abs=1e-12
    )
    pref = frame.groupby(["annotator", "pair_id"])["preference"].first().unstack("pair_id").to_numpy()
    assert table.at["preference", "krippendorff_alpha"] == pytest.approx(
        krippendorff_alpha(pref, level="ordinal", value_domain=range(-2, 3)), abs=1e-12
    )


def test_agreement_table_accepts_precomputed_rubric() -> None:
    frame = _study_frame(2)
    raw = agreement_table(frame, quality_items=["helpfulness"], n_boot=50)
    rubric = frame[frame["item"].str.startswith("rubric:")]
    mean = rubric.groupby(["pair_id", "annotator", "response"], as_index=False)["value"].mean()
    pre = pd.concat([frame[~frame["item"].str.startswith("rubric:")], mean.assign(item="rubric")])
    again = agreement_table(pre, quality_items=["helpfulness"], n_boot=50)
    pd.testing.assert_frame_equal(raw, again)


def test_agreement_table_fleiss_nan_when_raters_differ() -> None:
    frame = _study_frame(3)
    drop = (frame["annotator"] == "ann2") & frame["pair_id"].isin(["p0", "p1"])
    table = agreement_table(frame[~drop], quality_items=["correctness"], n_boot=50).set_index("item")
    assert np.isnan(table.at["correctness", "fleiss_kappa"])
    assert np.isfinite(table.at["correctness", "krippendorff_alpha"])


def test_agreement_table_errors() -> None:
    frame = _study_frame(4)
    with pytest.raises(ValueError, match=re.escape("frame has no column(s) ['value']")):
        agreement_table(frame.drop(columns="value"), quality_items=["correctness"])
    with pytest.raises(ValueError, match=re.escape("quality item 'clarity' has no ratings in frame")):
        agreement_table(frame, quality_items=["clarity"])
    with pytest.raises(ValueError, match=re.escape("correctness: an annotator has more than one value")):
        agreement_table(pd.concat([frame, frame.head(1)]), quality_items=["correctness"])


def test_pair_bootstrap_resamples_whole_pairs() -> None:
    """The cluster (pair) bootstrap equals a plain loop that resamples pairs and keeps both units."""
    frame = _study_frame(5, pairs=30)
    sub = frame[frame["item"] == "correctness"]
    wide = sub.pivot_table(index="annotator", columns=["pair_id", "response"], values="value")
    x = wide.to_numpy()
    pairs = np.asarray(wide.columns.get_level_values("pair_id"))
    table = agreement_table(frame, quality_items=["correctness"], n_boot=300, seed=9).set_index("item")
    assert table.at["correctness", "krippendorff_alpha_ci_low"] == pytest.approx(
        alpha_ci(x, level="ordinal", n_boot=300, seed=9, value_domain=range(1, 6), clusters=pairs)[0],
        abs=1e-12,
    )
    assert "pairs resampled" in table.at["correctness", "ci_covers"]
    # the same resampling scheme written as a loop over krippendorff_alpha
    uniq = np.unique(pairs)
    rng = np.random.default_rng(0)
    loop = []
    for _ in range(1500):
        drawn = rng.choice(uniq, len(uniq))
        cols = np.concatenate([np.flatnonzero(pairs == p) for p in drawn])
        loop.append(krippendorff_alpha(x[:, cols], level="ordinal", value_domain=range(1, 6)))
    low, high = alpha_ci(x, level="ordinal", n_boot=1500, seed=1, value_domain=range(1, 6), clusters=pairs)
    assert low == pytest.approx(np.quantile(loop, 0.025), abs=0.03)
    assert high == pytest.approx(np.quantile(loop, 0.975), abs=0.03)


def test_agreement_table_on_a_one_to_seven_scale() -> None:
    """The scale comes from the caller: 1-7 ratings give a finite alpha (a fixed 1..5 domain raised)."""
    frame = _study_frame(6)
    quality = ~frame["item"].str.startswith("rubric:")
    frame.loc[quality, "value"] = frame.loc[quality, "value"] + 2  # now 3..7
    table = agreement_table(
        frame, quality_items=["correctness"], n_boot=50, scales={"correctness": Scale(1, 7)}
    )
    sub = frame[frame["item"] == "correctness"]
    wide = sub.pivot_table(index="annotator", columns=["pair_id", "response"], values="value").to_numpy()
    assert table.set_index("item").at["correctness", "krippendorff_alpha"] == pytest.approx(
        krippendorff_alpha(wide, level="ordinal", value_domain=range(1, 8)), abs=1e-12
    )
    with pytest.raises(ValueError, match=re.escape("data contains values outside value_domain: [6.0, 7.0]")):
        krippendorff_alpha(wide, level="ordinal", value_domain=range(1, 6))


def _whole_table_coefficients(x: np.ndarray) -> tuple[np.ndarray, float, float, float]:
    """Fleiss' table, kappa, AC1 and percent agreement from the whole table at once (the formulas as
    written, without blocks): the reference for the block-by-block computation."""
    x = x[:, ~np.isnan(x).all(axis=0)]
    cats = np.unique(x[~np.isnan(x)])
    table = np.zeros((x.shape[1], cats.size), dtype=np.int64)
    raters, unit = np.nonzero(~np.isnan(x))
    np.add.at(table, (unit, np.searchsorted(cats, x[raters, unit])), 1)
    t = table.astype(np.float64)
    r = t.sum(axis=1)
    multi = r >= 2
    pair_share = (t[multi] * (t[multi] - 1.0)).sum(axis=1) / (r[multi] * (r[multi] - 1.0))
    p_cat = t.sum(axis=0) / t.sum()
    kappa = (pair_share.mean() - (p_cat**2).sum()) / (1.0 - (p_cat**2).sum())
    pi = (t / r[:, None]).mean(axis=0)
    p_e = cats.size * (pi * (1.0 - pi)).sum() / (cats.size * (cats.size - 1))
    ac1 = (pair_share.mean() - p_e) / (1.0 - p_e)
    return table, float(kappa), float(ac1), float(pair_share.mean())


def test_count_coefficients_block_by_block_equal_the_whole_table() -> None:
    """Over several blocks of units (bounded memory), Fleiss' table, kappa, AC1 and percent agreement
    are the numbers of the whole table at once, to the last bit."""
    rng = np.random.default_rng(3)
    n_units = 3 * (1 << 16) + 17
    x = rng.integers(0, 7, size=(3, n_units)).astype(np.float64) / 2
    table, kappa, ac1, share = _whole_table_coefficients(x)
    assert np.array_equal(fleiss_table(x), table)
    assert fleiss_kappa(fleiss_table(x)) == kappa
    assert gwet_ac1(x) == ac1
    assert percent_agreement(x) == share
    x[rng.random(x.shape) < 0.3] = np.nan  # missing ratings: units with 0 to 3 ratings
    table, _, ac1, share = _whole_table_coefficients(x)
    assert np.array_equal(fleiss_table(x), table)
    assert gwet_ac1(x) == ac1
    assert percent_agreement(x) == share
