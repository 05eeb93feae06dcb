"""The profile owner as a rater: owner labels from files, the owners' section and its verdict."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from analysis.aggregates import judgments, pair_majority
from analysis.betting import BET_TRUNCATION, betting_p, betting_ratio
from analysis.kappa_box import kappa_box
from analysis.label_files import read_labels
from analysis.owner_simulation import with_owners
from analysis.owners import (
    MIN_KAPPA_OWNERS,
    _agreement_row,
    _chance,
    _score_kappa,
    alt_test_p,
    jackknife_kappa,
    jackknife_ratio,
    share_interval,
    split_owners,
)
from analysis.render import to_html, to_markdown, to_terminal
from analysis.render.as_json import REPORT_SCHEMA, json_text
from analysis.render.owner_text import KAPPA_METHOD
from analysis.report import ReportSettings, build_report
from analysis.simulation import SimDesign, SimEffects, simulate_frame

pytestmark = pytest.mark.nodb  # statistics and static checks: no database

SETTINGS = ReportSettings(n_boot=50)


def _study(
    seed: int = 1, n_owners: int = 8, n_pairs: int = 40, **owners: float
) -> tuple[pd.DataFrame, pd.DataFrame]:
    frame = simulate_frame(
        np.random.default_rng(seed),
        SimDesign(n_pairs=n_pairs, pool=6, positive_controls=6),
        SimEffects(noise=0.4),
    )
    return frame, with_owners(np.random.default_rng(seed + 1), frame, n_owners=n_owners, **owners)


def test_without_owners_the_json_report_is_unchanged() -> None:
    frame, _ = _study()
    plain = json_text(build_report(frame, study="s", settings=SETTINGS))
    marked = json_text(build_report(frame.assign(rater_kind=""), study="s", settings=SETTINGS))
    assert marked == plain
    assert "owner" not in plain


def test_owner_rows_never_enter_the_third_party_analysis() -> None:
    frame, owned = _study()
    plain = json.loads(json_text(build_report(frame, study="s", settings=SETTINGS)))
    with_owner = json.loads(json_text(build_report(owned, study="s", settings=SETTINGS)))
    assert with_owner["equivalence_crossed"] == plain["equivalence_crossed"]
    assert with_owner["summary"]["n_annotators"] == plain["summary"]["n_annotators"]
    assert with_owner["owners"]["endorsement"][0]["n_owners"] == 8
    assert [v["key"] for v in with_owner["verdicts"]][-1] == "owner_endorsement"
    jsonschema.validate(with_owner, REPORT_SCHEMA)


def test_owners_who_prefer_rejected_fail_the_verdict() -> None:
    """20 owners with 6 pairs each (with 8 owners, or 2 pairs each, the distribution-free side of the
    interval does not exclude one half here)."""
    _, owned = _study(n_owners=20, n_pairs=120, follow_panel=0.0, endorse=0.1)
    report = build_report(owned, study="s", settings=SETTINGS)
    assert report.verdict("owner_endorsement").status == "fail"
    assert report.overall == "FAIL"


def test_owners_who_follow_the_panel_agree_with_its_majority() -> None:
    frame, owned = _study(follow_panel=1.0)
    agreement = build_report(owned, study="s", settings=SETTINGS).owners.agreement.set_index("rater")
    majority = pair_majority(judgments(frame[frame["control"] == ""]))["majority"]
    assert agreement.loc["panel majority", "accuracy"] == pytest.approx((majority != "none").mean())
    assert (agreement.drop(index="panel majority")["accuracy"] < 1.0).any()


def test_jackknife_ratio_matches_the_cluster_robust_variance_of_a_ratio() -> None:
    num, den = np.array([3.0, 2, 4, 1, 5]), np.array([4.0, 2, 5, 2, 6])
    est, _, _, se = jackknife_ratio(num, den)
    ratio = num.sum() / den.sum()
    linear = np.sqrt((len(num) / (len(num) - 1)) * ((num - ratio * den) ** 2).sum()) / den.sum()
    assert est == pytest.approx(ratio)
    assert se == pytest.approx(linear, rel=0.25)


def _hall_root(a: float, target: float) -> float:
    """T with Hall's (1992) G(T) = T + a + 2aT^2 + 4/3 a^2 T^3 equal to `target`, solved numerically."""
    return optimize.brentq(lambda t: t + a + 2 * a * t**2 + 4 / 3 * a**2 * t**3 - target, -50, 50)


