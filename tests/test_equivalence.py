"""Tests for analysis.equivalence and analysis.validation.

Published reference values used here:

* R ``datasets::sleep`` (Cushny & Peebles 1905; Student 1908), ``extra`` for group 1 and group 2.
* TOSTER ``t_TOST(extra ~ group, data = sleep, low_eqbound = -1, high_eqbound = 1)`` printout
  (TOSTER 0.4+, Welch): t/SE/df/p of both one-sided tests and the 90% CI.
* R ``t.test(extra ~ group, data = sleep)`` and ``t.test(..., paired = TRUE)`` (the example in R's
  ``?t.test`` / ``?sleep``).
* NCSS documentation, chapter "Two-Sample T-Test for Equivalence" (cited as "NCSS TOST 198-1" in
  TOSTER's ``tests/testthat/test-NCSS1.R``, Lakens/TOSTER on GitHub): yield data of two processes,
  equivalence limits -110/110, alpha 0.025, pooled and Welch. The data and numbers are taken from that
  TOSTER test, which pins TOSTER to the NCSS output; the NCSS PDF itself was not consulted.
* Newcombe (1998), Stat. Med. 17, 857-872, Table I: Wilson score intervals.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import ttost_ind, ttost_paired

from analysis.aggregates import pair_majority
from analysis.equivalence import (
    holm,
    intersection_union,
    preference_pairs,
    preference_rate,
    superiority_paired,
    tost_from_estimate,
    tost_ind,
    tost_paired,
    wilcoxon_tost_paired,
)
from analysis.equivalence.wilcoxon import wilcoxon_one_sided
from analysis.validation import validate_pairs

pytestmark = pytest.mark.nodb  # no database: the PostgreSQL pass leaves it out

SLEEP_1 = np.array([0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0])
SLEEP_2 = np.array([1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4])
YIELD_A = np.array([452, 874, 554, 447, 356, 754, 558, 574, 664, 682, 547, 435, 245], dtype=float)
YIELD_B = np.array(
    [546, 547, 774, 465, 459, 665, 467, 365, 589, 534, 456, 651, 654, 665, 546, 537], dtype=float
)


# --------------------------------------------------------------------------- published examples


def test_sleep_welch_matches_toster_printout_bounds_1() -> None:
    """TOSTER t_TOST(extra ~ group, data = sleep, low_eqbound = -1, high_eqbound = 1), Welch.

    Printed: TOST Lower t = -0.6830834, TOST Upper t = -3.0385435, SE 0.849091, df 17.77647,
    p = 0.748319811 and 0.003570669; Raw estimate -1.58 with 90% CI [-3.053381, -0.10661850].
    """
    res = tost_ind(SLEEP_1, SLEEP_2, low=-1, high=1)
    assert res.t_lower == pytest.approx(-0.6830834, abs=1e-7)
    assert res.t_upper == pytest.approx(-3.0385435, abs=1e-7)
    assert res.se == pytest.approx(0.849091, abs=1e-6)
    assert res.df == pytest.approx(17.77647, abs=1e-5)
    assert res.p_lower == pytest.approx(0.748319811, abs=1e-9)
    assert res.p_upper == pytest.approx(0.003570669, abs=1e-9)
    assert (res.ci_low, res.ci_high) == pytest.approx((-3.053381, -0.10661850), abs=1e-6)
    assert res.pvalue == res.p_lower and not res.equivalent


def test_sleep_welch_95ci_matches_r_t_test() -> None:
    """R: t.test(extra ~ group, data = sleep): t = -1.8608, df = 17.776, p = 0.07939,
    95% CI -3.3654832 0.2054832. With alpha = 0.025 the TOST interval is that 95% CI."""
    res = tost_ind(SLEEP_1, SLEEP_2, low=-1, high=1, alpha=0.025)
    assert (res.ci_low, res.ci_high) == pytest.approx((-3.3654832, 0.2054832), abs=1e-7)


def test_sleep_paired_matches_r_t_test() -> None:
    """R: t.test(extra ~ group, data = sleep, paired = TRUE): t = -4.0621, df = 9, p = 0.002833,
    95% CI -2.4598858 -0.7001142 (mean difference -1.58)."""
    res = tost_paired(SLEEP_1, SLEEP_2, low=0, high=1, alpha=0.025)
    assert res.estimate == pytest.approx(-1.58)
    assert res.df == 9
    assert res.t_lower == pytest.approx(-4.0621, abs=1e-4)  # bound 0: the ordinary t statistic
    assert 2 * min(res.p_lower, 1 - res.p_lower) == pytest.approx(0.002833, abs=1e-6)
    assert (res.ci_low, res.ci_high) == pytest.approx((-2.4598858, -0.7001142), abs=1e-7)


def test_sleep_bounds_half_paired_and_welch_by_hand() -> None:
    """The TOSTER "IntroTOSTt" vignette runs t_TOST on sleep with eqb = .5 (Welch and paired).

    Its printed numbers could not be retrieved (the rendered vignette was not searchable), so the
    expected values are computed here independently from the textbook formulas with scipy.stats.t:
    paired se = sd(d)/sqrt(n), df = n - 1; Welch se = sqrt(v1/n1 + v2/n2) with Satterthwaite df.
    """
    d = SLEEP_1 - SLEEP_2
    se = d.std(ddof=1) / math.sqrt(10)
    res = tost_paired(SLEEP_1, SLEEP_2, low=-0.5, high=0.5)
    assert res.t_lower == pytest.approx((d.mean() + 0.5) / se, rel=1e-12)
    assert res.p_lower == pytest.approx(stats.t.sf((d.mean() + 0.5) / se, 9), rel=1e-12)
    assert res.p_upper == pytest.approx(stats.t.cdf((d.mean() - 0.5) / se, 9), rel=1e-12)
    assert res.pvalue == pytest.approx(0.98924, abs=1e-5) and not res.equivalent

    a, b = SLEEP_1.var(ddof=1) / 10, SLEEP_2.var(ddof=1) / 10
    df = (a + b) ** 2 / (a**2 / 9 + b**2 / 9)
    welch = tost_ind(SLEEP_1, SLEEP_2, low=-0.5, high=0.5)
    assert welch.df == pytest.approx(df, rel=1e-12)
    assert welch.t_upper == pytest.approx((-1.58 - 0.5) / math.sqrt(a + b), rel=1e-12)
    assert welch.pvalue == pytest.approx(stats.t.sf((-1.58 + 0.5) / math.sqrt(a + b), df), rel=1e-12)
    assert welch.ci_low == pytest.approx(-1.58 - stats.t.ppf(0.95, df) * math.sqrt(a + b), rel=1e-12)


def test_ncss_yield_pooled() -> None:
    """NCSS "Two-Sample T-Test for Equivalence" yield example, pooled, limits -110/110, alpha 0.025:
    df 27, SE 51.114285, difference -8.1153846, 95% CI [-112.99323, 96.76246],
    p (lower) 0.02821, p (upper) 0.01436 (as reproduced in TOSTER's test-NCSS1.R)."""
    res = tost_ind(YIELD_A, YIELD_B, low=-110, high=110, alpha=0.025, equal_var=True)
    assert res.df == 27
    assert res.se == pytest.approx(51.114285, abs=1e-6)
    assert res.estimate == pytest.approx(-8.1153846, abs=1e-7)
    assert (round(res.ci_low, 5), round(res.ci_high, 5)) == (-112.99323, 96.76246)
    assert (round(res.p_lower, 5), round(res.p_upper, 5)) == (0.02821, 0.01436)
    assert res.method == "pooled t TOST" and not res.equivalent  # 0.02821 > 0.025


def test_ncss_yield_welch() -> None:
    """Same NCSS example, unequal variances: df 19.169, SE 53.618547, 95% CI [-120.27336, 104.04259],
    p 0.03628 and 0.02002."""
    res = tost_ind(YIELD_A, YIELD_B, low=-110, high=110, alpha=0.025)
    assert round(res.df, 3) == 19.169
    assert res.se == pytest.approx(53.618547, abs=1e-6)
    assert (round(res.ci_low, 5), round(res.ci_high, 5)) == (-120.27336, 104.04259)
    assert (round(res.p_lower, 5), round(res.p_upper, 5)) == (0.03628, 0.02002)


def test_wilson_matches_newcombe_table() -> None:
    """Newcombe (1998) Table I, Wilson score method: 81/263 -> 0.2553 to 0.3662."""
    res = preference_rate([1] * 81 + [-1] * (263 - 81))
    assert (round(res.ci_low, 4), round(res.ci_high, 4)) == (0.2553, 0.3662)


# --------------------------------------------------------------------------- against statsmodels


def _random_pair(seed: int, n: int = 37) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(0.1, 1.0, n)
    return x, 0.6 * x + rng.normal(0.0, 0.8, n)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_paired_matches_statsmodels(seed: int) -> None:
    x, y = _random_pair(seed)
    p, (t1, p1, df1), (t2, p2, _) = ttost_paired(x, y, -0.3, 0.4)  # statsmodels: (x1, x2, low, upp)
    res = tost_paired(x, y, low=-0.3, high=0.4)
    assert (res.t_lower, res.p_lower, res.t_upper, res.p_upper, res.pvalue, res.df) == pytest.approx(
        (t1, p1, t2, p2, p, df1), abs=1e-10
    )


@pytest.mark.parametrize(("equal_var", "usevar"), [(False, "unequal"), (True, "pooled")])
def test_ind_matches_statsmodels(equal_var: bool, usevar: str) -> None:
    rng = np.random.default_rng(5)
    x, y = rng.normal(0, 1, 25), rng.normal(0.2, 2, 40)
    # statsmodels' ttost_ind defaults to usevar="pooled"; ours defaults to Welch.
    p, (t1, p1, df1), (t2, p2, _) = ttost_ind(x, y, -0.5, 0.5, usevar=usevar)
    res = tost_ind(x, y, low=-0.5, high=0.5, equal_var=equal_var)
    assert (res.t_lower, res.p_lower, res.t_upper, res.p_upper, res.pvalue, res.df) == pytest.approx(
        (t1, p1, t2, p2, p, df1), abs=1e-10
    )


# --------------------------------------------------------------------------- properties

_values = st.lists(st.floats(-5, 5, allow_nan=False), min_size=3, max_size=30)
_bounds = st.tuples(st.floats(-2, 0.5), st.floats(0.01, 2)).map(lambda b: (b[0], b[0] + b[1]))


def _clear_of_bounds(res: object) -> bool:
    return min(abs(res.ci_low - res.low), abs(res.ci_high - res.high)) > 1e-9  # type: ignore[attr-defined]


@settings(max_examples=150, deadline=None)
@given(data=st.data(), bounds=_bounds)
def test_equivalent_iff_ci_inside_bounds(data: st.DataObject, bounds: tuple[float, float]) -> None:
    x = data.draw(_values)
    y = data.draw(st.lists(st.floats(-5, 5, allow_nan=False), min_size=len(x), max_size=len(x)))
    for res in (
        tost_paired(x, y, low=bounds[0], high=bounds[1]),
        tost_ind(x, y, low=bounds[0], high=bounds[1]),
        tost_ind(x, y, low=bounds[0], high=bounds[1], equal_var=True),
    ):
        if res.se == 0:  # no variation: undefined, never declared equivalent
            assert math.isnan(res.pvalue) and not res.equivalent
            continue
        if _clear_of_bounds(res):
            assert res.equivalent == (res.low < res.ci_low and res.ci_high < res.high)
        assert res.pvalue == max(res.p_lower, res.p_upper)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), bounds=_bounds)
