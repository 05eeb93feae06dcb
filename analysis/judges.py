"""LLM judges against people: the alternative annotator test, agreement, accuracy and a bias card.

A judge's ratings never enter the human analysis; they are compared with it here.

The alternative annotator test (alt-test) of Calderon, Reichart and Dror (ACL 2025, "The Alternative
Annotator Test for LLM-as-a-Judge: How to Statistically Justify Replacing Human Annotators with LLMs",
aclanthology.org/2025.acl-long.782; reference code github.com/nitaytech/AltTest) asks, per rated item,
whether the judge represents the other annotators at least as well as an annotator does:

- Leave annotator ``j`` out. On every instance ``i`` that ``j`` rated, score the judge's annotation and
  ``j``'s own against the remaining annotators of ``i`` with an alignment score ``S`` (negative RMSE
  for ratings, accuracy for labels). ``W_f(i) = 1`` when ``S(judge) >= S(j)``, ``W_h(i) = 1`` when
  ``S(j) >= S(judge)`` (a tie counts for both).
- ``rho_f(j)`` and ``rho_h(j)`` are the means of ``W_f`` and ``W_h`` over ``j``'s instances. One-sided
  paired t test of ``H0: rho_h - rho_f >= epsilon`` against ``H1: rho_h - rho_f < epsilon`` (the
  one-sample t test of ``d = W_h - W_f`` against ``epsilon``, alternative "less"); ``epsilon`` is the
  cost-benefit margin that credits the judge for being cheaper.
- Benjamini-Yekutieli (1995/2001) over the annotators at level ``q``; the **winning rate** is the share
  of annotators whose null is rejected; the judge **can replace** the annotators when it is at least
  0.5. The **advantage probability** is the mean of ``rho_f`` over annotators (for comparing judges).

The paper's recommendations used here (its FAQ, also in the reference README): ``epsilon = 0.2`` for
expert annotators, 0.15 for skilled ones (students, trained workers) and 0.1 for crowd workers
(:data:`EPSILON`); at least 3 annotators (2 work, but without a consensus signal) and at least 30
instances per annotator for the t test's normality (50-100 recommended; :data:`MIN_ANNOTATORS`,
:data:`MIN_ITEMS`). Annotators with fewer instances are left out of the test as in the reference code;
with fewer than 3 annotators left there is no verdict, only a note.

Choices the paper leaves open (README "LLM judges"): the instance is the **pair** (both responses'
ratings form one annotation, scored by negative RMSE over both), because the t test needs independent
instances and the two responses of a pair share a question, a profile and the annotator's reading;
the preference is scored by **accuracy on its direction** (chosen, tie, rejected), as the paper scores
pairwise labels (MT-Bench); the rubric item is the per-response mean over aspects (the one rubric
score of :func:`analysis.frames.rubric_scores`); a pair the judge saw in both orders counts with the
mean of the two; Benjamini-Yekutieli runs per (judge, item) over the annotators, at ``q = alpha``.
A zero-variance ``d`` gets p = 0 when its mean is below epsilon and p = 1 otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from analysis.agreement import alpha_ci, krippendorff_alpha
from analysis.equivalence import wilson_interval
from analysis.frames import (
    ANNOTATOR,
    CHOSEN,
    CHOSEN_CHARS,
    CONFIDENCE,
    ITEM,
    PAIR_ID,
    PREFERENCE,
    REJECTED,
    REJECTED_CHARS,
    RESPONSE,
    RUBRIC_ITEM,
    RUBRIC_PREFIX,
    VALUE,
    judgments,
    pair_majority,
    rubric_scores,
)

__all__ = [
    "EPSILON",
    "JUDGE",
    "JUDGE_COLUMNS",
    "MIN_ANNOTATORS",
    "MIN_ITEMS",
    "ORDER",
    "ORDERS",
    "PREFERENCE_ITEM",
    "AltTest",
    "JudgeSection",
    "alt_test",
    "benjamini_yekutieli",
    "calibration",
    "disagreement_queue",
    "judge_section",
]

JUDGE = "judge"
ORDER = "order"
CHOSEN_FIRST = "chosen_first"
REJECTED_FIRST = "rejected_first"
#: The orders a judge may have been shown a pair in ("" = not recorded).
ORDERS = ("", CHOSEN_FIRST, REJECTED_FIRST)
PREFERENCE_ITEM = "preference"
#: The judge frame: one row per (pair, judge, order, response, item) rating; `preference` (-2..2,
#: positive = chosen) and `confidence` (0..1) are pair level, repeated on the pair's rows; a row with
#: empty response and item carries only the preference.
JUDGE_COLUMNS = (PAIR_ID, JUDGE, ORDER, RESPONSE, ITEM, VALUE, PREFERENCE, CONFIDENCE)
#: The paper's cost-benefit margin per kind of annotator (FAQ "How do I select the epsilon value?").
EPSILON = {"expert": 0.2, "skilled": 0.15, "crowd": 0.1}
#: The paper's minimum annotators (FAQ "Why at least three human annotators?").
MIN_ANNOTATORS = 3
#: The paper's minimum instances per annotator for the t test (FAQ "How many instances?").
MIN_ITEMS = 30
Scoring = Literal["neg_rmse", "accuracy"]
_TOL = 1e-9


# ------------------------------------------------------------------------------------ the kernel


@dataclass(frozen=True)
class AltTest:
    """The alt-test on arrays; every field has the leading (batch) shape of the input, annotator
    fields end with the annotator axis ``m``."""

    n_items: npt.NDArray[np.int64]  # (..., m) instances per annotator
    rho_judge: npt.NDArray[np.float64]  # (..., m) mean W_f
    rho_annotator: npt.NDArray[np.float64]  # (..., m) mean W_h
    p_value: npt.NDArray[np.float64]  # (..., m) one-sided p of H0: rho_h - rho_f >= epsilon
    tested: npt.NDArray[np.bool_]  # (..., m) at least min_items instances
    beaten: npt.NDArray[np.bool_]  # (..., m) null rejected by Benjamini-Yekutieli
    n_tested: npt.NDArray[np.int64]  # (...)
    winning_rate: npt.NDArray[np.float64]  # (...) NaN without a tested annotator
    advantage_probability: npt.NDArray[np.float64]  # (...) mean rho_judge over tested annotators


def benjamini_yekutieli(
    p: npt.ArrayLike, q: float, *, valid: npt.ArrayLike | None = None
) -> npt.NDArray[np.bool_]:
    """Which hypotheses Benjamini-Yekutieli rejects at FDR ``q``, along the last axis.

    The step-up rule with thresholds ``k / m * q / H_m`` (``H_m = 1 + 1/2 + ... + 1/m``), valid under
    any dependence (Benjamini & Yekutieli 2001). Only the ``valid`` entries count (``m`` is their
    number); NaN p-values are never rejected.

    >>> benjamini_yekutieli([0.001, 0.02, 0.04], 0.05).tolist()  # H_3 = 11/6: thresholds .009 .018 .027
    [True, False, False]
    """
    p = np.asarray(p, dtype=np.float64)
    ok = np.ones(p.shape, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
    ok = ok & np.isfinite(p)
    m_all = p.shape[-1]
    m = (np.ones(p.shape, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)).sum(-1)
    harmonic = np.concatenate([[1.0], np.cumsum(1.0 / np.arange(1, m_all + 1))])[m]  # H_0 := 1
    pp = np.where(ok, p, np.inf)
    order = np.argsort(pp, axis=-1, kind="stable")
    ranked = np.take_along_axis(pp, order, axis=-1)
    k = np.arange(1, m_all + 1)
    thresholds = k / np.maximum(m, 1)[..., None] * (q / harmonic)[..., None]
    below = ranked <= thresholds
    n_reject = np.where(below.any(-1), m_all - np.argmax(below[..., ::-1], axis=-1), 0)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(m_all), order.shape).copy(), axis=-1)
    return (rank < n_reject[..., None]) & ok


def alt_test(
    humans: npt.ArrayLike,
    judge: npt.ArrayLike,
    *,
    epsilon: float,
    q: float = 0.05,
    scoring: Scoring = "neg_rmse",
    min_items: int = MIN_ITEMS,
) -> AltTest:
    """The alternative annotator test (Calderon, Reichart & Dror 2025), vectorised over studies.

    Parameters
    ----------
    humans : array_like, shape (..., m, n, r)
        Annotator ``j``'s annotation of instance ``i`` (``r`` components, e.g. the chosen and the
        rejected response's rating); NaN where ``j`` did not rate ``i``. For ``scoring="accuracy"``
        ``r`` is 1 and the values are category codes.
    judge : array_like, shape (..., n, r)
        The judge's annotation; NaN where it has none (the instance is then left out).
    epsilon : float
        The cost-benefit margin (:data:`EPSILON`).
    q : float, default 0.05
        FDR level of Benjamini-Yekutieli over the annotators.
    scoring : {"neg_rmse", "accuracy"}
        The alignment score with the remaining annotators: minus the root mean squared difference
        over them and the components, or the share of them with the same label.
    min_items : int, default 30
        Annotators with fewer instances (rated by them, the judge and one more annotator) are left out.

    Returns
    -------
    AltTest

    Examples
    --------
    Three annotators agree on every label and the judge too: the judge ties everyone (d = 0 < 0.1)
    and beats all three.

    >>> h = np.ones((3, 40, 1)); f = np.ones((40, 1))
    >>> r = alt_test(h, f, epsilon=0.1, scoring="accuracy")
    >>> float(r.winning_rate), float(r.advantage_probability)
    (1.0, 1.0)
    """
    h = np.asarray(humans, dtype=np.float64)
    f = np.asarray(judge, dtype=np.float64)
    if h.ndim < 3 or f.shape != h.shape[:-3] + h.shape[-2:]:
        raise ValueError(f"humans must be (..., m, n, r) and judge (..., n, r); got {h.shape} and {f.shape}")
    present = np.asarray(~np.isnan(h).any(-1), dtype=bool)  # (..., m, n)
    count = present.sum(-2)  # (..., n)
    usable = ~np.isnan(f).any(-1) & (count >= 2)  # (..., n)
    hz = np.where(present[..., None], h, 0.0)
    fz = np.where(np.isnan(f), 0.0, f)[..., None, :, :]  # (..., 1, n, r)
    if scoring == "neg_rmse":
        s1 = hz.sum(-3, keepdims=True)
        s2 = (hz**2).sum(-3, keepdims=True)
        nn = count[..., None, :, None].astype(np.float64)
        # squared distance to the other annotators (the term of j itself is 0 for j and is removed for f)
        loss_h = (nn * hz**2 - 2 * hz * s1 + s2).sum(-1)
        loss_f = (nn * fz**2 - 2 * fz * s1 + s2).sum(-1) - ((fz - hz) ** 2).sum(-1)
        scale = np.maximum(np.abs(loss_h), np.abs(loss_f)) + 1.0
        judge_wins = loss_f <= loss_h + _TOL * scale
        human_wins = loss_h <= loss_f + _TOL * scale
    elif scoring == "accuracy":
        if h.shape[-1] != 1:
            raise ValueError("accuracy scoring takes one component (r = 1)")
        labels = np.unique(np.concatenate([h[~np.isnan(h)], f[~np.isnan(f)]]))
        hc = np.where(present, np.searchsorted(labels, np.nan_to_num(h[..., 0])), -1)
        fc = np.where(np.isnan(f[..., 0]), -1, np.searchsorted(labels, np.nan_to_num(f[..., 0])))
        n_labels = max(len(labels), 1)
        onehot = (hc[..., None] == np.arange(n_labels)) & present[..., None]  # (..., m, n, K)
        counts = onehot.sum(-3)  # (..., n, K)
        same_h = np.take_along_axis(counts[..., None, :, :], np.maximum(hc, 0)[..., None], -1)[..., 0] - 1
        fcb = np.broadcast_to(np.maximum(fc, 0)[..., None, :], hc.shape)
        same_f = np.take_along_axis(counts[..., None, :, :], fcb[..., None], -1)[..., 0] - (hc == fcb)
        judge_wins = same_f >= same_h
        human_wins = same_h >= same_f
    else:
        raise ValueError(f"scoring must be neg_rmse or accuracy, got {scoring!r}")
    mask = present & usable[..., None, :]
    n_items = mask.sum(-1)
    wf = np.where(mask, judge_wins, 0).astype(np.float64)
    wh = np.where(mask, human_wins, 0).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        nf = n_items.astype(np.float64)
        rho_f = wf.sum(-1) / nf
        rho_h = wh.sum(-1) / nf
        d = np.where(mask, wh - wf, 0.0)
        mean = d.sum(-1) / nf
        var = (np.where(mask, (d - mean[..., None]) ** 2, 0.0)).sum(-1) / (nf - 1)
        t = (mean - epsilon) / np.sqrt(var / nf)
        p = stats.t.cdf(t, nf - 1)
    flat = var <= 1e-15
    p = np.where(flat, np.where(mean < epsilon, 0.0, 1.0), p)
    tested = n_items >= max(int(min_items), 2)
    p = np.where(tested, p, np.nan)
    beaten = benjamini_yekutieli(p, q, valid=tested)
    n_tested = tested.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        winning = np.where(n_tested > 0, beaten.sum(-1) / n_tested, np.nan)
        advantage = np.where(n_tested > 0, np.where(tested, rho_f, 0.0).sum(-1) / n_tested, np.nan)
    return AltTest(
        n_items=n_items,
        rho_judge=rho_f,
        rho_annotator=rho_h,
        p_value=p,
        tested=tested,
        beaten=beaten,
        n_tested=n_tested,
        winning_rate=winning,
        advantage_probability=advantage,
    )


# ----------------------------------------------------------------------------- frames -> arrays


def _judge_values(judge_rows: pd.DataFrame, item: str) -> pd.DataFrame:
    """The judge's rating per (pair, response) for a rated item, the mean over orders."""
    rows = judge_rows[judge_rows[RESPONSE].isin([CHOSEN, REJECTED])]
    if item == RUBRIC_ITEM:
        rows = rubric_scores(rows, [PAIR_ID, ORDER, RESPONSE])
    else:
        rows = rows[rows[ITEM] == item]
    return rows.groupby([PAIR_ID, RESPONSE], observed=True)[VALUE].mean().reset_index()