def _reference_share(num: np.ndarray, den: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """A share's interval rebuilt from its definition: the leave-one-owner-out ratios, Korn-Graubard's
    Clopper-Pearson (statsmodels' "beta") at m = min(n, p(1-p)/se^2 (t_{n-1}/t_{G-1})^2), each bound
    moved outward (never inward) by Hall's correction for Efron's acceleration minus a binomial share's
    at m trials."""
    owners, n = len(num), den.sum()
    est = num.sum() / n
    loo = np.array([(num.sum() - num[g]) / (n - den[g]) for g in range(owners)])
    u = loo.mean() - loo
    se = float(np.sqrt((u**2).sum()))
    q = stats.t.ppf(1 - alpha, owners - 1)
    m = min(n, est * (1 - est) / se**2 * (stats.t.ppf(1 - alpha, n - 1) / q) ** 2)
    low, high = proportion_confint(est * m, m, alpha=2 * alpha, method="beta")
    a = (u**3).sum() / (6 * (u**2).sum() ** 1.5) - (1 - 2 * est) / (6 * np.sqrt(m * est * (1 - est)))
    moved_low, moved_high = low - se * (_hall_root(a, q) - q), high - se * (_hall_root(a, -q) + q)
    return max(min(low, moved_low), 0.0), min(max(high, moved_high), 1.0), m


def test_a_share_interval_is_korn_graubard_with_halls_correction_of_the_excess_skew() -> None:
    """The bounds are the reference's (12 owners with unequal pair counts, at two levels; 20 owners with
    left-skewed shares, where they lie below Korn-Graubard's alone)."""
    num = np.array([9.0, 1, 5, 7.5, 2, 10, 0, 6, 3, 8, 4.5, 1])
    den = np.array([10.0, 4, 6, 8, 5, 10, 3, 7, 6, 9, 5, 1])
    for alpha in (0.05, 0.025):
        est, low, high, se = jackknife_ratio(num, den, alpha=alpha)
        ref_low, ref_high, m = _reference_share(num, den, alpha)
        assert m < den.sum()  # a design effect above 1
        assert (low, high) == pytest.approx((ref_low, ref_high), abs=1e-9)
    # 20 owners x 20 pairs whose shares are left-skewed beyond a binomial's (drawn from Beta(2.4, 0.6)):
    # the lower bound moves down, toward the long left tail; the upper one stays Korn-Graubard's.
    skewed = np.array([17.0, 19, 14, 20, 15, 17, 15, 7, 20, 16, 20, 20, 4, 10, 18, 20, 18, 20, 19, 17])
    est, low, high, se = jackknife_ratio(skewed, np.full(20, 20.0), alpha=0.05)
    ref_low, ref_high, m = _reference_share(skewed, np.full(20, 20.0), 0.05)
    kg_low, kg_high = proportion_confint(est * m, m, alpha=0.1, method="beta")
    assert (low, high) == pytest.approx((ref_low, ref_high), abs=1e-9)
    assert low < kg_low - 0.005 and high == pytest.approx(kg_high, abs=1e-12)


def test_a_share_interval_contains_korn_graubards() -> None:
    """The correction only widens: on skewed and unskewed draws each bound is at or beyond Korn-Graubard's
    (recomputed with statsmodels), and at least one draw moves a bound by more than 0.005."""
    rng = np.random.default_rng(13)
    moved = 0.0
    for shape in ((4.9, 1.2), (2.4, 0.6), (1.2, 4.9), (20.0, 20.0)):
        for owners in (5, 12, 40):
            den = rng.integers(1, 21, owners).astype(float)
            num = rng.binomial(den.astype(int), rng.beta(*shape, owners)).astype(float)
            est, low, high, se = jackknife_ratio(num, den)
            if not 0 < est < 1:
                continue
            _, _, m = _reference_share(num, den, 0.05)
            kg_low, kg_high = proportion_confint(est * m, m, alpha=0.1, method="beta")
            assert low <= kg_low + 1e-12 and high >= kg_high - 1e-12
            moved = max(moved, kg_low - low, high - kg_high)
    assert moved > 0.005


def test_a_share_of_one_pair_per_owner_keeps_clopper_pearson() -> None:
    """With one pair per owner the share is binomial and Clopper-Pearson's skewness is the share's own:
    the correction moves the bounds by less than 0.005 (a plain skewness correction moves them further)."""
    num = np.array([1.0] * 10 + [0.0] * 2 + [0.5])
    est, low, high, se = jackknife_ratio(num, np.ones_like(num), alpha=0.05)
    _, _, m = _reference_share(num, np.ones_like(num), 0.05)
    kg_low, kg_high = proportion_confint(est * m, m, alpha=0.1, method="beta")
    assert abs(low - kg_low) < 0.005 and abs(high - kg_high) < 0.005


def test_a_share_interval_mirrors_when_chosen_and_rejected_swap() -> None:
    rng = np.random.default_rng(11)
    for _ in range(20):
        den = rng.integers(1, 21, 15).astype(float)
        num = rng.binomial(den.astype(int), rng.beta(4.9, 1.2, 15)).astype(float)
        _, low, high, _ = jackknife_ratio(num, den)
        _, mirror_low, mirror_high, _ = jackknife_ratio(den - num, den)
        assert (low, high) == pytest.approx((1 - mirror_high, 1 - mirror_low), abs=1e-12)


def test_a_share_interval_widens_as_its_level_rises() -> None:
    rng = np.random.default_rng(12)
    for owners in (5, 10, 40):
        den = rng.integers(1, 21, owners).astype(float)
        num = rng.binomial(den.astype(int), rng.beta(2.4, 0.6, owners)).astype(float)
        bounds = [jackknife_ratio(num, den, alpha=alpha)[1:3] for alpha in (0.1, 0.05, 0.025, 0.01)]
        for (low, high), (wider_low, wider_high) in zip(bounds, bounds[1:], strict=False):
            assert wider_low <= low <= num.sum() / den.sum() <= high <= wider_high


def test_a_share_that_every_owner_gives_alike_still_gets_an_interval() -> None:
    """All endorse: the upper bound is 1 and the lower one Clopper-Pearson's at the pairs times
    (t_{n-1} / t_{G-1})^2 (the effective size is every pair); none endorse: the mirror image; one owner:
    no interval."""
    den = np.array([3.0, 1, 4, 2, 5])
    est, low, high, _ = jackknife_ratio(den, den)
    m = den.sum() * (stats.t.ppf(0.95, den.sum() - 1) / stats.t.ppf(0.95, len(den) - 1)) ** 2
    exact_low = proportion_confint(m, m, alpha=0.1, method="beta")[0]
    assert est == 1 and high == 1 and low == pytest.approx(exact_low, abs=1e-12)
    est, low, high, _ = jackknife_ratio(np.zeros_like(den), den)
    assert est == 0 and low == 0 and high == pytest.approx(1 - exact_low, abs=1e-12)
    est, low, high, se = jackknife_ratio([2.0], [3.0])
    assert np.isnan(low) and np.isnan(high) and np.isnan(se)


#: Known answers of the betting bounds: Waudby-Smith and Ramdas's reference code (confseq 0.0.11's
#: ``betting_mart`` with ``lambda_predmix_eb(x, alpha, fixed_n=G)`` for both processes,
#: ``trunc_scale=0.9`` (BET_TRUNCATION), ``m_trunc=True``) on y = (num - r den) / max(den) + r over the
#: grid r = 0, 0.001, ..., 1: the first and the last r whose capital stays below 1 / alpha.
BETTING_REFERENCE = [
    ([3, 2, 4, 1, 5, 0, 6, 2, 7, 3, 4, 1], [4, 2, 5, 2, 6, 1, 8, 3, 7, 4, 5, 2], 0.05, 0.458, 0.969),
    (
        [0.5, 9, 1, 3.5, 10, 2, 6, 0, 8, 4, 7, 5, 1.5, 9, 3],
        [1, 10, 2, 4, 12, 3, 7, 1, 9, 6, 8, 5, 2, 10, 3],
        0.025,
        0.485,
        1.0,
    ),
    ([1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1], [1] * 20, 0.05, 0.539, 1.0),
]


@pytest.mark.parametrize(("num", "den", "alpha", "grid_low", "grid_high"), BETTING_REFERENCE)
def test_betting_bounds_match_the_reference_code(
    num: list[float], den: list[float], alpha: float, grid_low: float, grid_high: float
) -> None:
    """The bisection's bound lies between the reference grid's last rejected and first accepted r."""
    low, high = betting_ratio(num, den, alpha=alpha)
    assert grid_low - 0.001 <= low <= grid_low
    assert grid_high <= high <= grid_high + 0.001


@pytest.mark.parametrize("owners", [5, 8, 10])
def test_betting_bound_of_unanimous_owners_has_its_closed_form(owners: int) -> None:
    """Every owner endorses every pair: each factor is 1 + c (1 - r) / r (the bet truncated at c / r,
    c = BET_TRUNCATION), so the lower bound solves (1 + c (1 - r) / r)^G = 1 / alpha; none endorse: the
    mirror image."""
    den = np.full(owners, 3.0)
    c = BET_TRUNCATION
    exact = c / (0.05 ** (-1 / owners) - 1 + c)
    low, high = betting_ratio(den, den, alpha=0.05)
    assert low == pytest.approx(exact, abs=1e-8) and high == 1
    low, high = betting_ratio(np.zeros_like(den), den, alpha=0.05)
    assert low == 0 and high == pytest.approx(1 - exact, abs=1e-8)


def test_betting_bounds_mirror_and_ignore_absent_owners() -> None:
    rng = np.random.default_rng(13)
    den = rng.integers(1, 21, (30, 12)).astype(float)
    num = rng.binomial(den.astype(int), rng.beta(1.7, 0.2, (30, 12))).astype(float)
    low, high = betting_ratio(num, den)
    mirror_low, mirror_high = betting_ratio(den - num, den)
    np.testing.assert_allclose(low, 1 - mirror_high, atol=1e-8)
    np.testing.assert_allclose(high, 1 - mirror_low, atol=1e-8)
    with_absent = betting_ratio(np.insert(num, 3, 0.0, axis=1), np.insert(den, 3, 0.0, axis=1))
    np.testing.assert_allclose(with_absent, (low, high), atol=1e-12)
    one = betting_ratio(num[7], den[7])
    assert (float(one[0]), float(one[1])) == (low[7], high[7])
    assert (betting_ratio([0.0, 0.0], [0.0, 0.0])) == (0.0, 1.0)


def test_the_share_interval_is_the_union_of_the_jackknife_and_betting_intervals() -> None:
    """Each bound is the further of the two; on J-shaped owners the betting side is the lower bound in
    some draws and the jackknife's in others (so neither interval alone is the rule)."""
    rng = np.random.default_rng(14)
    den = rng.integers(1, 21, (200, 10)).astype(float)
    num = rng.binomial(den.astype(int), rng.beta(1.35, 0.15, (200, 10))).astype(float)
    est, low, high, se = share_interval(num, den)
    j_est, j_low, j_high, j_se = jackknife_ratio(num, den)
    b_low, b_high = betting_ratio(num, den)
    np.testing.assert_array_equal(est, j_est)
    np.testing.assert_array_equal(se, j_se)
    np.testing.assert_array_equal(low, np.minimum(j_low, b_low))
    np.testing.assert_array_equal(high, np.maximum(j_high, b_high))
    assert (b_low < j_low).any() and (b_low > j_low).any()
    assert np.isnan(share_interval([2.0], [3.0])[1])


def test_the_verdict_uses_the_share_interval() -> None:
    _, owned = _study(follow_panel=0.0, endorse=0.1)
    report = build_report(owned, study="s", settings=SETTINGS)
    row = report.owners.endorsement.iloc[0]
    owner = owned[owned["rater_kind"] == "owner"]
    per_owner = owner.assign(
        score=np.select([owner["preference"] > 0, owner["preference"] < 0], [1.0, 0.0], 0.5)
    )
    grouped = per_owner.groupby("annotator")["score"]
    _, low, high, _ = share_interval(grouped.sum().to_numpy(), grouped.size().to_numpy())
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((float(low), float(high)), abs=1e-12)
    assert "betting interval" in report.verdict("owner_endorsement").test


def test_kappa_jackknife_part_is_halls_skewness_corrected_t() -> None:
    """The jackknife part of kappa's interval, recomputed from sklearn's kappa of each leave-one-owner-out
    sample: T = (est - kappa) / se referred to +- t through Hall's (1992) G(T) = T + a + 2aT^2 + 4/3 a^2
    T^3 (a: Efron's jackknife acceleration), solved numerically; the interval is its union with the
    score-type interval and kappa_box's. A symmetric est +- t*se (the interval before) differs here by
    more than 0.005."""
    rng = np.random.default_rng(3)
    owners = 14
    sizes = rng.integers(1, 12, owners)
    truth = [rng.choice(3, n, p=[0.7, 0.1, 0.2]) for n in sizes]
    rater = [
        np.where(rng.random(n) < 0.75, t, (t + rng.integers(1, 3, n)) % 3)
        for n, t in zip(sizes, truth, strict=True)
    ]
    confusion = np.zeros((owners, 3, 3))
    for g in range(owners):
        np.add.at(confusion[g], (rater[g], truth[g]), 1.0)
    est, low, high, se = jackknife_kappa(confusion)
    everyone = cohen_kappa_score(np.concatenate(rater), np.concatenate(truth))
    loo = np.array(
        [
            cohen_kappa_score(
                np.concatenate(rater[:g] + rater[g + 1 :]), np.concatenate(truth[:g] + truth[g + 1 :])
            )
            for g in range(owners)
        ]
    )
    u = loo.mean() - loo
    assert est == pytest.approx(everyone)
    assert se == pytest.approx(np.sqrt((u**2).sum()))
    a = (u**3).sum() / (6 * (u**2).sum() ** 1.5)
    q = stats.t.ppf(0.95, owners - 1)

    def solve(target: float) -> float:
        return optimize.brentq(lambda t: t + a + 2 * a * t**2 + 4 / 3 * a**2 * t**3 - target, -20, 20)

    hall_low, hall_high = est - se * solve(q), est - se * solve(-q)
    score_low, score_high = _score_kappa(est, se, _chance(confusion.sum(0)), q)
    box_low, box_high = kappa_box(confusion)
    assert low == pytest.approx(min(hall_low, score_low, box_low), abs=1e-9)
    assert high == pytest.approx(max(hall_high, score_high, box_high), abs=1e-9)
    assert max(abs(low - (est - q * se)), abs(high - (est + q * se))) > 0.005


def test_kappa_of_perfect_agreement_is_one() -> None:
    confusion = np.zeros((MIN_KAPPA_OWNERS, 3, 3))
    confusion[:, 0, 0], confusion[:, 2, 2] = 3, 2
    est, low, _, _ = jackknife_kappa(confusion)
    assert est == pytest.approx(1.0) and low == pytest.approx(1.0)


def test_kappa_has_no_interval_below_its_owners_or_pairs() -> None:
    """Below MIN_KAPPA_OWNERS owners or MIN_KAPPA_PAIRS pairs the jackknife interval does not hold its
    level: the estimate, but no interval."""
    rng = np.random.default_rng(0)
    few_owners = rng.integers(0, 4, (MIN_KAPPA_OWNERS - 1, 3, 3)).astype(float) + np.eye(3) * 5
    few_pairs = np.zeros((MIN_KAPPA_OWNERS, 3, 3))
    few_pairs[:, 0, 0], few_pairs[:3, 2, 2], few_pairs[3:6, 0, 2] = 2, 1, 1  # 26 pairs
    enough = np.tile(few_pairs, (2, 1, 1))  # 20 owners, 52 pairs
    for confusion, interval in ((few_owners, False), (few_pairs, False), (enough, True)):
        est, low, high, se = jackknife_kappa(confusion)
        assert np.isfinite(est)
        assert bool(np.isfinite(low) and np.isfinite(high) and np.isfinite(se)) is interval


def test_owner_labels_are_read_from_every_file_type(tmp_path: Path) -> None:
    _, owned = _study()
    expected = int((owned["rater_kind"] == "owner").sum())
    for name, write in (
        ("labels.csv", lambda p: owned.to_csv(p, index=False)),
        ("labels.jsonl", lambda p: owned.to_json(p, orient="records", lines=True)),
        ("labels.parquet", lambda p: owned.to_parquet(p, index=False)),
    ):
        path = tmp_path / name
        write(path)
        assert len(split_owners(read_labels(path))[1]) == expected


def test_a_bad_rater_kind_names_the_column_and_the_row(tmp_path: Path) -> None:
    _, owned = _study()
    owned.loc[4, "rater_kind"] = "boss"
    path = tmp_path / "labels.csv"
    owned.to_csv(path, index=False)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "column 'rater_kind' must be empty, 'annotator' or 'owner', got: 'boss' (first at row 6)"
        ),
    ):
        read_labels(path)


