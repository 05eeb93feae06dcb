"""Prediction-powered verdicts when the tool drew the human sample with known inclusion probabilities.

Active inference (Zrnic & Candès 2024, "Active Statistical Inference", arXiv:2403.03208): a judge rates
all ``N`` pairs; each pair enters the human sample independently with a probability ``pi_i`` recorded
when the sample is drawn (uniform ``n / N``, or larger where the judge is unsure:
:func:`inclusion_probabilities`).
With ``xi_i`` = 1 for a drawn pair, ``w_i = xi_i / pi_i`` and the people's pair-mean gap ``h_i``,

    theta = lambda * mean_all(f) + sum_i w_i (h_i - lambda f_i) / sum_i w_i

(the ratio, Hajek, form of the inverse-probability-weighted correction: it does not pay for the random
size of the sample). Whatever the judge, ``E[w_i] = 1`` keeps it consistent for the mean gap over all
``N`` pairs; only the variance depends on the judge and on how well its uncertainty points at its
errors. ``lambda = sum_i w_i (1/pi_i - 1) h~_i f~_i / sum_i (1/pi_i - 1) f~_i^2`` (centred values,
clipped to [0, 1]) minimizes that variance; with a uniform draw it is ``Cov(h, f) / Var(f)``.

The variance has two parts. Pairs: the pairs are independent draws, so the influence values
``psi_i = lambda (f_i - mean f) + N w_i (h_i - lambda f_i - correction) / sum w`` give
``v_p = sum psi_i^2 / (N (N - 1))`` (n - 1 df, n the drawn pairs). Annotators: an annotator's effect
enters every pair they rated, with weight ``c_j = sum over their drawn pairs of w_i / (k_i sum w)``
(``k_i`` annotators on the pair), so ``v_a = sum_j c_j^2 (s2_annotator + s2_residual / m)`` with the
crossed model's components and ``m`` judgments per annotator (the few-annotator guard's moment form,
q - 1 df). Satterthwaite df from the two. The people-only estimate over all pairs is the same with
lambda = 0; the effective sample size is ``n * var_people / var``.

The same weighted mean of another per-judgment value gives the rubric claim (the mean chosen - rejected
rubric rating, one-sided against 0: :func:`weighted_superiority`) and the preference share (scores 1 /
0.5 / 0 centred at 0.5, the judge's preference mapped to 0..1: :func:`weighted_share`), each with its
one-sided t test on the Satterthwaite df.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.frames import ANNOTATOR, PAIR_ID
from analysis.lazy import stats
from analysis.mixed import fit_crossed
from analysis.prediction_powered import (
    PPICore,
    PPIQuestion,
    PredictionPowered,
    PredictionPoweredMean,
    PredictionPoweredShare,
    mean_result,
    share_result,
    tost_result,
)
from analysis.vocabulary import CONFIDENCE

__all__ = [
    "ACTIVE_MODEL",
    "MIN_SHARE",
    "WeightedParts",
    "WeightedPeople",
    "inclusion_probabilities",
    "judge_uncertainty",
    "weighted_core",
    "weighted_ppi",
    "weighted_ppi_tost",
    "weighted_share",
    "weighted_superiority",
]

Array = npt.NDArray[np.float64]

MIN_SHARE = 0.8
"""Under an active draw no pair's inclusion probability falls below this share of the uniform one
(``MIN_SHARE * n / N``): the weights stay at most 1 / MIN_SHARE times the uniform ones. The people's
own noise and the pairs' spread weigh on every pair alike, so a mild tilt toward the judge's uncertain
pairs gave the smallest variance of the floors 0.2-0.8 in ``benchmarks/bench_active_ppi.py``."""

ACTIVE_MODEL = (
    "PPI++ with inverse-probability weights (active inference): the judge's gap on every pair, the "
    "people's correction d - lambda * judge on the drawn pairs weighted by 1 / inclusion probability, "
    "pair and annotator variance parts, Satterthwaite df"
)


def inclusion_probabilities(uncertainty: npt.ArrayLike, n: float, *, min_share: float = MIN_SHARE) -> Array:
    """Each pair's probability of entering the human sample: proportional to the judge's uncertainty,
    at least ``min_share * n / N``, at most 1, summing to ``n`` (the expected sample size), along the
    last axis (leading axes are a batch).

    Equal uncertainties (or ``min_share = 1``) give the uniform ``n / N``.

    >>> inclusion_probabilities([1.0, 1.0, 1.0, 1.0], 2).tolist()
    [0.5, 0.5, 0.5, 0.5]
    >>> p = inclusion_probabilities([0.0, 1.0, 1.0, 6.0], 2, min_share=0.5)
    >>> [round(float(x), 3) for x in p], round(float(p.sum()), 6)
    ([0.25, 0.375, 0.375, 1.0], 2.0)
    """
    u = np.asarray(uncertainty, dtype=np.float64)
    big_n = u.shape[-1] if u.ndim else 0
    if u.ndim < 1 or big_n < 1 or not np.all(np.isfinite(u)) or np.any(u < 0):
        raise ValueError("uncertainty must be an array of finite values >= 0 (pairs on the last axis)")
    if not 0 < n <= big_n:
        raise ValueError(f"the sample size must be in (0, {big_n}], got {n!r}")
    if not 0.0 < min_share <= 1.0:
        raise ValueError(f"min_share must be in (0, 1], got {min_share!r}")
    floor = min_share * n / big_n
    scale = u.sum(-1, keepdims=True)
    flat = scale == 0
    u = np.where(flat, 1.0, u / np.where(flat, 1.0, scale))  # no uncertainty anywhere: uniform
    low = np.zeros(scale.shape)
    high = np.full(scale.shape, float(big_n) / max(floor, 1e-12) + big_n)
    for _ in range(100):  # bisection on the scale c of c * u: the clipped total is monotone in it
        mid = (low + high) / 2
        under = np.clip(mid * u, floor, 1.0).sum(-1, keepdims=True) < n
        low, high = np.where(under, mid, low), np.where(under, high, mid)
    return np.asarray(np.clip(high * u, floor, 1.0), dtype=np.float64)


def judge_uncertainty(judge_rows: pd.DataFrame) -> pd.Series:
    """One judge's uncertainty per pair: 1 - its confidence (0..1, averaged over the orders it saw the
    pair in), indexed by pair id; pairs without a confidence get the judge's mean uncertainty.

    Raises ValueError when the judge gave no confidence at all."""
    conf = judge_rows.drop_duplicates([PAIR_ID, "order"]).groupby(PAIR_ID)[CONFIDENCE].mean().astype(float)
    if conf.notna().sum() == 0:
        raise ValueError("the judge gave no confidence, so it has no uncertainty to draw by")
    uncertainty = (1.0 - conf.clip(0.0, 1.0)).astype(float)
    return uncertainty.fillna(float(uncertainty.mean()))


@dataclass(frozen=True)
class WeightedParts:
    """The weighted estimate (batch arrays): ``estimate``, ``se``, ``df``, ``lam``, ``n_drawn``."""

    estimate: Array
    se: Array
    df: Array
    lam: Array
    n_drawn: Array


def weighted_ppi(
    h: npt.ArrayLike,
    f: npt.ArrayLike,
    drawn: npt.ArrayLike,
    probability: npt.ArrayLike,
    *,
    annotator_c2: npt.ArrayLike,
    annotator_unit_var: npt.ArrayLike,
    n_annotators: int,
    lam: npt.ArrayLike | None = None,
) -> WeightedParts:
    """The weighted PPI++ mean and its variance along the last axis (leading axes are a batch).

    ``h``: the people's pair-mean value (any number where not drawn); ``f``: the judge's value on every
    pair; ``drawn``: the pairs in the human sample; ``probability``: each pair's inclusion probability;
    ``annotator_c2``: the sum of the annotators' squared weights ``c_j^2``; ``annotator_unit_var``:
    ``s2_annotator + s2_residual / m``; ``lam``: None tunes it, 0 gives the people-only estimate.
    """
    f = np.asarray(f, dtype=np.float64)
    drawn = np.asarray(drawn, dtype=bool)
    p = np.asarray(probability, dtype=np.float64)
    hz = np.where(drawn, np.asarray(h, dtype=np.float64), 0.0)
    big_n = f.shape[-1]
    w = np.where(drawn, 1.0 / p, 0.0)
    total_w = w.sum(-1)
    n_drawn = drawn.sum(-1).astype(np.float64)
    fc = f - f.mean(-1, keepdims=True)
    if lam is None:
        h_w = (w * hz).sum(-1, keepdims=True) / total_w[..., None]
        num = (w * (1.0 / p - 1.0) * (hz - h_w) * fc).sum(-1)
        den = ((1.0 / p - 1.0) * fc**2).sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            lam_a = np.clip(np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0), 0.0, 1.0)
    else:
        lam_a = np.broadcast_to(np.asarray(lam, dtype=np.float64), total_w.shape).astype(np.float64)
    y = hz - lam_a[..., None] * f
    correction = (w * y).sum(-1) / total_w
    estimate = lam_a * f.mean(-1) + correction
    psi = lam_a[..., None] * fc + (big_n / total_w)[..., None] * w * (y - correction[..., None])
    v_p = (psi**2).sum(-1) / (big_n * (big_n - 1.0))
    v_a = np.asarray(annotator_c2, dtype=np.float64) * np.asarray(annotator_unit_var, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        denom = v_p**2 / np.maximum(n_drawn - 1.0, 1.0) + v_a**2 / max(n_annotators - 1, 1)
        df = np.where(denom > 0, (v_p + v_a) ** 2 / np.where(denom > 0, denom, 1.0), n_drawn - 1.0)
    return WeightedParts(estimate, np.sqrt(v_p + v_a), df, lam_a, n_drawn)


@dataclass(frozen=True)
class WeightedPeople:
    """The people-only weighted estimate (judge weight 0) over every pair of the draw, with its one-sided
    test's 1 - 2*alpha interval and ``p_greater`` (of a mean > 0)."""

    estimate: float
    se: float
    df: float
    n_annotators: int
    ci_low: float
    ci_high: float
    p_greater: float
    annotator_estimable: bool = True


