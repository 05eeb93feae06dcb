"""A content-blind baseline for the alternative annotator test, and a judge's position and length tests.

The alt-test (:mod:`analysis.alttest`) credits a judge with ``epsilon`` for being cheaper. When the
people disagree often, a judge that never reads the responses already comes within ``epsilon`` of them
(with P(chosen) ~ Beta(3, 1) per pair and 10% ties, a judge that always picks the response shown first
has ``rho_h - rho_f`` near 0.15 < 0.2) and passes. So a judge **can replace** the annotators only when
it passes the alt-test **and** beats every content-blind judge on the study's own data by the margin.

Content-blind judges (computed from the study's annotators, the judge's orders and the responses'
lengths; never from which response is ``chosen``):

- preference (scored by the direction): **first position** picks the response the judge was shown first
  (a pair shown in both orders: a tie, as the judge's own preference is the mean over orders; order not
  recorded: either response with probability 1/2, scored by the expectation of ``W``); **longer
  response** picks the longer one (equal lengths: a tie; length unknown: probability 1/2 each);
- ratings (scored by negative RMSE over both responses): **same rating** gives every response the
  people's mean rating of the item, and **same rating v** every response the rating v, for each
  rating the people gave (on an integer scale the most common rating ties the left-out annotator
  often, and a tie counts as the judge's win; a position-only rating judge in a counterbalanced study
  does no better on average); **longer response** gives the longer response the
  people's mean rating of longer responses and the shorter the mean of shorter ones.
  The longer-response baselines need the responses' lengths (``chosen_chars``, ``rejected_chars``).

The rule (``beats the baseline``): per pair ``x_i`` = the mean over the tested annotators who rated it of
``W_f(i, j) - W_b(i, j)`` (the judge's and the baseline's alignment wins against the same remaining
annotators); one-sided t test over pairs of ``H0: E[x] <= margin`` against ``H1: E[x] > margin`` at
``alpha`` (a zero-variance ``x`` rejects exactly when its mean exceeds the margin), for every available
baseline (intersection-union: all must reject, so no multiplicity correction). The pairs are the unit;
the annotators are this study's panel. The baseline's own alt-test is reported too: when its gap
``rho_h - rho_b`` (mean over tested annotators) is below ``epsilon``, epsilon is too loose to mean
anything for this study (a judge that does not read would pass it in expectation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from analysis.alttest import MIN_ANNOTATORS, MIN_ITEMS, AltTest, Scoring, alignment_wins, alt_test_from_wins
from analysis.lazy import stats

__all__ = [
    "BASELINE_MARGIN",
    "FIRST_POSITION",
    "LONGER",
    "SAME_RATING",
    "BaselineTest",
    "BlindJudge",
    "ReplaceVerdict",
    "baseline_test",
    "blind_wins",
    "constant_ratings",
    "exact_binomial_p",
    "length_preference",
    "longer_ratings",
    "preference_blind",
    "replace_verdict",
    "same_rating",
]

FIRST_POSITION = "first position"
LONGER = "longer response"
SAME_RATING = "same rating"
#: How much more often (in alignment wins per comparison, the advantage probability's scale) a judge
#: must win than every content-blind judge on the same comparisons.
BASELINE_MARGIN = 0.05


@dataclass(frozen=True)
class BlindJudge:
    """A content-blind judge as a mixture of annotations: option ``k`` is the annotation ``values[k]``
    (shape (..., n, r)) given with probability ``weights[k]`` (shape (..., n)) on each instance."""

    name: str
    weights: tuple[npt.NDArray[np.float64], ...]
    values: tuple[npt.NDArray[np.float64], ...]


def preference_blind(name: str, picks: npt.ArrayLike) -> BlindJudge:
    """A content-blind preference judge from its direction per pair: +1 (chosen), -1 (rejected), 0
    (tie), NaN (either response with probability 1/2)."""
    p = np.asarray(picks, dtype=np.float64)
    coin = np.isnan(p)
    sure = np.where(coin, 0.0, p)
    weights = (np.where(coin, 0.0, 1.0), np.where(coin, 0.5, 0.0), np.where(coin, 0.5, 0.0))
    values = (sure[..., None], np.ones((*p.shape, 1)), -np.ones((*p.shape, 1)))
    return BlindJudge(name, weights, values)


def same_rating(humans: npt.ArrayLike) -> BlindJudge:
    """Every response gets the people's mean rating (humans: (m, n, r), NaN = not rated)."""
    h = np.asarray(humans, dtype=np.float64)
    value = float(np.nanmean(h)) if np.isfinite(h).any() else math.nan
    return _constant(SAME_RATING, value, h)


def _constant(name: str, value: float, h: np.ndarray) -> BlindJudge:
    """A rating judge that gives every response of `h`'s items `value`."""
    return BlindJudge(name, (np.ones(h.shape[-2]),), (np.full(h.shape[-2:], value),))