def test_swapping_x_and_y_mirrors_the_result(data: st.DataObject, bounds: tuple[float, float]) -> None:
    x = data.draw(_values)
    y = data.draw(st.lists(st.floats(-5, 5, allow_nan=False), min_size=len(x), max_size=len(x)))
    low, high = bounds
    for fn in (tost_paired, tost_ind):
        a = fn(x, y, low=low, high=high)
        b = fn(y, x, low=-high, high=-low)
        if a.se == 0:
            assert math.isnan(a.pvalue) and math.isnan(b.pvalue)
            continue
        assert b.estimate == pytest.approx(-a.estimate, abs=1e-9)
        assert (b.ci_low, b.ci_high) == pytest.approx((-a.ci_high, -a.ci_low), abs=1e-9)
        assert (b.p_lower, b.p_upper) == pytest.approx((a.p_upper, a.p_lower), abs=1e-9)
        assert b.pvalue == pytest.approx(a.pvalue, abs=1e-9)


# --------------------------------------------------------------------------- input errors


def test_bounds_must_be_ordered() -> None:
    with pytest.raises(ValueError, match=re.escape("low must be smaller than high, got low=0.5, high=-0.5")):
        tost_paired([1, 2, 3], [1, 2, 3], low=0.5, high=-0.5)