def _judge_preference(judge_rows: pd.DataFrame) -> pd.DataFrame:
    """Per pair: the judge's preference (mean over orders) and confidence (mean over orders)."""
    per_order = judge_rows.drop_duplicates([PAIR_ID, ORDER])
    per_order = per_order[per_order[PREFERENCE].notna()]
    return (
        per_order.groupby(PAIR_ID, observed=True)[[PREFERENCE, CONFIDENCE]]
        .mean()
        .reset_index()
        .rename(columns={PREFERENCE: "judge_preference", CONFIDENCE: "judge_confidence"})
    )


def _human_values(main: pd.DataFrame, item: str) -> pd.DataFrame:
    if item == RUBRIC_ITEM:
        return rubric_scores(main, [PAIR_ID, ANNOTATOR, RESPONSE])
    return main[main[ITEM] == item][[PAIR_ID, ANNOTATOR, RESPONSE, VALUE]]


def _arrays(
    humans: pd.DataFrame, judge: pd.DataFrame, components: Sequence[str] | None
) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Annotators, pairs, humans (m, n, r) and judge (n, r) from long values (pair, annotator,
    [response,] value) and (pair, [response,] value)."""
    pairs = sorted(set(humans[PAIR_ID]) | set(judge[PAIR_ID]))
    annotators = sorted(set(humans[ANNOTATOR]))
    cols = [RESPONSE] if components else []
    names = list(components) if components else [VALUE]
    h_wide = humans.pivot_table(index=ANNOTATOR, columns=[PAIR_ID, *cols], values=VALUE, aggfunc="mean")
    index = pd.MultiIndex.from_product([pairs, names]) if components else pd.Index(pairs)
    h_wide = h_wide.reindex(index=annotators, columns=index)
    h = h_wide.to_numpy(dtype=np.float64).reshape(len(annotators), len(pairs), len(names))
    f_wide = judge.set_index([PAIR_ID, *cols])[VALUE].groupby(level=list(range(1 + len(cols)))).mean()
    f = f_wide.reindex(index).to_numpy(dtype=np.float64).reshape(len(pairs), len(names))
    return annotators, pairs, h, f


def _alpha_pair(
    x: np.ndarray, clusters: np.ndarray, n_boot: int, seed: int, confidence: float
) -> tuple[float, float, float]:
    """Krippendorff's alpha (interval) with its pair-bootstrap interval; NaN where undefined."""
    try:
        value = krippendorff_alpha(x, level="interval")
        low, high = alpha_ci(
            x, level="interval", n_boot=n_boot, seed=seed, confidence=confidence, clusters=clusters
        )
    except ValueError:
        return math.nan, math.nan, math.nan
    return value, low, high


