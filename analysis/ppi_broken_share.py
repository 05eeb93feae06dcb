"""The share of broken pairs over every pair a judge rated: a prediction-powered Markov bound.

The people-only bound (:mod:`analysis.broken_share`) caps the share of pairs with ``|g| > margin`` by
``M / margin^2``, ``M`` the mean squared true gap, estimated by the mean over rated pairs of ``U_i``
(unbiased for ``g_i^2``). Here a judge rated every pair and predicts ``g_i^2`` by its own gap squared,
``f_i = gap_i^2`` (the plug-in of the quantity M averages: it needs no fit on the people's data, which
would break the estimator's unbiasedness, and a judge on another scale or a biased one only costs
precision, because lambda scales it and the people's correction removes its bias). PPI++ then gives

    M = lambda * mean_U(f) + mean_L(U - lambda * f)

(``U`` the judged pairs no person rated, ``L`` the rated ones, a uniform sample) with the power-tuned
lambda of :func:`analysis.prediction_powered.power_tuned_lambda`; under the tool's own draw with
inclusion probabilities the correction is weighted by 1 / probability
(:func:`analysis.active_ppi.weighted_ppi`). Whatever the judge, the correction has mean zero, so ``M`` is
unbiased for the mean squared gap over every judged pair and Markov's bound needs no model of the
gaps. Its variance: the judge's part ``lambda^2 Var_U(f) / N_u``, the correction's spread over pairs
(never below the floor: the noise part of ``Var(U_i)`` at the boundary ``M = max_share * margin^2``
under normal noise, which no judge can predict because it is the people's own judgment noise), and the
annotators' shared part of the people-only SE (annotators in general, as there). With lambda 0 it is
the people-only bound on the rated pairs (uniform) or on every pair of the draw (weighted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.active_ppi import weighted_ppi
from analysis.broken_share import mean_square, share_bounds
from analysis.equivalence.checks import TestResult
from analysis.frames import ANNOTATOR, PAIR_ID
from analysis.prediction_powered import combine_parts, power_tuned_lambda

__all__ = ["PPIBrokenShare", "PPIMeanSquare", "ppi_broken_share", "ppi_mean_square"]

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PPIMeanSquare:
    """Per study (arrays): the prediction-powered ``estimate`` of M with its ``se`` and ``lam``, and
    the people-only ``people_estimate``/``people_se`` (lambda 0) on the same sample."""

    estimate: Array
    se: Array
    lam: Array
    people_estimate: Array
    people_se: Array


def ppi_mean_square(
    u: npt.ArrayLike,
    floor: npt.ArrayLike,
    prediction: npt.ArrayLike,
    drawn: npt.ArrayLike,
    annotator_part: npt.ArrayLike,
    probability: npt.ArrayLike | None = None,
) -> PPIMeanSquare:
    """The prediction-powered mean squared gap over every judged pair (studies on the leading axis).

    Parameters
    ----------
    u, floor : array_like, shape (S, N)
        Per pair the people's unbiased estimate of ``g_i^2`` and its variance at the boundary under
        normal noise (:attr:`analysis.broken_share.MeanSquare.pair_estimate` / ``pair_floor``); any
        value where not drawn.
    prediction : array_like, shape (S, N)
        The judge's prediction of ``g_i^2`` on every pair.
    drawn : array_like of bool, shape (S, N)
        The pairs people rated.
    annotator_part : array_like, shape (S,)
        The annotators' shared variance (:attr:`analysis.broken_share.MeanSquare.annotator_part`).
    probability : array_like, shape (S, N), optional
        Each pair's inclusion probability of the tool's draw: the correction is then weighted by its
        inverse. None: the rated pairs are a uniform sample of equal size in every study.

    Examples
    --------
    With lambda 0 (a constant prediction) it is the people-only mean of ``u`` on the rated pairs:

    >>> res = ppi_mean_square([[1.0, 2.0, 3.0, 0.0]], [[0.0] * 4], [[1.0] * 4],
    ...                       [[True, True, True, False]], [0.0])
    >>> float(res.estimate[0]), float(res.lam[0]), float(res.people_estimate[0])
    (2.0, 0.0, 2.0)
    """
    u = np.asarray(u, dtype=np.float64)
    fl_all = np.asarray(prediction, dtype=np.float64)
    drawn = np.asarray(drawn, dtype=bool)
    floor = np.where(drawn, np.asarray(floor, dtype=np.float64), 0.0)
    annot = np.asarray(annotator_part, dtype=np.float64)
    if probability is not None:
        p = np.asarray(probability, dtype=np.float64)
        args: dict[str, Any] = {"h": u, "f": fl_all, "drawn": drawn, "probability": p}
        zero: dict[str, Any] = {"annotator_c2": 0.0, "annotator_unit_var": 0.0, "n_annotators": 2}
        mixed = weighted_ppi(**args, **zero)
        people = weighted_ppi(**args, **zero, lam=0.0)
        w = np.where(drawn, 1.0 / p, 0.0)
        floor_w = (w * w * floor).sum(-1) / w.sum(-1) ** 2
        judge = mixed.lam**2 * fl_all.var(-1, ddof=1) / fl_all.shape[-1]
        var = np.maximum(mixed.se**2, floor_w + judge) + annot
        people_var = np.maximum(people.se**2, floor_w) + annot
        return PPIMeanSquare(mixed.estimate, np.sqrt(var), mixed.lam, people.estimate, np.sqrt(people_var))
    counts = drawn.sum(-1)
    if counts.min() != counts.max():
        raise ValueError("a uniform sample needs the same number of rated pairs in every study")
    n, s = int(counts[0]), drawn.shape[0]
    h = u[drawn].reshape(s, n)
    fl = fl_all[drawn].reshape(s, n)
    fu = fl_all[~drawn].reshape(s, -1)
    lam = power_tuned_lambda(h, fl, fu)
    floor_l = floor.sum(-1) / n**2
    correction = h - lam[:, None] * fl
    var_correction = np.maximum(correction.var(-1, ddof=1) / n, floor_l) + annot
    var, _, _ = combine_parts(var_correction, np.full(s, n - 1.0), lam, fu)
    estimate = correction.mean(-1) + (lam * fu.mean(-1) if fu.shape[-1] else 0.0)
    people_var = np.maximum(h.var(-1, ddof=1) / n, floor_l) + annot
    return PPIMeanSquare(estimate, np.sqrt(var), lam, h.mean(-1), np.sqrt(people_var))


@dataclass(frozen=True)
class PPIBrokenShare(TestResult):
    """Markov's bound on the share of broken pairs over every judged pair, with and without the judge.

    ``n_pairs``: the judged pairs the bound speaks for (N), ``n_rated`` those people rated (H);
    ``mean_square``/``mean_square_se``/``mean_square_upper``: the prediction-powered M, its SE and
    one-sided upper bound; ``upper``: the bound on the share; ``below``: ``upper < max_share``;
    ``people_*`` the same with lambda 0; ``effective_pairs``: ``n_rated * people_se^2 / se^2``.
    """

    n_pairs: int
    n_rated: int
    lam: float
    mean_square: float
    mean_square_se: float
    mean_square_upper: float
    upper: float
    below: bool
    effective_pairs: float
    people_mean_square: float
    people_upper: float
    people_below: bool
    max_share: float
    margin: float


def ppi_broken_share(
    differences: pd.DataFrame,
    judge_gap: pd.Series,
    *,
    margin: float,
    max_share: float = 0.1,
    alpha: float = 0.05,
    probability: pd.Series | None = None,
) -> PPIBrokenShare:
    """Markov's bound on the share of pairs beyond +-margin over every pair the judge rated.

    Parameters
    ----------
    differences : pandas.DataFrame
        The people's judgments ``pair_id, annotator, diff``.
    judge_gap : pandas.Series
        The judge's chosen - rejected gap per pair id (its square predicts ``g_i^2``).
    margin, max_share, alpha : float
        The equivalence margin, the largest tolerated share of broken pairs, the one-sided level.
    probability : pandas.Series, optional
        Each pair's inclusion probability of the tool's draw (by pair id): the bound then speaks for
        the judged pairs with a probability, each rated pair weighted by its inverse. None: the rated
        pairs are a uniform sample of the judged ones.

    Raises
    ------
    ValueError
        Fewer than 3 rated pairs the judge also rated, or none it rated beyond them.
    """
    gap = judge_gap.dropna().astype(float).groupby(level=0).mean()
    index = gap.index if probability is None else probability.dropna().index.intersection(gap.index)
    rated = differences[differences[PAIR_ID].isin(index)]
    pair, pair_ids = pd.factorize(rated[PAIR_ID], sort=True)
    who, _ = pd.factorize(rated[ANNOTATOR], sort=True)
    if len(pair_ids) < 3 or len(pair_ids) == len(index):
        raise ValueError(
            f"need at least 3 pairs rated by people and the judge and some rated by the judge only, got "
            f"{len(pair_ids)} of {len(index)}"
        )
    parts = mean_square(
        rated["diff"].to_numpy(float),
        pair,
        who,
        np.zeros(len(pair_ids), dtype=np.int64),
        floor_mean_square=float(max_share) * float(margin) ** 2,
    )
    position = pd.Index(index).get_indexer(pair_ids)
    u, floor = np.zeros(len(index)), np.zeros(len(index))
    u[position], floor[position] = parts.pair_estimate, parts.pair_floor
    drawn = np.zeros(len(index), dtype=bool)
    drawn[position] = True
    res = ppi_mean_square(
        u[None],
        floor[None],
        (gap.reindex(index).to_numpy(float) ** 2)[None],
        drawn[None],
        parts.annotator_part,
        None if probability is None else probability.reindex(index).to_numpy(float)[None],
    )
    upper, _, m_up = share_bounds(res.estimate, res.se, margin=margin, alpha=alpha)
    people_upper, _, _ = share_bounds(res.people_estimate, res.people_se, margin=margin, alpha=alpha)
    se, people_se = float(res.se[0]), float(res.people_se[0])
    return PPIBrokenShare(
        n_pairs=len(index),
        n_rated=len(pair_ids),
        lam=float(res.lam[0]),
        mean_square=float(res.estimate[0]),
        mean_square_se=se,
        mean_square_upper=float(m_up[0]),
        upper=float(upper[0]),
        below=bool(upper[0] < max_share),
        effective_pairs=len(pair_ids) * people_se**2 / se**2 if se > 0 else math.nan,
        people_mean_square=float(res.people_estimate[0]),
        people_upper=float(people_upper[0]),
        people_below=bool(people_upper[0] < max_share),
        max_share=float(max_share),
        margin=float(margin),
    )