def test_alpha_range() -> None:
    with pytest.raises(ValueError, match=re.escape("alpha must be in (0, 0.5), got 0.5")):
        tost_ind([1, 2, 3], [1, 2, 3], low=-1, high=1, alpha=0.5)


def test_paired_lengths_must_match() -> None:
    with pytest.raises(
        ValueError, match=re.escape("x and y must have the same length for a paired test, got 3 and 2")
    ):
        tost_paired([1, 2, 3], [1, 2], low=-1, high=1)


def test_too_few_values() -> None:
    with pytest.raises(ValueError, match=re.escape("y needs at least 2 non-missing values, got 1")):
        tost_ind([1, 2, 3], [1, np.nan], low=-1, high=1)


def test_dz_bounds_are_scaled_by_sd_of_differences() -> None:
    raw = tost_paired(SLEEP_1, SLEEP_2, low=-0.5, high=0.5, bounds="dz")
    sd = np.std(SLEEP_1 - SLEEP_2, ddof=1)
    assert (raw.low, raw.high) == pytest.approx((-0.5 * sd, 0.5 * sd))
    with pytest.raises(ValueError, match=re.escape("bounds must be 'raw' or 'dz', got 'd'")):
        tost_paired(SLEEP_1, SLEEP_2, low=-0.5, high=0.5, bounds="d")  # type: ignore[arg-type]


