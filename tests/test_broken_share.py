"""The bound on the share of pairs beyond the margin, for any distribution of pair gaps: its estimate,
its false PASS where the normal-model bound failed, its PASS of a clean study (reduced Monte Carlo with
a fixed seed; the full table is benchmarks/bench_broken_share_any.py)."""

import numpy as np
import pandas as pd
import pytest

from analysis.broken_share import broken_share, mean_square, planned_below, share_bounds

pytestmark = pytest.mark.nodb  # no database: the PostgreSQL pass leaves it out

MARGIN = 0.5


def _studies(
    seed: int,
    studies: int,
    n: int,
    gaps: np.ndarray,
    *,
    per_pair: int = 3,
    pool: int = 20,
    noise: float = 0.9,
    annotator_sd: float = 0.25,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Many studies of the crossed model at once: d = gap_i + a_j + noise, `per_pair` of `pool`."""
    rng = np.random.default_rng(seed)
    who = np.argsort(rng.random((studies, n, pool)), axis=-1)[..., :per_pair]
    effects = rng.normal(0.0, annotator_sd, (studies, pool))
    a = np.take_along_axis(effects[:, None, :], who.reshape(studies, -1)[:, None, :], axis=2).reshape(
        who.shape
    )
    d = gaps[None, :, None] + a + rng.normal(0.0, noise, who.shape)
    pair = np.repeat(np.arange(studies * n), per_pair)
    annotator = (who + pool * np.arange(studies)[:, None, None]).ravel()
    return d.ravel(), pair, annotator, np.repeat(np.arange(studies), n)


def _pass_rate(seed: int, studies: int, n: int, gaps: np.ndarray, **kwargs: float) -> float:
    d, pair, annotator, study = _studies(seed, studies, n, gaps, **kwargs)  # type: ignore[arg-type]
    est = mean_square(d, pair, annotator, study, floor_mean_square=0.1 * MARGIN**2)
    upper, _, _ = share_bounds(est.estimate, est.se, margin=MARGIN)
    return float(np.mean(upper < 0.1))


def test_the_estimate_is_the_mean_squared_gap_whatever_annotators_add() -> None:
    """Clean pairs and annotators who differ (SD 0.5): the pair means spread by their part, the
    estimate stays at the true mean square 0, and the annotator variance is found."""
    d, pair, annotator, study = _studies(1, 200, 200, np.zeros(200), annotator_sd=0.5)
    est = mean_square(d, pair, annotator, study)
    assert abs(est.estimate.mean()) < 3 * est.estimate.std() / np.sqrt(200)
    pair_means = np.bincount(pair, d) / 3
    naive = np.var(pair_means.reshape(200, 200), axis=1, ddof=1) - 0.9**2 / 3  # less the judgment noise
    assert naive.mean() > 0.05  # what treating the spread as pair variance would take for gaps
    assert est.annotator_var.mean() == pytest.approx(0.25, abs=0.03)


def test_the_estimate_follows_a_two_point_distribution_of_gaps() -> None:
    gaps = np.where(np.arange(400) < 80, 0.6, 0.0)
    d, pair, annotator, study = _studies(2, 100, 400, gaps)
    est = mean_square(d, pair, annotator, study)
    assert est.estimate.mean() == pytest.approx(0.2 * 0.36, abs=3 * est.estimate.std() / 10)


def test_a_fifth_of_pairs_just_beyond_the_margin_does_not_pass() -> None:
    """The case the normal-model bound passed in 50-67% of studies: 20% of the pairs at 0.6."""
    gaps = np.where(np.arange(2000) < 400, 0.6, 0.0)
    assert _pass_rate(3, 60, 2000, gaps) == 0.0


@pytest.mark.parametrize(("n", "pool"), [(80, 20), (400, 20), (80, 5)])
def test_false_pass_at_the_boundary_stays_near_alpha(n: int, pool: int) -> None:
    """10% of the pairs at 0.51, the rest at 0 (the distribution the bound is tight for): 300
    studies, false PASS within alpha + 3 Monte Carlo SE."""
    gaps = np.where(np.arange(n) < round(0.1 * n), 0.51, 0.0)
    rate = _pass_rate(4, 300, n, gaps, pool=pool)
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 300)


def test_a_clearly_clean_study_passes() -> None:
    gaps = np.zeros(1000)
    d, pair, annotator, _ = _studies(5, 1, 1000, gaps, per_pair=5, noise=0.6, annotator_sd=0.1)
    frame = pd.DataFrame({"pair_id": pair, "annotator": annotator, "diff": d})
    res = broken_share(frame, margin=MARGIN)
    assert res.below and res.upper < 0.06 and res.lower == 0.0


def test_many_pairs_far_beyond_the_margin_give_a_lower_bound_above_the_limit() -> None:
    """Half of the pairs at +-3 (mean gap 0): the lower bound from the scale's largest gap reaches
    the limit, so the verdict can say FAIL."""
    gaps = np.where(np.arange(300) % 2 == 0, np.where(np.arange(300) % 4 == 0, 3.0, -3.0), 0.0)
    d, pair, annotator, _ = _studies(6, 1, 300, gaps)
    res = broken_share(pd.DataFrame({"pair_id": pair, "annotator": annotator, "diff": d}), margin=MARGIN)
    assert res.lower >= 0.1 and not res.below and res.upper == 1.0


def test_too_few_pairs_give_no_bound() -> None:
    frame = pd.DataFrame({"pair_id": [1, 1, 2, 2], "annotator": ["a", "b", "a", "b"], "diff": [0.0] * 4})
    res = broken_share(frame, margin=MARGIN)
    assert not res.below and np.isnan(res.upper)


def test_one_judgment_pairs_subtract_their_annotator_s_own_part() -> None:
    """A pair rated once contributes d^2 less its annotator's mean of d_ij^2 - d_ij * (the others' mean)
    over the pairs that annotator rated with others; an annotator who rated none subtracts nothing."""
    frame = pd.DataFrame(
        {
            "pair_id": [1, 1, 2, 2, 3, 3, 4, 5],
            "annotator": list("ababacad"),
            "diff": [1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 1.0, 0.5],
        }
    )
    est = mean_square(frame["diff"], pd.factorize(frame["pair_id"])[0], pd.factorize(frame["annotator"])[0],
                      np.zeros(5, dtype=int))  # fmt: skip
    own = (1.0 * (1.0 - 0.0) + 0.0 * (0.0 - 1.0) + 2.0 * (2.0 - 0.0)) / 3  # a's t on pairs 1-3
    assert est.pair_estimate[3] == pytest.approx(1.0 - own)
    assert est.pair_estimate[4] == pytest.approx(0.25)  # d rated only alone: d^2
    assert est.estimate[0] == pytest.approx((0.0 + 0.0 + 0.0 + (1.0 - own) + 0.25) / 5)


def test_a_precise_annotator_rating_pairs_alone_does_not_hide_broken_pairs() -> None:
    """One precise annotator (noise SD 0.2) rates every pair, two noisy ones (SD 0.8) half of them; 15%
    of the pairs are 2 margins off. Subtracting the pooled (noisy) within-pair variance from the
    precise annotator's d^2 drove M below 0 and the bound to 0; the annotator's own part keeps M near
    its true 0.15."""
    rng = np.random.default_rng(4)
    n = 600
    gap = np.where(rng.random(n) < 0.15, 1.0, 0.0)
    rows = [(i, "lead", gap[i] + rng.normal(0, 0.2)) for i in range(n)]
    for i in range(1, n, 2):
        for who in rng.choice(20, 2, replace=False):
            rows.append((i, f"c{who}", gap[i] + rng.normal(0, 0.8)))
    frame = pd.DataFrame(rows, columns=["pair_id", "annotator", "diff"])
    res = broken_share(frame, margin=MARGIN)
    assert not res.below
    assert abs(res.mean_square - gap.mean()) < 3 * res.mean_square_se


@pytest.mark.parametrize(
    ("n", "pool", "pair_sd", "noise", "annotator_sd"),
    [
        (300, 3, 0.0, 0.6, 0.1),
        (300, 3, 0.1, 0.6, 0.1),
        (1000, 3, 0.0, 0.6, 0.3),
        (200, 20, 0.0, 0.5, 0.25),
        (600, 20, 0.05, 0.6, 0.1),
    ],
)
def test_the_planned_bound_passes_as_often_as_the_verdict(
    n: int, pool: int, pair_sd: float, noise: float, annotator_sd: float
) -> None:
    """What `annotator power` plans for the bound (planned_below) against the verdict itself on the
    design it plans: normal gaps, 3 of `pool` annotators per pair; 1,000 studies each. With 3
    annotators who differ (SD 0.3) the annotators' products decide: planning them as normal noise
    gave 0.25 where the verdict passes 0.12."""
    gaps = np.random.default_rng(5).normal(0.0, pair_sd, n) if pair_sd else np.zeros(n)
    measured = _pass_rate(9, 1000, n, gaps, pool=pool, noise=noise, annotator_sd=annotator_sd)
    planned = planned_below(
        n=n, per_pair=3, pool=pool, pair_var=pair_sd**2, annotator_var=annotator_sd**2, residual_var=noise**2,
        mean=0.0, margin=MARGIN, max_share=0.1, alpha=0.05, rng=np.random.default_rng(3), n_sim=4000,
    ).mean()  # fmt: skip
    assert 0.1 < measured < 0.95  # a design where the power is neither 0 nor 1
    assert planned == pytest.approx(measured, abs=0.05)


def test_the_annotator_variance_shown_is_the_one_the_bound_uses_never_below_zero() -> None:
    """Annotators who do not differ: the moment estimate falls below 0 in some studies; the result
    shows it at 0, as its standard error uses it, and the verdict's sentence says that a mean squared
    gap below 0 is an unbiased estimate below 0 by chance."""
    d, pair, annotator, study = _studies(3, 40, 30, np.zeros(30), annotator_sd=0.0, pool=4)
    raw = mean_square(d, pair, annotator, study).annotator_var
    assert (raw < 0).any()
    for s in np.flatnonzero(raw < 0)[:3]:
        rows = study == s
        frame = pd.DataFrame(
            {"pair_id": pair[np.repeat(rows, 3)], "annotator": annotator[np.repeat(rows, 3)]}
        )
        frame["diff"] = d[np.repeat(rows, 3)]
        assert broken_share(frame, margin=MARGIN).annotator_var == 0.0


def test_a_mean_squared_gap_below_zero_is_said_to_be_an_unbiased_estimate() -> None:
    """Clean pairs: the unbiased estimate of the mean squared gap falls below 0 in about half the
    studies; the equivalence verdict's sentence then says why it can."""
    from analysis.report import ReportSettings, build_report
    from analysis.simulation import SimDesign, SimEffects, simulate_frame

    for seed in range(20):
        frame = simulate_frame(
            np.random.default_rng(seed),
            SimDesign(n_pairs=30, pool=4, rubric_aspects=0),
            SimEffects(noise=0.4),
        )
        report = build_report(frame, study="s", settings=ReportSettings(n_boot=10))
        negative = report.validation.broken[report.validation.broken["mean_square"] < 0]
        if not negative.empty:
            break
    else:
        pytest.fail("no study of 20 had a mean squared gap estimated below 0")
    detail = report.verdict("equivalence").detail
    dimension = negative["dimension"].iloc[0]
    assert f"{dimension} at most" in detail
    part = detail.split(f"{dimension} at most", 1)[1].split(";")[0]
    assert "(an unbiased estimate: below 0 by chance)" in part
