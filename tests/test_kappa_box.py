"""Kappa's interval with the owner's shares in a distribution-free betting box (analysis.kappa_box)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from analysis.betting import betting_ratio
from analysis.kappa_box import BOX_SHARE, kappa_box
from analysis.owners import _acceleration, _hall, _score_kappa, jackknife_kappa

pytestmark = pytest.mark.nodb  # statistics only: no database


def _study(rng: np.random.Generator, owners: int, share: float, spread: float, accuracy: float) -> np.ndarray:
    """Per-owner confusion counts (owners, 3, 3): 20 pairs each, owner shares Beta(mean share, sd
    spread), ties 0.1, a rater who takes the owner's direction with `accuracy`, else another at random."""
    k = share * (1 - share) / spread**2 - 1
    p = rng.beta(share * k, (1 - share) * k, owners)
    tie = rng.random((owners, 20)) < 0.1
    owner = np.where(tie, 1, np.where(rng.random((owners, 20)) < p[:, None], 0, 2))
    other = (owner + rng.integers(1, 3, owner.shape)) % 3
    rater = np.where(rng.random((owners, 20)) < accuracy, owner, other)
    confusion = np.zeros((owners, 3, 3))
    for g in range(owners):
        np.add.at(confusion[g], (rater[g], owner[g]), 1.0)
    return confusion


def _kappa_at(confusion: np.ndarray, o: np.ndarray) -> float:
    """kappa = (po - pe) / (1 - pe) of the pooled counts with the owner's shares `o` given."""
    total = confusion.sum(0)
    n = total.sum()
    pe = float(total.sum(1) @ o) / n
    return (np.trace(total) / n - pe) / (1 - pe)


def _reference(confusion: np.ndarray, alpha: float) -> tuple[float, float]:
    """Rebuilt from the definition with loops: the box from betting_ratio at BOX_SHARE * alpha / 4 per
    bound; at each corner o, the k where (sum U - k sum V)^2 / N^2 = t^2 * jackknife variance of the
    ratio sum(U - k V) / N (leave-one-owner-out, times G / (G - 1)), found by brentq."""
    g = len(confusion)
    pairs = confusion.sum((1, 2))
    owner = confusion.sum(1)
    bounds = [betting_ratio(owner[:, j], pairs, alpha=BOX_SHARE * alpha / 4) for j in (1, 2)]
    low, high = zip(*bounds, strict=True)
    q = stats.t.ppf(1 - (1 - BOX_SHARE) * alpha, g - 1)
    lows, highs = [], []
    for tie in (low[0], high[0]):
        for rej in (low[1], high[1]):
            o = np.array([1 - tie - rej, tie, rej])
            mixed = confusion.sum(2) @ o
            u, v = np.trace(confusion, axis1=1, axis2=2) - mixed, pairs - mixed

            def gap(k: float, u: np.ndarray = u, v: np.ndarray = v) -> float:
                z = u - k * v
                loo = np.array([(z.sum() - z[i]) / (pairs.sum() - pairs[i]) for i in range(g)])
                return (z.sum() / pairs.sum()) ** 2 - q**2 * ((loo - loo.mean()) ** 2).sum()

            centre = u.sum() / v.sum()
            assert centre == pytest.approx(_kappa_at(confusion, o))
            lows.append(optimize.brentq(gap, -5, centre))
            highs.append(optimize.brentq(gap, centre, 5))
    return min(lows), max(highs)


@pytest.mark.parametrize(("seed", "alpha"), [(1, 0.05), (2, 0.025), (3, 0.05)])
def test_kappa_box_matches_its_definition(seed: int, alpha: float) -> None:
    confusion = _study(np.random.default_rng(seed), 15, 0.8, 0.15, 0.6)
    low, high = kappa_box(confusion, alpha=alpha)
    ref_low, ref_high = _reference(confusion, alpha)
    assert (float(low), float(high)) == pytest.approx((ref_low, ref_high), abs=1e-7)