def test_zero_variance_gives_no_p_of_zero() -> None:
    """Identical differences: the t statistic is undefined; p is NaN and nothing is declared."""
    res = tost_paired([3, 4, 5], [3, 4, 5], low=-0.5, high=0.5)
    assert res.se == 0 and not res.equivalent and math.isnan(res.pvalue)
    assert "zero variance" in res.method


def test_tost_from_estimate_is_the_one_tost() -> None:
    """The paired TOST is tost_from_estimate on mean, sd / sqrt(n), n - 1 (one home of the arithmetic)."""
    d = SLEEP_1 - SLEEP_2
    direct = tost_from_estimate(
        float(d.mean()), float(d.std(ddof=1)) / math.sqrt(10), 9, -0.5, 0.5, 0.05, 10, "paired t TOST"
    )
    assert direct == tost_paired(SLEEP_1, SLEEP_2, low=-0.5, high=0.5)


def test_superiority_with_zero_variance_uses_the_rank_test() -> None:
    res = superiority_paired([2.0] * 12, [1.0] * 12)
    assert math.isnan(res.p_t)
    assert res.p_wilcoxon < 0.05 and res.superior


# --------------------------------------------------------------------------- Wilcoxon TOST


def test_wilcoxon_tost_is_two_shifted_signed_rank_tests() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.integers(1, 6, 60).astype(float), rng.integers(1, 6, 60).astype(float)
    res = wilcoxon_tost_paired(x, y, low=-0.7, high=0.6)
    d = x - y
    assert res.p_lower == pytest.approx(
        stats.wilcoxon(d + 0.7, alternative="greater", zero_method="pratt").pvalue
    )
    assert res.p_upper == pytest.approx(
        stats.wilcoxon(d - 0.6, alternative="less", zero_method="pratt").pvalue
    )
    assert res.pvalue == max(res.p_lower, res.p_upper)