def test_owner_text_renders_as_text_everywhere() -> None:
    _, owned = _study()
    hostile = "<script>alert(1)</script>"
    owned.loc[owned["rater_kind"] == "owner", "annotator"] = hostile
    report = build_report(owned, study="s", settings=SETTINGS)
    html = to_html(report)
    assert hostile not in html
    assert "Owners: do the profiles" in html
    assert "Owners: how well third parties judge" in to_markdown(report)
    assert "Owners (" in to_terminal(report)


def _predictions(owned: pd.DataFrame, *, follow_owner: bool) -> pd.DataFrame:
    """One model per pair: the owner's own direction, or always the opposite of it."""
    own = owned[owned["rater_kind"] == "owner"].drop_duplicates("pair_id")
    sign = own["preference"].to_numpy() * (1 if follow_owner else -1)
    choice = np.select([sign > 0, sign < 0], ["chosen", "rejected"], "tie")
    return pd.DataFrame({"pair_id": own["pair_id"].to_numpy(), "model": "m", "choice": choice})


@pytest.mark.parametrize("follow_owner", [True, False])
def test_a_model_replaces_annotators_only_when_it_judges_for_the_owner(follow_owner: bool) -> None:
    """20 owners x 6 pairs: with 10 owners x 6 pairs even a model that always takes the owner's side is
    not shown to beat the annotators since the test's p-value is at least the distribution-free betting
    test's (the price measured in benchmarks/bench_owners.py --alt-test)."""
    frame = simulate_frame(
        np.random.default_rng(5), SimDesign(n_pairs=120, per_pair=3), SimEffects(noise=0.4)
    )
    owned = with_owners(np.random.default_rng(6), frame, n_owners=20, follow_panel=0.5)
    predictions = _predictions(owned, follow_owner=follow_owner)
    section = build_report(owned, study="s", settings=SETTINGS, predictions=predictions).owners
    row = section.alt_test.iloc[0]
    assert row["n_tested"] == 3
    assert bool(row["can_replace"]) is follow_owner
    models = section.models.iloc[0]
    assert (models["accuracy_owner"] == 1.0) if follow_owner else (models["accuracy_owner"] < 0.2)