def constant_ratings(humans: npt.ArrayLike) -> list[BlindJudge]:
    """The constant rating judges: the people's mean (:func:`same_rating`) and every rating the people
    gave (``"same rating 4"``): alignment counts a tie with the left-out annotator as the judge's win,
    so on an integer scale the most common rating can align better than the mean, which never ties."""
    h = np.asarray(humans, dtype=np.float64)
    seen = np.unique(h[np.isfinite(h)])
    return [same_rating(h), *(_constant(f"{SAME_RATING} {value:g}", value, h) for value in seen)]


def longer_ratings(humans: npt.ArrayLike, chosen_longer: npt.ArrayLike) -> BlindJudge:
    """The longer response gets the people's mean rating of longer responses, the shorter the mean of
    shorter ones; equal or unknown lengths (0 / NaN in ``chosen_longer``: +1 chosen longer, -1 rejected
    longer) get the overall mean. Humans: (m, n, 2) with components (chosen, rejected)."""
    h = np.asarray(humans, dtype=np.float64)
    sign = np.asarray(chosen_longer, dtype=np.float64)
    overall = float(np.nanmean(h)) if np.isfinite(h).any() else math.nan
    pick_chosen, pick_rejected = sign > 0, sign < 0
    longer = np.concatenate([h[:, pick_chosen, 0].ravel(), h[:, pick_rejected, 1].ravel()])
    shorter = np.concatenate([h[:, pick_chosen, 1].ravel(), h[:, pick_rejected, 0].ravel()])
    hi = float(np.nanmean(longer)) if np.isfinite(longer).any() else overall
    lo = float(np.nanmean(shorter)) if np.isfinite(shorter).any() else overall
    values = np.full(h.shape[-2:], overall)
    values[pick_chosen] = (hi, lo)
    values[pick_rejected] = (lo, hi)
    return BlindJudge(LONGER, (np.ones(h.shape[-2]),), (values,))