@pytest.mark.parametrize("zero_method", ["wilcox", "pratt"])
@pytest.mark.parametrize("alternative", ["greater", "less"])
def test_small_samples_with_ties_give_scipys_sign_flip_p_values(alternative: str, zero_method: str) -> None:
    """Up to 13 differences with ties or zeros, scipy enumerates every sign flip (a permutation test,
    one Python call per flip); the signed-rank test counts the same distribution and must agree."""
    rng = np.random.default_rng(11)
    checked = 0
    for n in [*rng.integers(2, 11, size=24), 13]:
        d = rng.integers(-3, 4, size=int(n)) * rng.choice([0.5, 1.0, 1 / 3]) - rng.choice([0.0, 0.5])
        if not np.any(d != 0):
            continue
        ours = wilcoxon_one_sided(d, alternative, zero_method)  # type: ignore[arg-type]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            ref = stats.wilcoxon(d, alternative=alternative, zero_method=zero_method)  # type: ignore[call-overload]
        assert ours == (pytest.approx(ref.statistic, abs=1e-12), pytest.approx(ref.pvalue, abs=1e-12))
        checked += 1
    assert checked > 20


@pytest.mark.parametrize("n", [7, 40, 300])
def test_hodges_lehmann_equals_median_of_walsh_averages(n: int) -> None:
    rng = np.random.default_rng(n)
    x, y = rng.integers(1, 6, n).astype(float), rng.integers(1, 6, n).astype(float)
    d = x - y
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2)
    res = wilcoxon_tost_paired(x, y, low=-1, high=1)
    assert res.estimate == pytest.approx(np.median(walsh))
    assert res.ci_low <= res.estimate <= res.ci_high


def test_hodges_lehmann_exact_interval_matches_enumeration() -> None:
    """The exact 90% interval for untied data, as R's wilcox.test(conf.int = TRUE, conf.level = 0.9)
    defines it (Walsh averages at the qsignrank(0.05) order statistics); the signed-rank quantile is
    taken here from a brute-force enumeration of all 2^n sign vectors, independent of the code."""
    d = np.array([-1.3, 0.4, 1.1, -2.0, 0.7, -0.9, 2.6, 0.15, -0.45, 1.8])
    n = len(d)
    ranks = np.arange(1, n + 1)
    signs = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    tplus = np.sort(signs @ ranks)
    k = int(np.searchsorted(np.cumsum(np.bincount(tplus)) / 2**n, 0.05 - 1e-12))
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2)
    res = wilcoxon_tost_paired(d, np.zeros(n), low=-1, high=1)
    assert (res.ci_low, res.ci_high) == pytest.approx((walsh[k - 1], walsh[len(walsh) - k]))


# --------------------------------------------------------------------------- superiority


def test_superiority_matches_scipy_and_pingouin() -> None:
    rng = np.random.default_rng(11)
    x = rng.integers(0, 3, 45).astype(float)
    y = np.clip(x - rng.choice([-1, 0, 1, 1], 45), 0, 2).astype(float)
    res = superiority_paired(x, y)
    tt = stats.ttest_rel(x, y, alternative="greater")
    assert (res.t, res.p_t) == pytest.approx((tt.statistic, tt.pvalue))
    assert res.p_wilcoxon == pytest.approx(stats.wilcoxon(x - y, alternative="greater").pvalue)
    rbc = pg.wilcoxon(x, y, alternative="greater")["RBC"].iloc[0]
    assert res.rank_biserial == pytest.approx(rbc)
    assert res.rb_ci_low < res.rank_biserial < res.rb_ci_high
    d = x - y
    assert res.dz == pytest.approx(d.mean() / d.std(ddof=1))


def test_superiority_dz_interval_inverts_noncentral_t() -> None:
    """The noncentral-t interval: the observed t is the alpha / 1 - alpha quantile at the ends."""
    x, y = SLEEP_2, SLEEP_1
    res = superiority_paired(x, y)
    n = 10
    t_obs = res.dz * math.sqrt(n)
    assert res.dz_ci_method == "noncentral t"
    assert stats.nct.sf(t_obs, n - 1, res.dz_ci_low * math.sqrt(n)) == pytest.approx(0.05, abs=1e-8)
    assert stats.nct.cdf(t_obs, n - 1, res.dz_ci_high * math.sqrt(n)) == pytest.approx(0.05, abs=1e-8)
    # by hand: 1.58 -/+ qt(0.95, 9) * 0.3889587 (the paired SE from R's t.test output, 1.58 / 4.0621)
    assert (res.ci_low, res.ci_high) == pytest.approx((0.8670, 2.2930), abs=1e-3)


# --------------------------------------------------------------------------- preference


