"""Prediction-powered verdicts: an LLM judge rates every pair, people rate a uniform sample of them.

PPI++ (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient Prediction-Powered Inference",
arXiv:2311.01453) estimates a mean over all pairs from the judge's value ``f`` on every pair and the
people's value ``h`` on a uniform random sample of ``n`` of them. With ``U`` the ``N_u`` judged pairs
no person rated and ``L`` the ``n`` rated ones,

    theta = lambda * mean_U(f) + mean_L(h - lambda * f)

is unbiased for the population mean of ``h`` whatever the judge is (biased, position-driven,
anti-correlated or right on some categories only): the judge enters only through a difference whose
mean is zero. The power-tuned ``lambda = Cov_L(h, f) / ((1 + n / N_u) Var_{L+U}(f))``, clipped to
[0, 1], minimizes the variance; a judge whose values do not track the people's gets lambda near 0 and
the estimate is the people-only one. The "unlabeled" sample is the pairs no person rated, so the two
means are independent.

Here ``h`` is the people's chosen - rejected gap of a pair and the human correction
``mean_L(h - lambda f)`` is the intercept of the crossed random-effects model (pair and annotator
effects, Satterthwaite df and the few-annotator guard: :func:`analysis.crossed_mean.crossed_mean`) fitted
to the per-judgment values ``d_ij - lambda f_i``; the judge's ``f_i`` is a pair-level constant, so the
annotator variance of the correction is the people's own and the verdict generalizes over annotators
as the people-only verdict does. The variance of ``theta`` is the crossed model's variance of the
correction plus ``lambda^2 Var_U(f) / N_u``, with Satterthwaite df from the two parts. The effective
sample size is the number of rated pairs a people-only analysis with this panel would need for the
same variance: ``n * se_people^2 / se^2``.

Validity needs the rated pairs to be a uniform random sample of the judged pairs (the tool's own
draw); :func:`ppi_mean` equals ``ppi_py.ppi_mean_pointestimate`` / ``ppi_mean_ci`` (PyPI
``ppi-python``, ``lam=None``) on the same data (``tests/test_prediction_powered.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.crossed_mean import crossed_mean
from analysis.equivalence import tost_from_estimate
from analysis.equivalence.checks import WarnedResult, check_margin
from analysis.frames import ANNOTATOR, PAIR_ID
from analysis.lazy import stats

__all__ = [
    "PPICore",
    "PPIMean",
    "PPIQuestion",
    "PeopleFigures",
    "PredictionPowered",
    "PredictionPoweredMean",
    "PredictionPoweredShare",
    "combine_parts",
    "mean_result",
    "power_tuned_lambda",
    "ppi_mean",
    "prediction_powered_share",
    "prediction_powered_superiority",
    "prediction_powered_tost",
    "share_result",
    "tost_result",
]

MODEL = (
    "PPI++ (power-tuned lambda) over every judged pair; the human correction d - lambda * judge in a "
    "crossed random-effects model (pair and annotator effects, Satterthwaite df)"
)


def power_tuned_lambda(
    h: npt.ArrayLike, f_labeled: npt.ArrayLike, f_unlabeled: npt.ArrayLike
) -> npt.NDArray[np.float64]:
    """The PPI++ power-tuning parameter of a mean, along the last axis (leading axes are a batch).

    ``lambda = Cov(h, f_L) / ((1 + n / N_u) Var(f_L, f_U))`` clipped to [0, 1], with the covariance
    over the ``n`` labeled items (divisor n) and the variance over the labeled and unlabeled
    predictions together (divisor n + N_u - 1), the conventions of ``ppi_py``. 0 without unlabeled
    items or without variation in the predictions.

    Cov = 2/3 over the labeled items, Var = 4/4 = 1 over all five predictions, 1 + n/N_u = 2.5:

    >>> round(float(power_tuned_lambda([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 3.0])), 4)
    0.2667
    """
    h = np.asarray(h, dtype=np.float64)
    fl = np.asarray(f_labeled, dtype=np.float64)
    fu = np.asarray(f_unlabeled, dtype=np.float64)
    n, n_u = h.shape[-1], fu.shape[-1]
    if fl.shape != h.shape or fu.shape[:-1] != h.shape[:-1]:
        raise ValueError(
            f"h and f_labeled must match and share leading axes with f_unlabeled: {h.shape}, {fl.shape}, "
            f"{fu.shape}"
        )
    if n < 2 or n_u < 1:
        return np.zeros(h.shape[:-1])
    cov = ((h - h.mean(-1, keepdims=True)) * (fl - fl.mean(-1, keepdims=True))).sum(-1) / n
    both = np.concatenate([fl, fu], axis=-1)
    var = both.var(-1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.where(var > 0, cov / ((1.0 + n / n_u) * np.where(var > 0, var, 1.0)), 0.0)
    return np.clip(lam, 0.0, 1.0)


@dataclass(frozen=True)
class PPIMean:
    """A PPI++ mean with independent labeled items (one value each): ``estimate``, its ``se`` (from
    the two parts' standard deviations with divisor n, as ``ppi_py``), the two-sided 1 - alpha normal
    interval ``ci_low``/``ci_high`` and ``lam``."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    lam: float
    n_labeled: int
    n_unlabeled: int


def ppi_mean(
    y: npt.ArrayLike,
    yhat: npt.ArrayLike,
    yhat_unlabeled: npt.ArrayLike,
    *,
    alpha: float = 0.1,
    lam: float | None = None,
) -> PPIMean:
    """The PPI++ estimate of a mean and its normal interval (one label per labeled item).

    Parameters
    ----------
    y : array_like, shape (n,)
        The gold labels (here: the people's value of each rated item).
    yhat : array_like, shape (n,)
        The predictions on the same items.
    yhat_unlabeled : array_like, shape (N_u,)
        The predictions on the items without a label.
    alpha : float, default 0.1
        The interval is two-sided at 1 - alpha.
    lam : float, optional
        The tuning parameter; None picks the power-tuned one (:func:`power_tuned_lambda`), 0 gives the
        classical mean, 1 the original PPI.

    Returns
    -------
    PPIMean

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.normal(0, 1, 1100)
    >>> judge = truth + rng.normal(0, 0.3, 1100)
    >>> res = ppi_mean(truth[:100], judge[:100], judge[100:])
    >>> round(res.lam, 3), res.n_labeled, res.n_unlabeled  # about Cov / (1.1 Var) = 1 / (1.1 * 1.09)
    (0.795, 100, 1000)
    """
    yl = np.asarray(y, dtype=np.float64)
    fl = np.asarray(yhat, dtype=np.float64)
    fu = np.asarray(yhat_unlabeled, dtype=np.float64)
    if yl.ndim != 1 or fl.shape != yl.shape or fu.ndim != 1:
        raise ValueError("y and yhat must be 1-d of the same length and yhat_unlabeled 1-d")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    n, n_u = len(yl), len(fu)
    if n < 2 or n_u < 1:
        raise ValueError(f"need at least 2 labeled and 1 unlabeled item, got {n} and {n_u}")
    if lam is None:
        lam = float(power_tuned_lambda(yl, fl, fu))
    estimate = float(lam * fu.mean() + (yl - lam * fl).mean())
    imputed = float((lam * fu).std()) / math.sqrt(n_u)
    rectifier = float((yl - lam * fl).std()) / math.sqrt(n)
    se = math.sqrt(imputed**2 + rectifier**2)
    half = float(stats.norm.ppf(1 - alpha / 2)) * se
    return PPIMean(estimate, se, estimate - half, estimate + half, float(lam), n, n_u)


def combine_parts(
    var_correction: npt.ArrayLike,
    df_correction: npt.ArrayLike,
    lam: npt.ArrayLike,
    f_unlabeled: npt.ArrayLike,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Variance and Satterthwaite df of ``lambda * mean_U(f) + correction`` (vectorized over a batch).

    ``var_correction``/``df_correction``: the variance of the human correction and its df; the
    judge part has variance ``lambda^2 Var_U(f) / N_u`` (divisor N_u - 1) on N_u - 1 df. Returns
    ``(var, df, var_judge)``.
    """
    vc = np.asarray(var_correction, dtype=np.float64)
    dc = np.asarray(df_correction, dtype=np.float64)
    lam = np.asarray(lam, dtype=np.float64)
    fu = np.asarray(f_unlabeled, dtype=np.float64)
    n_u = fu.shape[-1]
    if n_u >= 2:
        vu = lam**2 * fu.var(-1, ddof=1) / n_u
    else:
        vu = np.zeros(np.broadcast(vc, lam).shape)
    total = vc + vu
    with np.errstate(invalid="ignore", divide="ignore"):
        denom = vc**2 / dc + np.where(vu > 0, vu**2 / max(n_u - 1, 1), 0.0)
        df = np.where(denom > 0, total**2 / np.where(denom > 0, denom, 1.0), dc)
    return total, df, vu


@dataclass(frozen=True)
class PredictionPowered(WarnedResult):
    """The prediction-powered TOST of chosen - rejected on one item, over every judged pair.

    ``estimate``/``se``/``df``/``ci_low``/``ci_high``/``p_lower``/``p_upper``/``pvalue``/
    ``equivalent``: the PPI++ mean gap (interval 1 - 2*alpha) and its TOST against ``low``/``high``.
    ``n_pairs``: the judged pairs the verdict speaks for (N); ``n_rated``: those people rated (H);
    ``effective_pairs``: E; ``lam``: the power-tuned lambda; ``people_*``: the people-only crossed
    model on the rated pairs; ``correlation``: of the judge's gap with the people's pair-mean gap.
    """

    item: str
    judge: str
    model: str
    estimate: float
    se: float
    df: float
    ci_low: float
    ci_high: float
    p_lower: float
    p_upper: float
    pvalue: float
    equivalent: bool
    low: float
    high: float
    alpha: float
    lam: float
    correlation: float
    n_pairs: int
    n_rated: int
    n_unrated: int
    n_judgments: int
    n_annotators: int
    effective_pairs: float
    people_estimate: float
    people_se: float
    people_df: float
    people_ci_low: float
    people_ci_high: float
    people_equivalent: bool
    warnings: list[str] = field(default_factory=list)


class PeopleFigures(Protocol):
    """The people-only estimate beside a prediction-powered one (its judge weight 0): the figures both
    kinds of human sample give (:class:`analysis.crossed_mean.CrossedMean` for a uniform sample)."""

    @property
    def estimate(self) -> float: ...
    @property
    def se(self) -> float: ...
    @property
    def df(self) -> float: ...
    @property
    def n_annotators(self) -> int: ...
    @property
    def ci_low(self) -> float: ...
    @property
    def ci_high(self) -> float: ...
    @property
    def p_greater(self) -> float: ...
    @property
    def annotator_estimable(self) -> bool: ...


@dataclass(frozen=True)
class PPICore:
    """The PPI++ mean of a per-judgment value over every judged pair, and the people-only one."""

    estimate: float
    se: float
    df: float
    lam: float
    correlation: float
    n_rated: int
    n_unrated: int
    n_obs: int
    effective: float
    people: PeopleFigures
    messages: list[str]


def _core(values: pd.DataFrame, column: str, judge_value: pd.Series, item: str, alpha: float) -> PPICore:
    """PPI++ with the human correction in the crossed model (see the module docstring)."""
    judged = judge_value.dropna().astype(float).groupby(level=0).mean()
    messages: list[str] = []
    rated = values[values[PAIR_ID].isin(judged.index)]
    left_out = int(values[PAIR_ID].nunique() - rated[PAIR_ID].nunique())
    if left_out:
        messages.append(f"{left_out} rated pair(s) without a judge rating are left out")
    n_rated = int(rated[PAIR_ID].nunique())
    if n_rated < 2:
        raise ValueError(f"need at least 2 pairs rated by people and the judge on '{item}', got {n_rated}")
    y = rated[column].to_numpy(dtype=float)
    pairs, annotators = rated[PAIR_ID].to_numpy(), rated[ANNOTATOR].to_numpy()
    pair_mean = rated.groupby(PAIR_ID, sort=False)[column].mean()
    h = pair_mean.to_numpy(dtype=float)
    f_l = judged.reindex(pair_mean.index).to_numpy(dtype=float)
    f_u = judged[~judged.index.isin(pair_mean.index)].to_numpy(dtype=float)
    lam = float(power_tuned_lambda(h, f_l, f_u))
    correlation = float(np.corrcoef(h, f_l)[0, 1]) if np.ptp(h) > 0 and np.ptp(f_l) > 0 else math.nan
    if len(f_u) == 0:
        messages.append("the judge rated no pair beyond the people's: the verdict is the people-only one")
    people = crossed_mean(y, pairs, annotators, item=item, alpha=alpha)
    correction = crossed_mean(
        y - lam * judged.reindex(pairs).to_numpy(dtype=float), pairs, annotators, item=item, alpha=alpha
    )
    messages += [w for w in correction.warnings if w not in messages]
    if not people.annotator_estimable:
        messages.append("only 1 annotator: the result is conditional on this annotator")
    estimate = correction.estimate + (lam * float(f_u.mean()) if len(f_u) else 0.0)
    var, df, _ = combine_parts(correction.se**2, correction.df, lam, f_u)
    se, df_f = math.sqrt(float(var)), float(df)
    if not math.isfinite(df_f):
        df_f = float(max(n_rated - 1, 1))
    effective = n_rated * people.se**2 / se**2 if se > 0 else math.nan
    return PPICore(
        estimate, se, df_f, lam, correlation, n_rated, len(f_u), len(y), float(effective), people, messages
    )


@dataclass(frozen=True)
class PPIQuestion:
    """What a prediction-powered TOST asks: is the chosen - rejected gap on `item` within the symmetric
    `margin` (> 0), each one-sided test at level `alpha` (the interval is 1 - 2*alpha); `judge` is the
    judge's name (reported only)."""

    item: str
    margin: float
    alpha: float = 0.05
    judge: str = ""


def prediction_powered_tost(
    differences: pd.DataFrame, judge_gap: pd.Series, question: PPIQuestion
) -> PredictionPowered:
    """Equivalence of chosen and rejected on one item over every pair the judge rated.

    Parameters
    ----------
    differences : pandas.DataFrame
        The people's judgments: ``pair_id, annotator, diff`` (chosen - rejected), as
        :func:`analysis.aggregates.judgment_differences` gives them.
    judge_gap : pandas.Series
        The judge's chosen - rejected gap on the same item, indexed by pair id, for every pair it rated
        (rated by people or not). Rated pairs without a judge gap are left out (with a warning).
    question : PPIQuestion
        The item, its margin, the level and the judge.

    Returns
    -------
    PredictionPowered

    Raises
    ------
    ValueError
        A bad margin or alpha, or fewer than 2 rated pairs the judge also rated.

    Notes
    -----
    See the module docstring. Without unrated judged pairs lambda is 0 and the result is the
    people-only one. The people must have rated a uniform random sample of the judged pairs.
    """
    core = _core(differences, "diff", judge_gap, question.item, question.alpha)
    return tost_result(core, question, MODEL)


def tost_result(core: PPICore, question: PPIQuestion, model: str) -> PredictionPowered:
    """The TOST of a PPI++ core's estimate against the question's margin, beside the people-only one
    (neither equivalent unless the annotator variance is estimable). One home for uniform and weighted
    (active) samples."""
    margin, alpha = check_margin(question.margin), question.alpha
    people = core.people
    tost = tost_from_estimate(core.estimate, core.se, core.df, -margin, margin, alpha, core.n_obs, model)
    people_df = people.df if math.isfinite(people.df) else max(core.n_rated - 1, 1)
    people_tost = tost_from_estimate(
        people.estimate, people.se, people_df, -margin, margin, alpha, core.n_obs, model
    )
    estimable = people.annotator_estimable
    return PredictionPowered(
        item=question.item,
        judge=question.judge,
        model=model,
        **tost.figures() | {"equivalent": bool(tost.equivalent and estimable), "alpha": float(tost.alpha)},
        lam=core.lam,
        correlation=core.correlation,
        n_pairs=core.n_rated + core.n_unrated,
        n_rated=core.n_rated,
        n_unrated=core.n_unrated,
        n_judgments=tost.n,
        n_annotators=people.n_annotators,
        effective_pairs=core.effective,
        people_estimate=people_tost.estimate,
        people_se=people_tost.se,
        people_df=float(people_tost.df),
        people_ci_low=people_tost.ci_low,
        people_ci_high=people_tost.ci_high,
        people_equivalent=bool(people_tost.equivalent and estimable),
        warnings=core.messages,
    )


@dataclass(frozen=True)
class PredictionPoweredShare:
    """The prediction-powered one-sided test that people prefer chosen, over every judged pair.

    ``share``: the PPI++ mean preference score (chosen 1, tie 0.5, rejected 0) with its 1 - 2*alpha
    interval ``ci_low``/``ci_high`` and the one-sided ``p_greater`` of share > 0.5; ``people_*`` the
    people-only crossed model on the rated pairs; the rest as in :class:`PredictionPowered`.
    """

    judge: str
    share: float
    se: float
    df: float
    ci_low: float
    ci_high: float
    p_greater: float
    lam: float
    correlation: float
    n_pairs: int
    n_rated: int
    effective_pairs: float
    people_share: float
    people_ci_low: float
    people_ci_high: float
    people_p_greater: float
    annotator_estimable: bool
    warnings: list[str] = field(default_factory=list)


def _one_sided(core: PPICore, alpha: float, shift: float | None) -> dict[str, Any]:
    """The fields that :class:`PredictionPoweredShare` and :class:`PredictionPoweredMean` share: the
    one-sided test of ``core.estimate > 0`` and the 1 - 2*alpha intervals, shifted by `shift` (the
    share is tested as score - 0.5)."""
    t = float(stats.t.ppf(1 - alpha, core.df))
    low, high = core.estimate - t * core.se, core.estimate + t * core.se
    people_low, people_high = core.people.ci_low, core.people.ci_high
    if shift is not None:
        low, high = shift + core.estimate - t * core.se, shift + core.estimate + t * core.se
        people_low, people_high = shift + people_low, shift + people_high
    return {
        "se": core.se,
        "df": core.df,
        "ci_low": low,
        "ci_high": high,
        "p_greater": float(stats.t.sf(core.estimate / core.se, core.df)) if core.se > 0 else math.nan,
        "lam": core.lam,
        "correlation": core.correlation,
        "n_pairs": core.n_rated + core.n_unrated,
        "n_rated": core.n_rated,
        "effective_pairs": core.effective,
        "people_ci_low": people_low,
        "people_ci_high": people_high,
        "people_p_greater": core.people.p_greater,
        "annotator_estimable": core.people.annotator_estimable,
        "warnings": core.messages,
    }


def prediction_powered_share(
    scores: pd.DataFrame, judge_score: pd.Series, *, alpha: float = 0.05, judge: str = ""
) -> PredictionPoweredShare:
    """The share of judgments preferring chosen over every judged pair (one-sided against 0.5).

    Parameters
    ----------
    scores : pandas.DataFrame
        ``pair_id, annotator, score``: each judgment's preference score (1 chosen, 0.5 tie, 0 rejected).
    judge_score : pandas.Series
        The judge's prediction of that score per pair id (e.g. its preference -2..2 mapped to 0..1).
    alpha : float, default 0.05
        One-sided level; the interval is 1 - 2*alpha.
    judge : str
        The judge's name (reported only).
    """
    centred = scores.assign(score=scores["score"].astype(float) - 0.5)
    return share_result(
        _core(centred, "score", judge_score.astype(float) - 0.5, "preference", alpha), alpha, judge
    )


def share_result(core: PPICore, alpha: float, judge: str) -> PredictionPoweredShare:
    """The preference share's one-sided test from the PPI++ core of the centred scores (score - 0.5)."""
    return PredictionPoweredShare(
        judge=judge,
        share=0.5 + core.estimate,
        people_share=0.5 + core.people.estimate,
        **_one_sided(core, alpha, 0.5),
    )


@dataclass(frozen=True)
class PredictionPoweredMean:
    """The prediction-powered one-sided test that a mean chosen - rejected difference exceeds 0 over
    every judged pair (the rubric claim): ``estimate`` with its 1 - 2*alpha interval and ``p_greater``;
    ``people_*`` the people-only crossed model on the rated pairs; the rest as in
    :class:`PredictionPowered`."""

    item: str
    judge: str
    estimate: float
    se: float
    df: float
    ci_low: float
    ci_high: float
    p_greater: float
    lam: float
    correlation: float
    n_pairs: int
    n_rated: int
    effective_pairs: float
    people_estimate: float
    people_ci_low: float
    people_ci_high: float
    people_p_greater: float
    annotator_estimable: bool
    warnings: list[str] = field(default_factory=list)


def prediction_powered_superiority(
    differences: pd.DataFrame, judge_gap: pd.Series, *, item: str, alpha: float = 0.05, judge: str = ""
) -> PredictionPoweredMean:
    """The mean chosen - rejected difference on `item` over every judged pair, one-sided against 0.

    ``differences``: the people's ``pair_id, annotator, diff``; ``judge_gap``: the judge's gap per pair
    id (rated by people or not). The same PPI++ core as :func:`prediction_powered_tost`.
    """
    return mean_result(_core(differences, "diff", judge_gap, item, alpha), alpha, item, judge)


def mean_result(core: PPICore, alpha: float, item: str, judge: str) -> PredictionPoweredMean:
    """The one-sided test of a mean difference > 0 from its PPI++ core."""
    return PredictionPoweredMean(
        item=item,
        judge=judge,
        estimate=core.estimate,
        people_estimate=core.people.estimate,
        **_one_sided(core, alpha, None),
    )
