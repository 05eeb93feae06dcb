"""The share of pairs whose true chosen - rejected gap lies beyond the equivalence margin, bounded for
any distribution of the pair gaps.

An equivalence claim about a pair set also needs few broken pairs: a mean gap inside the margin can
hide a fifth of pairs beyond it. The bound rests on one fact that holds whatever the gaps look like:
the share of pairs with ``|g| > margin`` is at most ``M / margin^2``, with ``M`` the mean squared true
gap over the pairs (Markov's inequality on ``g^2``; the bound is attained by pairs at 0 and just beyond
the margin). ``M`` is estimated without a model of the gaps, the noise or the annotators: for a pair
rated by annotators j != l, ``d_ij * d_il`` has expectation ``g_i^2`` when the judgment noise is
independent and annotator effects are independent with mean 0 (pairs and annotators in general: the
crossed pair x annotator model's population). Its upper confidence bound gives the verdict; the lower
one gives a lower bound on the share from the largest gap the scale allows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.equivalence.checks import TestResult
from analysis.lazy import stats
from analysis.scale import DEFAULT_SCALE
from analysis.vocabulary import ANNOTATOR, PAIR_ID

__all__ = [
    "DEFAULT_GAP_RANGE",
    "BrokenShare",
    "MeanSquare",
    "broken_share",
    "mean_square",
    "planned_below",
    "share_bounds",
]

#: The largest true gap of the default 1-5 quality scale (a rating difference cannot exceed it).
DEFAULT_GAP_RANGE = DEFAULT_SCALE.span


@dataclass(frozen=True)
class BrokenShare(TestResult):
    """The share of pairs whose true chosen - rejected gap lies beyond the margin, for any distribution
    of the gaps.

    ``mean_square``: the estimated mean squared true gap M over the pairs, ``mean_square_se`` its
    standard error, ``mean_square_upper`` its one-sided 1 - alpha upper bound; ``upper``: the bound on
    the share, ``min(1, mean_square_upper / margin^2)``; ``lower``: a 1 - alpha lower bound on the share
    (from M's lower bound and the largest gap the scale allows, ``gap_range``); ``annotator_var``: the
    moment estimate of the annotators' variance in the gap, 0 where it falls below 0 (as the standard
    error uses it); ``below`` = ``upper < max_share``.
    """

    n_pairs: int
    mean_square: float
    mean_square_se: float
    mean_square_upper: float
    lower: float
    upper: float
    annotator_var: float
    max_share: float
    margin: float
    below: bool


@dataclass(frozen=True)
class MeanSquare:
    """Per study: the estimate of the mean squared true gap and what its standard error is made of.

    Arrays of shape (n_studies,): ``n`` pairs, ``estimate`` (M), ``se`` (the larger of ``se_data`` and
    ``se_floor``), ``se_data`` (from the spread of the per-pair estimates plus the annotators' shared
    part), ``se_floor`` (the SE at the boundary ``M = floor_mean_square`` under normal judgment noise),
    ``annotator_var`` and ``noise_var`` (the within-pair variance of one judgment). Per pair, shape (P,):
    ``pair_estimate`` (the unbiased estimate ``U_i`` of ``g_i^2``, 0 for a pair without judgments) and
    ``pair_floor`` (``Var(U_i)`` at the boundary under normal noise, the floor's part); per study
    ``annotator_part`` (the variance the annotators share between pairs, part of both SEs).
    """

    n: np.ndarray
    estimate: np.ndarray
    se: np.ndarray
    se_data: np.ndarray
    se_floor: np.ndarray
    annotator_var: np.ndarray
    noise_var: np.ndarray
    pair_estimate: np.ndarray
    pair_floor: np.ndarray
    annotator_part: np.ndarray


def mean_square(
    diff: Any,
    pair: Any,
    annotator: Any,
    study_of_pair: Any,
    *,
    floor_mean_square: float = 0.0,
) -> MeanSquare:
    """The mean squared true gap of the pairs of one or many studies, with its standard error.

    Parameters
    ----------
    diff : array_like, shape (N,)
        One chosen - rejected difference per judgment.
    pair, annotator : array_like of int, shape (N,)
        Codes 0..P-1 of the judgment's pair and 0..A-1 of its annotator (an annotator belongs to one
        study; one judgment per pair and annotator).
    study_of_pair : array_like of int, shape (P,)
        The study of each pair, codes 0..S-1 (all zeros for one study).
    floor_mean_square : float, default 0
        The M at which the SE floor is computed (the boundary of the claim: ``max_share * margin^2``).

    Returns
    -------
    MeanSquare

    Notes
    -----
    Per pair with k >= 2 judgments, ``U_i = sum_{j != l} d_ij d_il / (k (k - 1))`` is unbiased for
    ``g_i^2`` (the pair's true gap squared, over annotators in general); a pair with one judgment uses
    ``d^2`` less its annotator's own effect and noise, estimated from that annotator's judgments of
    pairs rated by several (:func:`_single_corrections`; annotators' noise may differ). M is the mean
    of the U_i. Its variance: the spread of
    the U_i over pairs, plus what the annotators share between pairs (products ``a_j a_l`` of the same
    two annotators and ``g_i a_j`` of the same annotator; their sizes from the moment estimate of the
    annotator variance: products of one annotator's within-pair deviations on different pairs). The
    spread of the U_i grows with their mean, so a study whose M came out low also gets a low SE; the
    floor (the SE at the boundary under normal noise of the observed within-pair variance) keeps that
    from passing studies at the boundary more often than alpha with few pairs. Everything is sums over
    judgments, so many simulated studies are computed at once.
    """
    d = np.asarray(diff, dtype=float)
    pair = np.asarray(pair, dtype=np.int64)
    annotator = np.asarray(annotator, dtype=np.int64)
    sp = np.asarray(study_of_pair, dtype=np.int64)
    n_pairs_all = len(sp)
    n_studies = int(sp.max()) + 1 if n_pairs_all else 0
    k = np.bincount(pair, minlength=n_pairs_all).astype(float)
    s1 = np.bincount(pair, d, minlength=n_pairs_all)
    s2 = np.bincount(pair, d * d, minlength=n_pairs_all)
    used, multi = k > 0, k >= 2
    kk = np.maximum(k, 1.0)
    xbar = s1 / kk
    df_within = np.bincount(sp, np.maximum(k - 1.0, 0.0), minlength=n_studies)
    within = np.bincount(sp, np.where(multi, s2 - s1 * s1 / kk, 0.0), minlength=n_studies) / np.maximum(
        df_within, 1.0
    )
    n_annotators = int(annotator.max()) + 1 if len(annotator) else 0
    study_of_annotator = np.zeros(n_annotators, dtype=np.int64)
    study_of_annotator[annotator] = sp[pair]
    single_correction, var_c = _single_corrections(d, pair, annotator, k, s1, study_of_annotator, n_studies)
    u = np.where(multi, (s1 * s1 - s2) / np.maximum(k * (k - 1.0), 1.0), s1 * s1 - single_correction)
    u = np.where(used, u, 0.0)
    n = np.bincount(sp, used.astype(float), minlength=n_studies)
    n_safe = np.maximum(n, 1.0)
    m = np.bincount(sp, u, minlength=n_studies) / n_safe
    var_u = (np.bincount(sp, u * u, minlength=n_studies) - n * m * m) / np.maximum(n - 1.0, 1.0)

    var_c = var_c / n_safe**2
    # the annotator variance: products of one annotator's within-pair deviations on different pairs
    on_multi = multi[pair]
    r = np.where(on_multi, d - xbar[pair], 0.0)
    c = np.where(on_multi, 1.0 - 1.0 / kk[pair], 0.0)
    r1 = np.bincount(annotator, r, minlength=n_annotators)
    r2 = np.bincount(annotator, r * r, minlength=n_annotators)
    c1 = np.bincount(annotator, c, minlength=n_annotators)
    c2 = np.bincount(annotator, c * c, minlength=n_annotators)
    numerator = np.bincount(study_of_annotator, r1 * r1 - r2, minlength=n_studies)
    denominator = np.bincount(study_of_annotator, c1 * c1 - c2, minlength=n_studies)
    first, second = _judgment_pairs(pair, k)
    kp = k[pair[first]]
    key = annotator[first] * max(n_annotators, 1) + annotator[second]
    codes, inverse = np.unique(key, return_inverse=True)
    inverse = inverse.ravel()
    key_study = study_of_annotator[codes // max(n_annotators, 1)]
    co = np.bincount(inverse, 1.0 / kp)
    co2 = np.bincount(inverse, 1.0 / (kp * kp))
    denominator = denominator + np.bincount(key_study, co * co - co2, minlength=n_studies)
    s2a = np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1.0), 0.0)
    s2a_pos = np.maximum(s2a, 0.0)
    # the a_j a_l part: each ordered annotator pair's weight in M
    weight = np.bincount(inverse, 1.0 / (kp * (kp - 1.0))) / n_safe[key_study]
    var_q = 2.0 * s2a_pos**2 * np.bincount(key_study, weight * weight, minlength=n_studies)
    # the g_i a_j part: (2/n sum_{i rated by j} g_i / k_i)^2, with g_i^2 estimated by U_i and g_i g_i'
    # by the product of the pair means less what annotators who rated both put into it
    h = np.where(used[pair], xbar[pair] / kk[pair], 0.0)
    inv_k2 = np.where(used[pair], 1.0 / kk[pair] ** 2, 0.0)
    lam1 = np.bincount(annotator, h, minlength=n_annotators)
    lam2 = np.bincount(annotator, h * h - u[pair] / kk[pair] ** 2, minlength=n_annotators)
    lam_sq = np.bincount(study_of_annotator, lam1 * lam1 - lam2, minlength=n_studies)
    self_k = np.bincount(annotator, inv_k2, minlength=n_annotators)
    self_k4 = np.bincount(annotator, inv_k2 * inv_k2, minlength=n_annotators)
    shared = np.bincount(study_of_annotator, self_k * self_k - self_k4, minlength=n_studies)
    shared += np.bincount(key_study, co2 * co2 - np.bincount(inverse, 1.0 / kp**4), minlength=n_studies)
    var_l = s2a_pos * np.maximum(4.0 * (lam_sq - s2a_pos * shared) / n_safe**2, 0.0)
    se_data = np.sqrt(np.maximum(var_u / n_safe + var_q + var_l + var_c, 0.0))
    # the floor: Var(U_i) at the boundary under normal noise, v = within / k per pair mean
    v = within[sp] / kk
    at_floor = np.where(multi, 2.0 * v * v * kk / np.maximum(kk - 1.0, 1.0), 2.0 * v * v) + 4.0 * v * max(
        float(floor_mean_square), 0.0
    )
    at_floor = np.where(used, at_floor, 0.0)
    var_floor = np.bincount(sp, at_floor, minlength=n_studies) / n_safe**2
    se_floor = np.sqrt(var_floor + var_q + var_l + var_c)
    enough = n >= 3
    nan = np.full(n_studies, math.nan)
    return MeanSquare(
        n=n,
        estimate=np.where(enough, m, nan),
        se=np.where(enough, np.maximum(se_data, se_floor), nan),
        se_data=np.where(enough, se_data, nan),
        se_floor=np.where(enough, se_floor, nan),
        annotator_var=s2a,
        noise_var=within,
        pair_estimate=u,
        pair_floor=at_floor,
        annotator_part=var_q + var_l + var_c,
    )


def _single_corrections(
    d: np.ndarray,
    pair: np.ndarray,
    annotator: np.ndarray,
    k: np.ndarray,
    s1: np.ndarray,
    study_of_annotator: np.ndarray,
    n_studies: int,
) -> tuple[np.ndarray, np.ndarray]:
    """What a pair rated once subtracts from its d^2, per pair (0 for the others), and the variance
    that adds to n^2 Var(M), per study.

    A pair rated once by annotator j has ``E[d^2] = g^2 + (j's effect and noise)``; j's own part is
    estimated from j's judgments of pairs rated by several: ``t = d_ij^2 - d_ij * (mean of the others'
    d on pair i)`` has expectation ``a_j E[g] + a_j^2 + s2_j`` (the other annotators' effects have mean
    0), so ``d^2 - mean(t)`` is unbiased for ``g^2`` over annotators whatever each one's noise. An
    annotator without two such judgments subtracts nothing (``d^2`` over-states ``g^2``: the bound stays
    valid). The mean of t is shared by that annotator's pairs rated once: its variance enters Var(M)
    weighted by their number.
    """
    n_annotators = len(study_of_annotator)
    on_multi = k[pair] >= 2
    others = np.where(on_multi, (s1[pair] - d) / np.maximum(k[pair] - 1.0, 1.0), 0.0)
    t = np.where(on_multi, d * d - d * others, 0.0)
    m = np.bincount(annotator, on_multi.astype(float), minlength=n_annotators)
    t1 = np.bincount(annotator, t, minlength=n_annotators)
    t2 = np.bincount(annotator, t * t, minlength=n_annotators)
    known = m >= 2
    mean_t = np.where(known, t1 / np.maximum(m, 1.0), 0.0)
    var_mean_t = np.where(
        known, np.maximum(t2 - t1 * t1 / np.maximum(m, 1.0), 0.0) / np.maximum(m - 1.0, 1.0), 0.0
    )
    var_mean_t = var_mean_t / np.maximum(m, 1.0)
    once = k[pair] == 1
    correction = np.zeros(len(k))
    correction[pair[once]] = mean_t[annotator[once]]
    singles_of = np.bincount(annotator[once], minlength=n_annotators).astype(float)
    var_c = np.bincount(study_of_annotator, singles_of**2 * var_mean_t, minlength=n_studies)
    return correction, var_c


def _judgment_pairs(pair: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices (first, second) of every ordered pair of different judgments of the same pair."""
    order = np.argsort(pair, kind="stable")
    ps = pair[order]
    start = np.searchsorted(ps, np.arange(len(k)))
    pos = np.arange(len(ps)) - start[ps]
    size = k[ps].astype(np.int64)
    firsts, seconds = [], []
    for offset in range(1, int(k.max()) if len(k) else 0):
        ok = size > offset
        firsts.append(order[ok])
        seconds.append(order[start[ps[ok]] + (pos[ok] + offset) % size[ok]])
    if not firsts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(firsts), np.concatenate(seconds)


def share_bounds(
    estimate: Any, se: Any, *, margin: float, alpha: float = 0.05, gap_range: float = DEFAULT_GAP_RANGE
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bounds on the share of pairs beyond +-margin from M's estimate and SE (arrays or floats).

    Returns ``(upper, lower, mean_square_upper)``: ``upper = min(1, M_up / margin^2)`` (every
    distribution of gaps with mean square M_up has at most that share beyond the margin) and
    ``lower = (M_low - margin^2) / (gap_range^2 - margin^2)`` clipped to [0, 1] (with every gap at most
    ``gap_range``, a share s beyond the margin gives at most ``(1 - s) margin^2 + s gap_range^2``).

    Examples
    --------
    >>> up, low, m_up = share_bounds(0.01, 0.005, margin=0.5)
    >>> round(float(up), 3), float(low)
    (0.073, 0.0)
    """
    z = float(stats.norm.ppf(1 - alpha))
    est, err = np.asarray(estimate, dtype=float), np.asarray(se, dtype=float)
    m_up = np.maximum(est + z * err, 0.0)
    m_low = est - z * err
    m2 = float(margin) ** 2
    upper = np.minimum(m_up / m2, 1.0)
    lower = np.clip((m_low - m2) / (max(float(gap_range), float(margin)) ** 2 - m2 + 1e-300), 0.0, 1.0)
    return upper, lower, m_up


def broken_share(
    differences: pd.DataFrame,
    *,
    margin: float,
    max_share: float = 0.1,
    alpha: float = 0.05,
    gap_range: float = DEFAULT_GAP_RANGE,
) -> BrokenShare:
    """Bounds on the share of pairs whose true gap lies beyond +-margin, for any distribution of gaps.

    Parameters
    ----------
    differences : pandas.DataFrame
        One row per judgment with ``pair_id``, ``annotator`` and ``diff`` (chosen - rejected), as
        :func:`analysis.aggregates.judgment_differences` gives.
    margin : float
        The equivalence margin.
    max_share : float, default 0.1
        The largest share of broken pairs an equivalence claim tolerates.
    alpha : float, default 0.05
        One-sided level of the bounds.
    gap_range : float, default 4
        The largest true gap the scale allows (scale maximum - minimum), for the lower bound.

    Returns
    -------
    BrokenShare

    Notes
    -----
    See :func:`mean_square` for the estimate of M and its SE; the bound holds for any distribution of
    the pair gaps and any distribution of judgment noise with mean 0, independent between judgments,
    and annotator effects (on the gap: leniency, slope) independent with mean 0 over annotators in
    general. Pairs at 0 and 10% just beyond the margin are the case it is tight for; a normal spread or
    pairs far beyond the margin give a bound well above the true share (the price of holding for any
    distribution).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pair = np.repeat(np.arange(2000), 3)
    >>> annotator = np.argsort(rng.random((2000, 20)), axis=1)[:, :3].ravel()  # 3 of a pool of 20
    >>> gap = np.where(np.arange(2000) < 400, 0.6, 0.0)  # a fifth of the pairs just beyond the margin
    >>> d = pd.DataFrame({"pair_id": pair, "annotator": annotator,
    ...                   "diff": gap[pair] + rng.normal(0, 0.9, 6000)})
    >>> res = broken_share(d, margin=0.5)
    >>> res.below, round(res.upper, 2) > 0.1
    (False, True)
    """
    pair, _ = pd.factorize(differences[PAIR_ID], sort=True)
    who, _ = pd.factorize(differences[ANNOTATOR], sort=True)
    n = int(pair.max()) + 1 if len(pair) else 0
    stats_ = mean_square(
        differences["diff"].to_numpy(dtype=float),
        pair,
        who,
        np.zeros(n, dtype=np.int64),
        floor_mean_square=float(max_share) * float(margin) ** 2,
    )
    if n < 3 or not np.isfinite(stats_.estimate[0]):
        return BrokenShare(
            n, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, max_share, margin, False
        )
    upper, lower, m_up = share_bounds(
        stats_.estimate, stats_.se, margin=margin, alpha=alpha, gap_range=gap_range
    )
    return BrokenShare(
        n_pairs=n,
        mean_square=float(stats_.estimate[0]),
        mean_square_se=float(stats_.se[0]),
        mean_square_upper=float(m_up[0]),
        lower=float(lower[0]),
        upper=float(upper[0]),
        annotator_var=max(float(stats_.annotator_var[0]), 0.0),  # as the SE uses it
        max_share=float(max_share),
        margin=float(margin),
        below=bool(upper[0] < max_share),
    )


def planned_below(
    *,
    n: int,
    per_pair: float,
    pool: int,
    pair_var: float,
    annotator_var: float,
    residual_var: float,
    mean: float,
    margin: float,
    max_share: float,
    alpha: float,
    rng: np.random.Generator,
    n_sim: int,
) -> np.ndarray:
    """Simulated verdicts of the bound on the share of broken pairs (below `max_share`) for a planned
    design, for planning: one bool per study.

    A design: `n` pairs with gaps ``N(mean, pair_var)``, each rated by `per_pair` annotators of a
    `pool` (annotator effects ``a_j ~ N(0, annotator_var)``, judgment noise ``N(0, residual_var)``).
    Each study draws its pool's ``a_j``; :func:`mean_square`'s estimate M is ``mean^2 + pair_var`` plus
    what the annotators put into it (the mean of ``a_j a_l`` over the pool's pairs of annotators: with
    few annotators far from normal) plus a normal part with the spread of the per-pair ``U_i`` under
    normal noise and the ``g_i a_j`` products. Its SE as the verdict computes it: the spread of the
    ``U_i`` (scaled chi-square on n - 1 df), the floor at the boundary, and the annotators' shared part
    from the variance of the same ``a_j``, so a study whose annotators happen to agree gets both a low
    M and a low SE, as in the verdict.
    """
    k, size = max(float(per_pair), 2.0), max(int(pool), 2)
    w = residual_var + annotator_var  # the within-pair variance of one judgment
    m_true = mean * mean + pair_var
    a = rng.normal(0.0, math.sqrt(max(annotator_var, 0.0)), (n_sim, size))
    products = (a.sum(1) ** 2 - (a * a).sum(1)) / (size * (size - 1))
    s_a = a.var(1, ddof=1)
    g_a = 4 * (mean * mean / size + pair_var / (n * k))
    own = 2 * (w * w - annotator_var**2) / (k * (k - 1))  # per pair, the products of different judgments
    var_u = 2 * pair_var**2 + 4 * mean * mean * pair_var + 4 * m_true * w / k + own
    floor = 2 * w * w / (k * (k - 1)) + 4 * (w / k) * float(max_share) * float(margin) ** 2
    estimate = m_true + products + np.sqrt(var_u / n + annotator_var * g_a) * rng.standard_normal(n_sim)
    spread = var_u * rng.chisquare(max(n - 1, 1), n_sim) / max(n - 1, 1)
    shared = 2 * s_a * s_a / (size * (size - 1)) + s_a * g_a
    se = np.sqrt(np.maximum(spread, floor) / n + shared)
    upper, _, _ = share_bounds(estimate, se, margin=margin, alpha=alpha)
    return np.asarray((upper < max_share) & (n >= 3), dtype=bool)