def test_preference_rate_counts_and_tests() -> None:
    prefs = [2] * 30 + [1] * 12 + [0] * 8 + [-1] * 10 + [-2] * 4
    res = preference_rate(prefs)
    assert (res.n, res.n_chosen, res.n_rejected, res.n_ties) == (64, 42, 14, 8)
    assert res.rate == 42 / 56
    assert res.p_two_sided == pytest.approx(stats.binomtest(42, 56).pvalue)
    assert res.p_greater == pytest.approx(stats.binomtest(42, 56, alternative="greater").pvalue)
    assert (res.ci_low, res.ci_high) == pytest.approx(proportion_confint(42, 56, method="wilson"))
    assert res.rate_ties_half == (42 + 4) / 64


def test_preference_rate_rejects_out_of_range() -> None:
    with pytest.raises(ValueError, match=re.escape("preferences must be integers in -2..2, got: [3.0]")):
        preference_rate([1, 3])


def test_preference_rate_all_ties() -> None:
    res = preference_rate([0, 0, 0])
    assert math.isnan(res.rate) and res.rate_ties_half == 0.5


def test_preference_pairs_is_a_t_test_of_per_pair_shares() -> None:
    pairs = ["a"] * 3 + ["b"] * 3 + ["c"] * 2 + ["d"] * 3
    prefs = [2, 1, -1, 0, 1, 1, -1, -2, 1, 1, 0]
    res = preference_pairs(pairs, prefs)
    shares = np.array([2 / 3, (0.5 + 2) / 3, 0.0, 2.5 / 3])
    ref = stats.ttest_1samp(shares, 0.5, alternative="greater")
    assert res.rate == pytest.approx(shares.mean())
    assert res.p_greater == pytest.approx(ref.pvalue)
    # the t interval drawn on the logit scale (delta method): inside 0..1
    m, se = shares.mean(), shares.std(ddof=1) / 2
    half = stats.t.ppf(0.95, 3) * se / (m * (1 - m))
    logit = np.log(m / (1 - m))
    expected = 1 / (1 + np.exp(-(logit - half))), 1 / (1 + np.exp(-(logit + half)))
    assert (res.ci_low, res.ci_high) == pytest.approx(expected)
    assert (res.n_pairs, res.n_chosen, res.n_rejected, res.n_ties) == (4, 6, 3, 2)


def test_preference_pairs_counts_a_pair_once() -> None:
    """Three judgments of one pair are one piece of evidence: the pooled binomial test over judgments
    is far more confident than the pair-level test on the same data."""
    pairs = [p for p in "abcdefgh" for _ in range(3)]
    prefs = [1, 1, 1] * 5 + [-1, -1, -1] * 3
    pooled = preference_rate(prefs)
    by_pair = preference_pairs(pairs, prefs)
    assert by_pair.p_greater > pooled.p_greater
    assert by_pair.p_greater == pytest.approx(
        stats.ttest_1samp([1.0] * 5 + [0.0] * 3, 0.5, alternative="greater").pvalue
    )


def test_preference_pairs_all_unanimous_uses_the_sign_test() -> None:
    res = preference_pairs(list("abcdef"), [1] * 6)
    assert res.p_greater == pytest.approx(0.5**6) and "sign test" in res.method


def test_pair_majority() -> None:
    j = pd.DataFrame(
        {
            "pair_id": ["a", "a", "a", "b", "b", "b", "c", "c"],
            "annotator": ["x", "y", "z", "x", "y", "z", "x", "y"],
            "preference": [-1, -2, 1, 0, 0, 2, 1, -1],
        }
    )
    out = pair_majority(j).set_index("pair_id")
    assert out["majority"].to_dict() == {"a": "rejected", "b": "tie", "c": "none"}
    assert out.loc["a", ["n_votes", "n_chosen", "n_rejected", "n_tie"]].tolist() == [3, 1, 2, 0]


# --------------------------------------------------------------------------- combining


def test_intersection_union_takes_max_p_and_requires_all() -> None:
    a = tost_paired(SLEEP_1, SLEEP_1 + 0.01, low=-1, high=1)
    b = tost_paired(SLEEP_1, SLEEP_2, low=-1, high=1)
    both = intersection_union({"a": a, "b": b})
    assert both.pvalue == max(a.pvalue, b.pvalue)
    assert a.equivalent and not both.equivalent and both.n_equivalent == 1
    assert intersection_union([a]).equivalent
    with pytest.raises(ValueError, match=re.escape("intersection_union needs at least one result")):
        intersection_union([])