def test_every_owner_share_uses_the_share_interval_and_the_note_names_kappas_method() -> None:
    """The accuracies and the rubric's endorsement carry the same union as the endorsement (the jackknife
    alone missed where annotators agree far less with a few owners); the agreement table's note says what
    kappa's interval is and for which population."""
    rng = np.random.default_rng(21)
    owner = np.repeat(np.arange(12), 6)
    owner_dir = rng.choice(3, owner.size, p=[0.7, 0.1, 0.2])
    rater = np.where(rng.random(owner.size) < 0.7, owner_dir, rng.choice(3, owner.size))
    names = np.array([f"owner{g:02d}" for g in owner])  # name order = number order (betting is ordered)
    row = _agreement_row("a", rater, owner_dir, names, 0.05)
    hits = np.bincount(owner, rater == owner_dir)
    _, low, high, _ = share_interval(hits, np.bincount(owner))
    assert (row["accuracy_ci_low"], row["accuracy_ci_high"]) == pytest.approx((float(low), float(high)))
    assert float(low) < float(jackknife_ratio(hits, np.bincount(owner))[1])  # the betting side binds here
    _, owned = _study(n_owners=12)
    report = build_report(owned, study="s", settings=SETTINGS)
    markdown = to_markdown(report)
    assert KAPPA_METHOD.split(" (")[0] in markdown and "population: the owners of these profiles" in markdown
    assert "Fieller" in markdown and "betting box" in markdown


