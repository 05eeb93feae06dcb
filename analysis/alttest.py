"""The alternative annotator test on arrays: the kernel, vectorised over studies.

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

A zero-variance ``d`` gets p = 0 when its mean is below epsilon and p = 1 otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
import numpy.typing as npt

from analysis.lazy import stats

__all__ = [
    "EPSILON",
    "MIN_ANNOTATORS",
    "MIN_ITEMS",
    "AltTest",
    "Scoring",
    "alignment_wins",
    "alt_test",
    "alt_test_from_wins",
    "benjamini_yekutieli",
]

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
    return cast(np.ndarray, (rank < n_reject[..., None]) & ok)


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
    judge_wins, human_wins, mask = alignment_wins(h, f, scoring=scoring)
    return alt_test_from_wins(judge_wins, human_wins, mask, epsilon=epsilon, q=q, min_items=min_items)


def alignment_wins(
    humans: npt.ArrayLike, judge: npt.ArrayLike, *, scoring: Scoring = "neg_rmse"
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Per annotator and instance, ``W_f`` (the judge aligns with the others at least as well as
    annotator ``j``), ``W_h`` (the reverse) and the mask of comparisons that count (``j`` rated the
    instance, the judge too, and at least one more annotator did): arrays of shape (..., m, n).
    Shapes and scoring as in :func:`alt_test`."""
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
    wf = np.where(mask, judge_wins, 0).astype(np.float64)
    wh = np.where(mask, human_wins, 0).astype(np.float64)
    return wf, wh, mask


def alt_test_from_wins(
    judge_wins: npt.ArrayLike,
    human_wins: npt.ArrayLike,
    mask: npt.ArrayLike,
    *,
    epsilon: float,
    q: float = 0.05,
    min_items: int = MIN_ITEMS,
) -> AltTest:
    """The alt-test's t tests, Benjamini-Yekutieli and summaries from ``W_f``, ``W_h`` and the mask
    (:func:`alignment_wins`; shape (..., m, n)). ``W`` may be an expectation in [0, 1] (a judge that
    picks at random), the t test then runs on the expected ``d``."""
    mask = np.asarray(mask, dtype=bool)
    wf = np.where(mask, np.asarray(judge_wins, dtype=np.float64), 0.0)
    wh = np.where(mask, np.asarray(human_wins, dtype=np.float64), 0.0)
    n_items = mask.sum(-1)
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