def test_holm_matches_statsmodels_definition() -> None:
    out = holm([0.01, 0.04, 0.03])
    assert out["p_adjusted"].tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert out["reject"].tolist() == [True, False, False]


# --------------------------------------------------------------------------- validate_pairs


def _simulated_frame(n_pairs: int, seed: int, shift: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_pairs):
        quality = rng.normal(4, 0.5)
        for a in ("a1", "a2", "a3"):
            pref = int(rng.choice([-1, 0, 1, 2], p=[0.15, 0.15, 0.4, 0.3]))
            for resp in ("chosen", "rejected"):
                for item in ("correctness", "relevance", "helpfulness"):
                    v = quality + (shift if resp == "chosen" else 0) + rng.normal(0, 0.6)
                    rows.append((f"p{i}", a, resp, item, float(np.clip(np.rint(v), 1, 5)), pref))
                for k in range(2):
                    rub = rng.choice([0, 1, 2], p=[0.1, 0.3, 0.6] if resp == "chosen" else [0.5, 0.3, 0.2])
                    rows.append((f"p{i}", a, resp, f"rubric:{k}", float(rub), pref))
    df = pd.DataFrame(rows, columns=["pair_id", "annotator", "response", "item", "value", "preference"])
    return df.assign(confidence=2, time_s=30.0)


def test_wilcoxon_tost_counts_differences_on_the_bound() -> None:
    """Twenty differences exactly on the bound and six zeros estimate the bound itself; the
    old test (differences at the bound dropped) called that equivalent."""
    res = wilcoxon_tost_paired(np.array([0.5] * 20 + [0.0] * 6), np.zeros(26), low=-0.5, high=0.5)
    assert res.estimate == 0.5
    assert not res.equivalent
    assert res.ci_high >= 0.5


def test_validate_pairs_flat_tables() -> None:
    res = validate_pairs(_simulated_frame(80, 0))
    eq = res.equivalence
    assert eq["dimension"].tolist() == ["correctness", "relevance", "helpfulness"]
    for col in ("estimate", "ci_low", "ci_high", "low", "high", "p_value", "equivalent"):
        assert col in eq.columns
    assert eq["equivalent"].all() and res.iut_panel.equivalent
    assert res.iut_panel.pvalue == eq["p_value"].max()
    assert res.iut.pvalue == res.crossed["pvalue"].max()
    assert bool(res.superiority.loc[0, "superior"]) and res.superiority.loc[0, "p_holm"] < 0.05
    assert res.preference.loc[0, "rate"] > 0.5
    assert len(res.crossed) == 3 and res.crossed["equivalent"].all() and res.iut.equivalent
    assert set(res.holm["test"]) == {"rubric", "preference"}


def test_validate_pairs_detects_a_real_difference() -> None:
    res = validate_pairs(_simulated_frame(60, 1, shift=1.0))
    assert not res.equivalence["equivalent"].any() and not res.iut.equivalent
    assert not res.crossed["equivalent"].any() and not res.iut_panel.equivalent


# --------------------------------------------------------------------------- calibration


@pytest.mark.slow
def test_type_one_error_at_the_margin_is_at_most_alpha() -> None:
    """With the true difference exactly at the upper margin, TOST declares equivalence in at most
    alpha of the samples (up to Monte Carlo error: 4000 replicates, +3 standard errors)."""
    rng = np.random.default_rng(2024)
    reps, n, alpha, margin = 4000, 30, 0.05, 0.5
    hits = {"paired": 0, "welch": 0}
    for _ in range(reps):
        d = rng.normal(margin, 1.0, n)
        hits["paired"] += tost_paired(d, np.zeros(n), low=-margin, high=margin).equivalent
        x, y = rng.normal(margin, 1.0, n), rng.normal(0.0, 1.5, n)
        hits["welch"] += tost_ind(x, y, low=-margin, high=margin).equivalent
    limit = alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)
    for name, count in hits.items():
        assert count / reps <= limit, name