def test_the_betting_p_value_crosses_alpha_at_the_betting_bound() -> None:
    """betting_p is the p-value of the test that betting_ratio inverts: at alpha it rejects every ratio
    above the upper bound and none below it."""
    rng = np.random.default_rng(31)
    den = rng.integers(1, 21, 15).astype(float)
    num = rng.binomial(den.astype(int), 0.3).astype(float)
    _, high = betting_ratio(num, den, alpha=0.05)
    assert float(betting_p(num, den, float(high) + 1e-3, alpha=0.05)) <= 0.05
    assert float(betting_p(num, den, float(high) - 1e-3, alpha=0.05)) > 0.05
    assert float(betting_p(num, den, 0.0)) == 1.0


def test_the_alternative_annotator_p_value_is_the_larger_of_t_and_betting() -> None:
    """alt_test_p = max(the t test's p with the jackknife SE, betting_p of (d + 1) / 2 against
    (epsilon + 1) / 2); with a few owners whom the annotator judges far better than the model, the t
    test alone says "beaten" and the betting side keeps the p-value above alpha."""
    d = np.array([-4.0, -3, -4, -2, -3, -4, -3, 10, -4, -3, -2, -4])  # one owner: annotator far better
    n = np.full(12, 10.0)
    est, _, _, se = jackknife_ratio(d, n)
    t_p = stats.t.cdf((est - 0.1) / se, 11)
    bet_p = betting_p((d + n) / 2, n, 0.55)
    assert float(alt_test_p(d, n, 0.1)) == pytest.approx(max(t_p, float(bet_p)))
    assert t_p < 0.05 < float(alt_test_p(d, n, 0.1))
    assert np.isnan(alt_test_p([1.0], [3.0], 0.1))