def weighted_core(
    values: pd.DataFrame, column: str, judge_value: pd.Series, probability: pd.Series, item: str, alpha: float
) -> PPICore:
    """The weighted PPI++ mean of a per-judgment value (`column` of ``pair_id, annotator, ...``) over
    every pair of a drawn human sample's design, and the people-only one: the pairs are those with an
    inclusion probability and a judge value, the drawn ones those of them the people rated.

    Raises ValueError with fewer than 2 drawn pairs or 2 annotators."""
    judged = judge_value.dropna().astype(float).groupby(level=0).mean()
    pairs = probability.dropna().index.intersection(judged.index)
    rated = values[values[PAIR_ID].isin(pairs)]
    messages: list[str] = []
    left_out = int(values[PAIR_ID].nunique() - rated[PAIR_ID].nunique())
    if left_out:
        messages.append(
            f"{left_out} rated pair(s) without a judge rating or an inclusion probability left out"
        )
    pair_mean = rated.groupby(PAIR_ID)[column].mean()
    if len(pair_mean) < 2 or rated[ANNOTATOR].nunique() < 2:
        raise ValueError(f"need at least 2 drawn pairs and 2 annotators on '{item}'")
    index = pd.Index(pairs)
    drawn = index.isin(pair_mean.index)
    w = pd.Series(np.where(drawn, 1.0 / probability.reindex(index).to_numpy(float), 0.0), index=index)
    k = rated.groupby(PAIR_ID)[ANNOTATOR].transform("size").to_numpy(float)
    share = w.reindex(rated[PAIR_ID]).to_numpy() / k / float(w.sum())
    c2 = float((pd.Series(share).groupby(rated[ANNOTATOR].to_numpy()).sum() ** 2).sum())
    q = int(rated[ANNOTATOR].nunique())
    fit = fit_crossed(
        rated[column].to_numpy(float),
        np.ones((len(rated), 1)),
        rated[PAIR_ID].to_numpy(),
        rated[ANNOTATOR].to_numpy(),
    )
    args: dict[str, Any] = {
        "h": pair_mean.reindex(index).fillna(0.0).to_numpy(float),
        "f": judged.reindex(index).to_numpy(float),
        "drawn": drawn,
        "probability": probability.reindex(index).to_numpy(float),
        "annotator_c2": c2,
        "annotator_unit_var": fit.annotator_var + fit.residual_var / (len(rated) / q),
        "n_annotators": q,
    }
    mixed, people = weighted_ppi(**args), weighted_ppi(**args, lam=0.0)
    est, se, df, lam = (float(x) for x in (mixed.estimate, mixed.se, mixed.df, mixed.lam))
    p_est, p_se, p_df = (float(x) for x in (people.estimate, people.se, people.df))
    h, f_l = pair_mean.to_numpy(float), judged.reindex(pair_mean.index).to_numpy(float)
    correlation = float(np.corrcoef(h, f_l)[0, 1]) if np.ptp(h) > 0 and np.ptp(f_l) > 0 else math.nan
    n_rated = int(drawn.sum())
    t = float(stats.t.ppf(1 - alpha, p_df))
    return PPICore(
        estimate=est,
        se=se,
        df=df,
        lam=lam,
        correlation=correlation,
        n_rated=n_rated,
        n_unrated=len(index) - n_rated,
        n_obs=len(rated),
        effective=n_rated * p_se**2 / se**2 if se > 0 else math.nan,
        people=WeightedPeople(
            estimate=p_est,
            se=p_se,
            df=p_df,
            n_annotators=q,
            ci_low=p_est - t * p_se,
            ci_high=p_est + t * p_se,
            p_greater=float(stats.t.sf(p_est / p_se, p_df)) if p_se > 0 else math.nan,
        ),
        messages=messages,
    )