def blind_wins(
    humans: npt.ArrayLike, judge: npt.ArrayLike, blind: BlindJudge, *, scoring: Scoring
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The blind judge's expected ``W_b`` and the annotators' ``W_h`` against it, on the instances the
    real ``judge`` annotated (shape (..., m, n); :func:`analysis.alttest.alignment_wins`)."""
    h = np.asarray(humans, dtype=np.float64)
    f = np.asarray(judge, dtype=np.float64)
    missing = np.isnan(f).any(-1, keepdims=True)
    wb = np.zeros(h.shape[:-1])
    wh = np.zeros(h.shape[:-1])
    for weight, value in zip(blind.weights, blind.values, strict=True):
        weight = np.asarray(weight, dtype=np.float64)
        if not np.any(weight):
            continue
        option = np.where(missing, np.nan, np.broadcast_to(value, f.shape))
        w_b, w_h, _ = alignment_wins(h, option, scoring=scoring)
        wb += weight[..., None, :] * w_b
        wh += weight[..., None, :] * w_h
    return wb, wh


@dataclass(frozen=True)
class BaselineTest:
    """The judge against one content-blind judge; fields have the leading (batch) shape."""

    n_pairs: npt.NDArray[np.int64]
    advantage: npt.NDArray[np.float64]  # mean over pairs of x_i (judge minus baseline wins)
    ci_low: npt.NDArray[np.float64]  # one-sided 1 - alpha lower bound of the advantage
    p_value: npt.NDArray[np.float64]  # one-sided p of H0: advantage <= margin
    beats: npt.NDArray[np.bool_]


def baseline_test(
    judge_wins: npt.ArrayLike,
    blind: npt.ArrayLike,
    mask: npt.ArrayLike,
    tested: npt.ArrayLike,
    *,
    margin: float = BASELINE_MARGIN,
    alpha: float = 0.05,
) -> BaselineTest:
    """Does the judge win more often than a content-blind judge by more than ``margin``?

    ``judge_wins`` and ``blind`` are ``W_f`` and ``W_b`` (..., m, n), ``mask`` the comparisons that
    count, ``tested`` (..., m) the annotators the alt-test tested. The rule is in the module docstring.

    >>> wf = np.ones((3, 4)); wb = np.array([[1, 0, 1, 0]] * 3, float)
    >>> r = baseline_test(wf, wb, np.ones((3, 4), bool), np.ones(3, bool), margin=0.05)
    >>> float(r.advantage), bool(r.beats)  # x = (0, 1, 0, 1): mean .5, se .289, t = 1.56, p = .11
    (0.5, False)
    """
    wf = np.asarray(judge_wins, dtype=np.float64)
    wb = np.asarray(blind, dtype=np.float64)
    counted = np.asarray(mask, dtype=bool) & np.asarray(tested, dtype=bool)[..., None]
    k = counted.sum(-2)  # (..., n) annotators per pair
    used = k > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        x = np.where(counted, wf - wb, 0.0).sum(-2) / np.maximum(k, 1)
        n = used.sum(-1)
        nf = n.astype(np.float64)
        mean = np.where(used, x, 0.0).sum(-1) / nf
        var = np.where(used, (x - mean[..., None]) ** 2, 0.0).sum(-1) / (nf - 1)
        se = np.sqrt(var / nf)
        t = (mean - margin) / se
        p = stats.t.sf(t, nf - 1)
        low = mean - stats.t.ppf(1 - alpha, nf - 1) * se
    flat = var <= 1e-15
    p = np.where(flat, np.where(mean > margin + 1e-12, 0.0, 1.0), p)
    low = np.where(flat, mean, low)
    p = np.where(n >= 2, p, np.nan)
    return BaselineTest(
        n_pairs=n,
        advantage=mean,
        ci_low=np.where(n >= 2, low, np.nan),
        p_value=p,
        beats=(n >= 2) & (p < alpha),
    )


def exact_binomial_p(k: int, n: int) -> float:
    """Two-sided exact binomial p of ``k`` successes in ``n`` against 1/2; NaN when ``n`` is 0.

    >>> round(exact_binomial_p(9, 10), 4)  # 2 * (10 + 1) / 1024
    0.0215
    """
    if n <= 0:
        return math.nan
    return float(stats.binomtest(int(k), int(n), 0.5).pvalue)


def length_preference(judge_longer: npt.ArrayLike, people_longer: npt.ArrayLike) -> tuple[int, int, float]:
    """Exact McNemar test of "the judge picks the longer response as often as the people's majority
    does" over pairs with unequal lengths where both have a direction: (judge only, people only, p)."""
    j = np.asarray(judge_longer, dtype=bool)
    h = np.asarray(people_longer, dtype=bool)
    only_judge, only_people = int((j & ~h).sum()), int((~j & h).sum())
    if only_judge + only_people == 0:
        return 0, 0, 1.0 if len(j) else math.nan
    return only_judge, only_people, exact_binomial_p(only_judge, only_judge + only_people)


@dataclass(frozen=True)
class ReplaceVerdict:
    """The alt-test and the content-blind baselines of one judge on one item (leading batch shape)."""

    alt: AltTest
    blind_alt: dict[str, AltTest]  # the alt-test of each content-blind judge
    blind_test: dict[str, BaselineTest]  # the judge against each content-blind judge
    decided: npt.NDArray[np.bool_]  # enough annotators for a verdict
    passes_alt_test: npt.NDArray[np.bool_]
    beats_baseline: npt.NDArray[np.bool_]  # beats every content-blind judge by the margin

    @property
    def can_replace(self) -> npt.NDArray[np.bool_]:
        """Passes the alt-test and beats every content-blind judge (False without a verdict)."""
        return self.decided & self.passes_alt_test & self.beats_baseline


def replace_verdict(
    humans: npt.ArrayLike,
    judge: npt.ArrayLike,
    blinds: list[BlindJudge],
    *,
    scoring: Scoring,
    epsilon: float,
    q: float = 0.05,
    margin: float = BASELINE_MARGIN,
    min_items: int = MIN_ITEMS,
    min_annotators: int = MIN_ANNOTATORS,
) -> ReplaceVerdict:
    """The "can replace" verdict: the alt-test (humans (..., m, n, r), judge (..., n, r), as in
    :func:`analysis.alttest.alt_test`) and, at level ``q``, the baseline rule against each of
    ``blinds`` (none: the alt-test alone decides)."""
    h = np.asarray(humans, dtype=np.float64)
    f = np.asarray(judge, dtype=np.float64)
    wf, wh, mask = alignment_wins(h, f, scoring=scoring)
    alt = alt_test_from_wins(wf, wh, mask, epsilon=epsilon, q=q, min_items=min_items)
    decided = alt.n_tested >= min_annotators
    passes = decided & (alt.winning_rate >= 0.5)
    beats = np.ones(alt.n_tested.shape, dtype=bool)
    blind_alt: dict[str, AltTest] = {}
    blind_test: dict[str, BaselineTest] = {}
    for blind in blinds:
        wb, whb = blind_wins(h, f, blind, scoring=scoring)
        blind_alt[blind.name] = alt_test_from_wins(wb, whb, mask, epsilon=epsilon, q=q, min_items=min_items)
        test = baseline_test(wf, wb, mask, alt.tested, margin=margin, alpha=q)
        blind_test[blind.name] = test
        beats = beats & test.beats
    return ReplaceVerdict(alt, blind_alt, blind_test, decided, passes, beats)