def test_kappa_box_stays_within_minus_one_and_one_and_holds_the_estimate() -> None:
    rng = np.random.default_rng(5)
    accuracies = (0.2, 0.35, 0.5, 0.8, 0.95)
    confusions = np.stack([_study(rng, 12, 0.9, 0.2, a) for a in accuracies for _ in range(40)])
    low, high = kappa_box(confusions)
    est = jackknife_kappa(confusions)[0]
    assert np.all((-1 <= low) & (low <= high) & (high <= 1))
    assert np.all((low <= est + 1e-12) & (est <= high + 1e-12))


def test_kappa_box_widens_as_its_level_rises() -> None:
    rng = np.random.default_rng(6)
    confusions = np.stack([_study(rng, 20, 0.8, 0.15, 0.6) for _ in range(50)])
    wide = kappa_box(confusions, alpha=0.01)
    mid = kappa_box(confusions, alpha=0.05)
    narrow = kappa_box(confusions, alpha=0.2)
    assert np.all(wide[0] <= mid[0] + 1e-12) and np.all(mid[0] <= narrow[0] + 1e-12)
    assert np.all(wide[1] >= mid[1] - 1e-12) and np.all(mid[1] >= narrow[1] - 1e-12)


def test_perfect_agreement_keeps_kappa_one() -> None:
    confusion = np.tile(np.diag([8.0, 1.0, 1.0]), (12, 1, 1))
    assert tuple(map(float, kappa_box(confusion))) == pytest.approx((1.0, 1.0))
    est, low, high, _ = jackknife_kappa(confusion)
    assert (est, low, high) == pytest.approx((1.0, 1.0, 1.0))


def test_a_panel_with_no_majority_counts_for_the_rater_only() -> None:
    """A fourth rater direction (a panel with no majority) is never the owner's: the box is the same as
    with those pairs counted as disagreement in a column of their own."""
    confusion = _study(np.random.default_rng(8), 15, 0.8, 0.15, 0.6)
    panel = np.zeros((15, 4, 4))
    panel[:, :3, :3] = confusion
    panel[::3, 3, 0] = 2.0  # no majority on pairs whose owner chose chosen
    low, high = kappa_box(panel)
    assert -1 <= low < high <= 1
    assert float(jackknife_kappa(panel)[1]) <= float(low)


def test_the_box_is_what_covers_where_few_owners_reject_chosen() -> None:
    """Owners' shares J-shaped (mean 0.9, sd 0.2), 10 owners x 20 pairs, accuracy 0.5, where the
    jackknife and score intervals alone missed kappa's upper side more often than alpha: over the same
    draws, kappa's interval with the box covers in draws where the two alone miss, and misses less."""
    rng = np.random.default_rng(11)
    confusions = np.stack([_study(rng, 10, 0.9, 0.2, 0.5) for _ in range(400)])
    owner = np.array([0.9 * 0.9, 0.1, 0.9 * 0.1])
    joint = np.full((3, 3), 0.25) * owner
    np.fill_diagonal(joint, 0.5 * owner)
    truth = float(jackknife_kappa(joint[None])[0])
    est, low, high, se = jackknife_kappa(confusions)
    c = confusions.sum(1)
    chance = (c.sum(-1) * c.sum(-2)).sum(-1) / c.sum((-1, -2)) ** 2
    q = stats.t.ppf(0.95, 9)
    loo = np.stack([jackknife_kappa(np.delete(confusions, g, 1))[0] for g in range(10)], -1)
    dev = loo - loo.mean(-1, keepdims=True)
    old_high = np.fmax(_hall(est, se, _acceleration(dev), q)[1], _score_kappa(est, se, chance, q)[1])
    _, box_high = kappa_box(confusions)
    np.testing.assert_allclose(high, np.minimum(np.fmax(old_high, box_high), 1.0))
    rescued = (old_high < truth) & (box_high >= truth)
    assert rescued.sum() >= 5
    assert np.mean(high < truth) < np.mean(old_high < truth)