def weighted_ppi_tost(
    differences: pd.DataFrame,
    judge_gap: pd.Series,
    probability: pd.Series,
    question: PPIQuestion,
) -> PredictionPowered:
    """Equivalence of chosen and rejected on one item over every pair of a drawn human sample's design.

    Parameters
    ----------
    differences : pandas.DataFrame
        The people's judgments ``pair_id, annotator, diff`` on the drawn pairs.
    judge_gap : pandas.Series
        The judge's chosen - rejected gap per pair id.
    probability : pandas.Series
        Each pair's inclusion probability recorded when the sample was drawn, per pair id: the pairs
        of the verdict are those with a probability and a judge gap; the drawn ones are those of them
        the people rated.
    question : analysis.prediction_powered.PPIQuestion
        The item, its margin, the level and the judge.
    """
    core = weighted_core(differences, "diff", judge_gap, probability, question.item, question.alpha)
    return tost_result(core, question, ACTIVE_MODEL)


def weighted_superiority(
    differences: pd.DataFrame,
    judge_gap: pd.Series,
    probability: pd.Series,
    *,
    item: str,
    alpha: float = 0.05,
    judge: str = "",
) -> PredictionPoweredMean:
    """The mean chosen - rejected difference on `item` over every pair of a drawn human sample's design,
    one-sided against 0 (the rubric claim); the arguments as in :func:`weighted_ppi_tost`."""
    return mean_result(
        weighted_core(differences, "diff", judge_gap, probability, item, alpha), alpha, item, judge
    )


def weighted_share(
    scores: pd.DataFrame,
    judge_score: pd.Series,
    probability: pd.Series,
    *,
    alpha: float = 0.05,
    judge: str = "",
) -> PredictionPoweredShare:
    """The share of judgments preferring chosen (``score``: 1 chosen, 0.5 tie, 0 rejected) over every
    pair of a drawn human sample's design, one-sided against 0.5; `judge_score` the judge's prediction of
    that score per pair id, `probability` each pair's recorded inclusion probability."""
    centred = scores.assign(score=scores["score"].astype(float) - 0.5)
    core = weighted_core(centred, "score", judge_score.astype(float) - 0.5, probability, "preference", alpha)
    return share_result(core, alpha, judge)