# ----------------------------------------------------------------------------------- the section

TABLE_COLUMNS = [
    "judge",
    "item",
    "scoring",
    "n_pairs",
    "n_annotators",
    "n_tested",
    "winning_rate",
    "advantage_probability",
    "epsilon",
    "can_replace",
    "note",
    "alpha_people",
    "alpha_people_ci_low",
    "alpha_people_ci_high",
    "alpha_with_judge",
    "alpha_with_judge_ci_low",
    "alpha_with_judge_ci_high",
    "leniency",
]
TEST_COLUMNS = ["judge", "item", "annotator", "n_items", "rho_judge", "rho_annotator", "p_value", "beaten"]
CARD_COLUMNS = [
    "judge",
    "n_pairs",
    "accuracy",
    "accuracy_ci_low",
    "accuracy_ci_high",
    "accuracy_pairs",
    "swap_pairs",
    "swap_consistency",
    "first_position_rate",
    "length_slope_judge",
    "length_slope_people",
    "leniency_preference",
    "calibration_pairs",
    "ece",
    "brier",
]
QUEUE_COLUMNS = ["pair_id", "judge", "judge_preference", "majority", "human_agreement", "n_judgments"]


@dataclass(frozen=True)
class JudgeSection:
    """The judges part of the report: flat tables (see the ``*_COLUMNS`` lists) and the settings."""

    table: pd.DataFrame  # one row per (judge, item): the alt-test, agreement, leniency
    tests: pd.DataFrame  # one row per (judge, item, annotator): the leave-one-out comparisons
    cards: pd.DataFrame  # one row per judge: accuracy vs the majority and the bias card
    queue: pd.DataFrame = field(repr=False)  # pairs where a judge and the human majority disagree
    parameters: dict[str, Any] = field(default_factory=dict)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables by name (the JSON report's keys)."""
        return {"judges": self.table, "judge_tests": self.tests, "judge_cards": self.cards}


def calibration(confidence: npt.ArrayLike, correct: npt.ArrayLike, *, bins: int = 10) -> tuple[float, float]:
    """Expected calibration error (``bins`` equal-width bins over 0..1, weighted by size; Guo et al.
    2017) and Brier score of a confidence against 0/1 outcomes. In the example, ECE = |1 - .9| / 2 +
    |.5 - .2| / 2 and Brier = (.01 + .01 + .04 + .64) / 4.

    >>> calibration([0.9, 0.9, 0.2, 0.2], [1, 1, 0, 1], bins=10)
    (0.2, 0.175)
    """
    c = np.asarray(confidence, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    if c.size == 0:
        return math.nan, math.nan
    which = np.minimum((c * bins).astype(int), bins - 1)
    ece = 0.0
    for b in np.unique(which):
        sel = which == b
        ece += sel.mean() * abs(y[sel].mean() - c[sel].mean())
    return round(float(ece), 12), round(float(((c - y) ** 2).mean()), 12)


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0:
        return math.nan
    return float(np.polyfit(x[ok], y[ok], 1)[0])


def _direction(values: pd.Series) -> pd.Series:
    sign = np.sign(values.to_numpy(dtype=float))
    return pd.Series(np.select([sign > 0, sign < 0], [CHOSEN, REJECTED], "tie"), index=values.index)


def judge_section(
    main: pd.DataFrame,
    judges: pd.DataFrame,
    *,
    quality_items: Sequence[str],
    epsilon: float,
    alpha: float = 0.05,
    n_boot: int = 1000,
    seed: int = 0,
    min_annotators: int = MIN_ANNOTATORS,
    min_items: int = MIN_ITEMS,
) -> JudgeSection:
    """Every judge against the people on the main pairs of a label frame.

    Parameters
    ----------
    main : pandas.DataFrame
        The label frame's main (non-control) rows (:mod:`analysis.frames`).
    judges : pandas.DataFrame
        Judge ratings (:data:`JUDGE_COLUMNS`); rows of pairs outside `main` are ignored.
    quality_items : sequence of str
        The quality dimensions; the rubric (when rated) and the preference are tested too.
    epsilon : float
        The alt-test's cost-benefit margin.
    alpha : float, default 0.05
        The FDR level of Benjamini-Yekutieli; intervals are 1 - 2*alpha (alpha) and 1 - alpha (Wilson).
    n_boot, seed : int
        Pair-bootstrap resamples and seed of the agreement intervals.
    min_annotators, min_items : int
        The paper's minimums (3 annotators, 30 pairs per annotator); below them, a note, no verdict.

    Returns
    -------
    JudgeSection
    """
    judges = judges[judges[PAIR_ID].isin(set(main[PAIR_ID]))]
    per_judgment = judgments(main)
    majority = pair_majority(per_judgment)
    items = [i for i in quality_items if (main[ITEM] == i).any()]
    if main[ITEM].astype(str).str.startswith(RUBRIC_PREFIX).any():
        items.append(RUBRIC_ITEM)
    rows: list[dict[str, Any]] = []
    tests: list[dict[str, Any]] = []
    cards: list[dict[str, Any]] = []
    queue: list[pd.DataFrame] = []
    human_pref = per_judgment[[PAIR_ID, ANNOTATOR, PREFERENCE]].rename(columns={PREFERENCE: VALUE})
    human_pref = human_pref.assign(**{VALUE: np.sign(human_pref[VALUE].astype(float))})
    for name in sorted(judges[JUDGE].unique()):
        mine = judges[judges[JUDGE] == name]
        pref = _judge_preference(mine)
        for item in [*items, PREFERENCE_ITEM]:
            if item == PREFERENCE_ITEM:
                values = pref.rename(columns={"judge_preference": VALUE})[[PAIR_ID, VALUE]]
                values = values.assign(**{VALUE: np.sign(values[VALUE])})
                humans, components, scoring = human_pref, None, "accuracy"
            else:
                values = _judge_values(mine, item)
                humans = _human_values(main, item)
                components, scoring = (CHOSEN, REJECTED), "neg_rmse"
            if values.empty:
                continue
            annotators, pairs, h, f = _arrays(humans, values, components)
            result = alt_test(h, f, epsilon=epsilon, q=alpha, scoring=scoring, min_items=min_items)  # type: ignore[arg-type]
            n_tested = int(result.n_tested)
            judged = ~np.isnan(f).any(-1)
            n_pairs = int((judged & ((~np.isnan(h).any(-1)).sum(0) >= 2)).sum())
            verdict: bool | None = None
            if n_tested >= min_annotators:
                verdict = bool(result.winning_rate >= 0.5)
                note = (
                    f"beats {int(result.beaten.sum())} of {n_tested} annotators "
                    f"(Benjamini-Yekutieli at {alpha:g}, epsilon {epsilon:g})"
                )
            else:
                note = (
                    f"no verdict: {n_tested} of {len(annotators)} annotators rated at least {min_items} "
                    f"pairs the judge rated too; the alternative annotator test needs at least "
                    f"{min_annotators} such annotators (Calderon et al. 2025)"
                )
            # agreement: the judge as one more rater (units: pair x component), interval level
            flat_h = h.reshape(len(annotators), -1)
            flat_f = f.reshape(1, -1)
            clusters = np.repeat(np.asarray(pairs, dtype=object), h.shape[-1]).astype(str)
            people = _alpha_pair(flat_h, clusters, n_boot, seed, 1 - 2 * alpha)
            both = _alpha_pair(np.vstack([flat_h, flat_f]), clusters, n_boot, seed, 1 - 2 * alpha)
            if item == PREFERENCE_ITEM:
                raw = per_judgment.groupby(PAIR_ID)[PREFERENCE].mean()
                shared = pref.set_index(PAIR_ID)["judge_preference"].dropna()
                shared = shared[shared.index.isin(raw.index)]
                leniency = float((shared - raw.reindex(shared.index)).mean()) if len(shared) else math.nan
            else:
                with np.errstate(invalid="ignore"):
                    people_mean = np.nanmean(h, axis=0) if len(annotators) else np.full(f.shape, np.nan)
                ok = np.isfinite(people_mean) & np.isfinite(f)
                leniency = float((f[ok] - people_mean[ok]).mean()) if ok.any() else math.nan
            rows.append(
                {
                    "judge": name,
                    "item": item,
                    "scoring": "accuracy of the direction" if scoring == "accuracy" else "negative RMSE",
                    "n_pairs": n_pairs,
                    "n_annotators": len(annotators),
                    "n_tested": n_tested,
                    "winning_rate": float(result.winning_rate),
                    "advantage_probability": float(result.advantage_probability),
                    "epsilon": epsilon,
                    "can_replace": verdict,
                    "note": note,
                    "alpha_people": people[0],
                    "alpha_people_ci_low": people[1],
                    "alpha_people_ci_high": people[2],
                    "alpha_with_judge": both[0],
                    "alpha_with_judge_ci_low": both[1],
                    "alpha_with_judge_ci_high": both[2],
                    "leniency": leniency,
                }
            )
            for j, annotator in enumerate(annotators):
                if result.n_items[j] == 0:
                    continue
                tests.append(
                    {
                        "judge": name,
                        "item": item,
                        "annotator": annotator,
                        "n_items": int(result.n_items[j]),
                        "rho_judge": float(result.rho_judge[j]),
                        "rho_annotator": float(result.rho_annotator[j]),
                        "p_value": float(result.p_value[j]),
                        "beaten": bool(result.beaten[j]),
                    }
                )
        cards.append(_card(name, mine, pref, main, per_judgment, majority, alpha))
        queue.append(_queue(name, pref, majority))
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    table["can_replace"] = table["can_replace"].astype(object)
    return JudgeSection(
        table=table,
        tests=pd.DataFrame(tests, columns=TEST_COLUMNS),
        cards=pd.DataFrame(cards, columns=CARD_COLUMNS),
        queue=pd.concat(queue, ignore_index=True) if queue else pd.DataFrame(columns=QUEUE_COLUMNS),
        parameters={
            "epsilon": epsilon,
            "q": alpha,
            "min_annotators": min_annotators,
            "min_items": min_items,
            "n_boot": n_boot,
        },
    )


def _card(
    name: str,
    mine: pd.DataFrame,
    pref: pd.DataFrame,
    main: pd.DataFrame,
    per_judgment: pd.DataFrame,
    majority: pd.DataFrame,
    alpha: float,
) -> dict[str, Any]:
    """Accuracy against the human majority and the bias card of one judge."""
    merged = pref.merge(majority, on=PAIR_ID, how="inner")
    decided = merged[merged["majority"] != "none"].dropna(subset=["judge_preference"])
    right = (_direction(decided["judge_preference"]) == decided["majority"]).to_numpy()
    low, high = wilson_interval(int(right.sum()), len(right), alpha)
    per_order = mine.drop_duplicates([PAIR_ID, ORDER]).dropna(subset=[PREFERENCE])
    both = per_order[per_order[ORDER] != ""].pivot_table(
        index=PAIR_ID, columns=ORDER, values=PREFERENCE, aggfunc="mean"
    )
    swap_pairs, consistency = 0, math.nan
    if CHOSEN_FIRST in both.columns and REJECTED_FIRST in both.columns:
        pairs = both.dropna(subset=[CHOSEN_FIRST, REJECTED_FIRST])
        swap_pairs = len(pairs)
        if swap_pairs:
            same = np.sign(pairs[CHOSEN_FIRST]) == np.sign(pairs[REJECTED_FIRST])
            consistency = float(same.mean())
    ordered = per_order[(per_order[ORDER] != "") & (per_order[PREFERENCE] != 0)]
    first = ((ordered[PREFERENCE] > 0) == (ordered[ORDER] == CHOSEN_FIRST)).to_numpy(dtype=float)
    slope_judge = slope_people = math.nan
    if CHOSEN_CHARS in main.columns and REJECTED_CHARS in main.columns:
        lengths = main.drop_duplicates(PAIR_ID).set_index(PAIR_ID)
        length = (lengths[CHOSEN_CHARS] - lengths[REJECTED_CHARS]).astype(float) / 1000.0
        on = pref.set_index(PAIR_ID)["judge_preference"].dropna()
        on = on[on.index.isin(length.index)]
        people = per_judgment.groupby(PAIR_ID)[PREFERENCE].mean().reindex(on.index)
        x = length.reindex(on.index).to_numpy(dtype=float)
        slope_judge = _slope(x, on.to_numpy(dtype=float))
        slope_people = _slope(x, people.to_numpy(dtype=float))
    raw = per_judgment.groupby(PAIR_ID)[PREFERENCE].mean()
    shared = pref.set_index(PAIR_ID)["judge_preference"].dropna()
    shared = shared[shared.index.isin(raw.index)]
    sure = decided.dropna(subset=["judge_confidence"])
    ece, brier = calibration(
        sure["judge_confidence"].to_numpy(float),
        (_direction(sure["judge_preference"]) == sure["majority"]).to_numpy(float),
    )
    return {
        "judge": name,
        "n_pairs": int(mine[PAIR_ID].nunique()),
        "accuracy": float(right.mean()) if len(right) else math.nan,
        "accuracy_ci_low": low,
        "accuracy_ci_high": high,
        "accuracy_pairs": len(right),
        "swap_pairs": swap_pairs,
        "swap_consistency": consistency,
        "first_position_rate": float(first.mean()) if len(first) else math.nan,
        "length_slope_judge": slope_judge,
        "length_slope_people": slope_people,
        "leniency_preference": float((shared - raw.reindex(shared.index)).mean())
        if len(shared)
        else math.nan,
        "calibration_pairs": len(sure),
        "ece": ece,
        "brier": brier,
    }


def disagreement_queue(main: pd.DataFrame, judges: pd.DataFrame) -> pd.DataFrame:
    """Per judge, the main pairs where its preference direction differs from the human majority (or
    the people have none): :data:`QUEUE_COLUMNS`, by judge and pair."""
    if main.empty or judges.empty:
        return pd.DataFrame(columns=QUEUE_COLUMNS)
    majority = pair_majority(judgments(main))
    judges = judges[judges[PAIR_ID].isin(set(main[PAIR_ID]))]
    parts = [
        _queue(name, _judge_preference(judges[judges[JUDGE] == name]), majority)
        for name in sorted(judges[JUDGE].unique())
    ]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=QUEUE_COLUMNS)


def _queue(name: str, pref: pd.DataFrame, majority: pd.DataFrame) -> pd.DataFrame:
    """The pairs where the judge's direction differs from the human majority (or people have none)."""
    merged = pref.dropna(subset=["judge_preference"]).merge(majority, on=PAIR_ID, how="inner")
    off = merged[_direction(merged["judge_preference"]).to_numpy() != merged["majority"].to_numpy()]
    return pd.DataFrame(
        {
            "pair_id": off[PAIR_ID].to_numpy(),
            "judge": name,
            "judge_preference": off["judge_preference"].to_numpy(dtype=float),
            "majority": off["majority"].to_numpy(),
            "human_agreement": off["agreement"].to_numpy(dtype=float),
            "n_judgments": off["n_votes"].to_numpy(dtype=int),
        },
        columns=QUEUE_COLUMNS,
    )
