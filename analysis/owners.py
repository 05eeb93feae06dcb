"""The profile's owner as a rater: owner endorsement of ``chosen`` and how well others judge for the owner.

A label frame may carry the owner's own judgments: rows whose ``rater_kind`` column is ``"owner"``
(the ``annotator`` column then names the owner). They never enter the third-party analysis; this module
reports, with **owners as the unit** (every standard error is a leave-one-owner-out jackknife, so pairs
of one owner are never treated as independent; a share's interval, ``share_interval``, is Korn and
Graubard's (1998) Clopper-Pearson interval at the effective sample size that standard error implies,
widened by Hall's (1992) correction for the skewness beyond a binomial share's (see ``_excess_skew``) and
united with a distribution-free betting interval; kappa's is the union of a skewness-corrected jackknife
t interval, a score-type interval and ``kappa_box``'s (Fieller's interval at the corners of a betting box
of the owner's shares; see ``jackknife_kappa``), all with the t quantile on ``owners - 1`` degrees of
freedom and the jackknife variance times ``G / (G - 1)``, the usual small-sample factor for G clusters;
kappa's interval only from MIN_KAPPA_OWNERS owners and MIN_KAPPA_PAIRS pairs, below which it does not
hold its level):

- owner endorsement: the share of pairs whose owner prefers ``chosen`` (a tie counts half), tested
  one-sided against one half (its own verdict, ``owner_endorsement``);
- agreement with the owner of each third-party annotator and of the panel majority: accuracy (same
  direction: chosen, tie or rejected) and Cohen's kappa;
- rubric validity: the owners' answers on whether each rubric aspect describes what they want
  (``support:<k>`` items on the owner's rows: 0 no, 1 partly, 2 yes; partly counts half);
- reward models and LLM judges scored against the owner's choice beside the third-party majority, on
  the same pairs (a judge's choice: the sign of its preference, the mean over the orders it rated).

A frame without owner rows gives no section, and the report is then what it was without this module.

Every owner share's interval (the endorsement's, and so its verdict; every accuracy; the rubric's) is
the jackknife interval united with distribution-free bounds (``share_interval``): Waudby-Smith and
Ramdas's betting interval (``betting_ratio``), which holds for owners drawn independently whatever the
distribution of their pairs and answers (at most the study's largest pair count per owner). The
jackknife interval alone missed far more often than alpha, and the verdict passed falsely, when a few
owners are far from the rest (a few who reject chosen, or with whom the annotators agree far less, unseen
in most samples of 10-20 owners); kappa missed for the same reason. The price is width and the verdict's
power with few owners (measured in benchmarks/bench_owners.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.aggregates import judgments, pair_majority
from analysis.betting import betting_p, betting_ratio
from analysis.frames import as_text, has_prefix
from analysis.judges import EPSILON, JUDGE, MIN_ANNOTATORS, MIN_ITEMS, ORDER, benjamini_yekutieli
from analysis.kappa_box import kappa_box
from analysis.lazy import stats
from analysis.verdicts import Status, Verdict
from analysis.vocabulary import (
    ANNOTATOR,
    CHOSEN,
    ITEM,
    OWNER,
    PAIR_ID,
    PREFERENCE,
    RATER_KIND,
    REJECTED,
    RESPONSE,
    SUPPORT_PREFIX,
    VALUE,
)

__all__ = [
    "DIRECTIONS",
    "MIN_OWNERS",
    "OWNER_ENDORSEMENT",
    "OwnerSection",
    "alt_test_p",
    "share_interval",
    "jackknife_kappa",
    "jackknife_ratio",
    "owner_endorsement_verdict",
    "owner_section",
    "score_judges",
    "split_owners",
]

#: The key of the owners' verdict (present only when the frame has owner judgments).
OWNER_ENDORSEMENT = "owner_endorsement"
#: Fewer owners give no verdict on owner endorsement (the jackknife needs a few clusters).
MIN_OWNERS = 5
#: Kappa's jackknife interval needs this many owners and owned pairs (fewer: no interval; measured in
#: benchmarks/bench_owners.py, where smaller designs miss by up to 0.24 on one side).
MIN_KAPPA_OWNERS = 10
MIN_KAPPA_PAIRS = 50
#: The directions a judgment can take, as codes 0, 1, 2 (and 3 for a panel with no majority).
DIRECTIONS: tuple[str, ...] = (CHOSEN, "tie", REJECTED, "none")
PANEL = "panel majority"


def split_owners(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split a validated label frame into the third-party rows and the owners' rows.

    Without a ``rater_kind`` column every row is third-party (no copy).

    >>> df = pd.DataFrame({"pair_id": ["p", "p"], "rater_kind": ["", "owner"]})
    >>> [len(part) for part in split_owners(df)]
    [1, 1]
    """
    if RATER_KIND not in frame.columns:
        return frame, frame.iloc[:0]
    is_owner = (as_text(frame[RATER_KIND]) == OWNER).to_numpy()
    if not is_owner.any():
        return frame, frame.iloc[:0]
    return frame[~is_owner], frame[is_owner]


def _jackknife_se(dev: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The leave-one-owner-out standard error from the leave-one-out deviations (..., G) of g present
    owners, its variance times g / (g - 1) (the small-sample factor for g clusters); NaN below 2."""
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt((dev**2).sum(-1))  # ((g - 1) / g) * (g / (g - 1)) * sum of squares
    return np.where(g >= 2, se, np.nan)


def _t(alpha: float, g: npt.ArrayLike) -> np.ndarray:
    """The one-sided 1 - alpha t quantile on g - 1 degrees of freedom (NaN below 2 owners)."""
    g = np.asarray(g, dtype=np.float64)
    return np.where(g >= 2, stats.t.ppf(1 - alpha, np.maximum(g - 1, 1)), np.nan)


def jackknife_ratio(
    num: npt.ArrayLike, den: npt.ArrayLike, *, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """sum(num) / sum(den) over owners with its leave-one-owner-out jackknife interval.

    Parameters
    ----------
    num, den : array_like, shape (..., G)
        Per-owner sums (e.g. chosen-preferred pairs and pairs); an owner with ``den == 0`` is absent.
        The ratio is a share: the bounds are clipped to 0..1.
    alpha : float
        Each side's level: the interval is 1 - 2*alpha, so its lower end is a one-sided bound at alpha.

    Returns
    -------
    estimate, ci_low, ci_high, se : numpy.ndarray, shape (...)
        NaN bounds with fewer than two owners.

    Examples
    --------
    >>> est, lo, hi, se = jackknife_ratio([3, 2, 4, 1], [4, 2, 5, 2])
    >>> round(float(est), 4), bool(lo < est < hi)
    (0.7692, True)
    """
    n = np.asarray(num, dtype=np.float64)
    d = np.asarray(den, dtype=np.float64)
    present = d > 0
    g = present.sum(-1)
    total_n, total_d = n.sum(-1, keepdims=True), d.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = total_n[..., 0] / total_d[..., 0]
        loo = (total_n - n) / (total_d - d)
    loo = np.where(present, loo, 0.0)
    mean = loo.sum(-1) / np.maximum(g, 1)
    dev = np.where(present, loo - mean[..., None], 0.0)
    se = _jackknife_se(dev, g)
    q = _t(alpha, g)
    low, high, m = _korn_graubard(est, se, total_d[..., 0], q, alpha)
    low, high = _excess_skew(est, se, m, _acceleration(dev), q, low, high)
    return est, low, high, se


def share_interval(
    num: npt.ArrayLike, den: npt.ArrayLike, *, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """An owner share's estimate, interval and standard error (the endorsement's, the accuracies', the
    rubric's): ``jackknife_ratio``'s interval united with ``betting_ratio``'s (the lower of the two
    lower bounds, the higher of the two upper ones), so each side misses at most as often as the
    betting side, whatever the owners' distribution; NaN bounds with fewer than two owners.

    >>> est, lo, hi, se = share_interval([9, 10, 8, 10, 10, 9, 10, 7, 10, 10], [10] * 10)
    >>> round(float(est), 2), round(float(lo), 3), round(float(hi), 3)
    (0.93, 0.666, 1.0)
    """
    est, low, high, se = jackknife_ratio(num, den, alpha=alpha)
    bet_low, bet_high = betting_ratio(num, den, alpha=alpha)
    return est, np.minimum(low, bet_low), np.maximum(high, bet_high), se


def _korn_graubard(
    p: np.ndarray, se: np.ndarray, n: np.ndarray, q: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Korn and Graubard's interval of a share `p` of `n` pairs with clustered standard error `se`
    (Korn & Graubard 1998, "Confidence intervals for proportions with small expected number of positive
    counts estimated from survey data", Survey Methodology 24(2):193-201; the form of NCHS's data
    presentation standards for proportions, Parker et al. 2017): the Clopper-Pearson interval at
    m = min(n, n_eff (t_{n-1} / q)^2), the effective sample size n_eff = p (1 - p) / se^2 (n at p = 0
    or 1) adjusted for the degrees of freedom (`q`: t on owners - 1 df; t_{n-1}: t on pairs - 1 df).
    Unlike p +- q*se it stays inside 0..1, does not collapse when every owner gives the same answer, and
    carries the skew of a binomial share at m trials (a Wilson interval missed on the far side; measured
    in benchmarks/bench_owners.py). Returns the bounds and m."""
    with np.errstate(invalid="ignore", divide="ignore"):
        t_pairs = stats.t.ppf(1 - alpha, np.maximum(n - 1, 1))
        n_eff = np.where((p > 0) & (p < 1), p * (1 - p) / se**2, n)
        m = np.minimum(n, n_eff * (t_pairs / q) ** 2)
        low = np.where(p > 0, stats.beta.ppf(alpha, m * p, m * (1 - p) + 1), 0.0)
        high = np.where(p < 1, stats.beta.ppf(1 - alpha, m * p + 1, m * (1 - p)), 1.0)
    ok = ~np.isnan(se)
    return np.where(ok, low, np.nan), np.where(ok, high, np.nan), m


def _excess_skew(
    p: np.ndarray,
    se: np.ndarray,
    m: np.ndarray,
    a: np.ndarray,
    q: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Korn-Graubard bounds `low`, `high` widened by Hall's (1992) skewness correction (``_hall``) for the
    skewness the Clopper-Pearson interval does not already carry: the jackknife acceleration `a` of the
    share (Efron 1987; its estimator's skewness over 6) minus a binomial share's at m trials,
    (1 - 2p) / (6 sqrt(m p (1 - p))). First-order (Cornish-Fisher) skewness terms add, so the moved
    bounds carry the share's own skewness, and a binomial share (one pair per owner) keeps
    Clopper-Pearson's. Each bound moves only outward (the union of the two intervals, as kappa's union
    with its score interval): with few owners the sample skewness understates a skewed share's, and a
    bound moved inward then missed more often than Korn-Graubard's alone. Owners whose shares are skewed
    beyond a binomial's (a Beta's mean has up to twice a binomial's skewness at the same variance) made
    Korn-Graubard alone miss on the far side (measured in benchmarks/bench_owners.py). Unchanged at
    p = 0 or 1 or se = 0; kept within 0..1."""
    inner = (p > 0) & (p < 1) & (se > 0) & (m > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = np.where(inner, a - (1 - 2 * p) / (6 * np.sqrt(m * p * (1 - p))), 0.0)
        shift_low, shift_high = _hall(q * se, se, excess, q)  # Hall's bounds relative to est - q se
        shift_high = shift_high - 2 * q * se  # ... and to est + q se
        new_low = np.clip(np.fmin(low + shift_low, low), 0.0, 1.0)
        new_high = np.clip(np.fmax(high + shift_high, high), 0.0, 1.0)
    return np.where(inner, new_low, low), np.where(inner, new_high, high)


def _kappa(confusion: np.ndarray) -> np.ndarray:
    """Cohen's kappa of confusion counts (..., K, K); NaN when chance agreement is 1."""
    pe = _chance(confusion)
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(confusion, axis1=-2, axis2=-1) / confusion.sum((-1, -2))
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def jackknife_kappa(
    confusion: npt.ArrayLike, *, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Cohen's kappa of pooled per-owner confusion counts with its interval over owners: the union of
    the leave-one-owner-out jackknife t interval with Hall's skewness correction (``_hall``), the
    score-type interval of ``_score_kappa`` and ``kappa_box``'s interval (the owner's shares of each
    direction in a distribution-free betting box, Fieller's interval at its corners), which holds where
    a few owners far from the rest made the first two miss.

    Parameters
    ----------
    confusion : array_like, shape (..., G, K, K)
        Per owner, the counts of (rater's direction, owner's direction).

    Returns
    -------
    estimate, ci_low, ci_high, se : numpy.ndarray, shape (...)
        NaN bounds and se below MIN_KAPPA_OWNERS owners or MIN_KAPPA_PAIRS pairs.
    """
    c = np.asarray(confusion, dtype=np.float64)
    present = c.sum((-1, -2)) > 0
    g = present.sum(-1)
    total = c.sum(-3)
    est = _kappa(total)
    loo = _kappa(total[..., None, :, :] - c)
    ok = present & ~np.isnan(loo)
    m = ok.sum(-1)
    mean = np.where(ok, loo, 0.0).sum(-1) / np.maximum(m, 1)
    dev = np.where(ok, loo - mean[..., None], 0.0)
    enough = (m == g) & (g >= MIN_KAPPA_OWNERS) & (total.sum((-1, -2)) >= MIN_KAPPA_PAIRS)
    se = np.where(enough, _jackknife_se(dev, m), np.nan)
    q = _t(alpha, g)
    score_low, score_high = _score_kappa(est, se, _chance(total), q)
    t_low, t_high = _hall(est, se, _acceleration(dev), q)
    box_low, box_high = kappa_box(c, alpha=alpha)
    low = np.fmin(np.fmin(t_low, score_low), box_low)
    high = np.fmax(np.fmax(t_high, score_high), box_high)
    low = np.where(enough, np.maximum(low, -1.0), np.nan)
    return est, low, np.where(enough, np.minimum(high, 1.0), np.nan), se


def _acceleration(dev: np.ndarray) -> np.ndarray:
    """Efron's (1987) jackknife acceleration from the leave-one-out deviations (..., G): with
    U = -dev, a = sum(U^3) / (6 sum(U^2)^1.5), the estimator's skewness over 6 (for a mean of n values,
    skewness / (6 sqrt(n))); 0 where every deviation is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        a = -(dev**3).sum(-1) / (6 * ((dev**2).sum(-1)) ** 1.5)
    return np.where(np.isfinite(a), a, 0.0)


def _hall(est: np.ndarray, se: np.ndarray, a: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The t interval with Hall's skewness-removing transformation (Hall 1992, "On the removal of
    skewness by transformation", JRSS B 54:221-228; Johnson's 1978 modified t made monotone): with
    T = (est - theta) / se and the skewness term `a` (``_acceleration``; Hall's gamma / (6 sqrt(n))),
    G(T) = T + a + 2a T^2 + (4/3) a^2 T^3 = ((1 + 2aT)^3 - 1) / (6a) + a is referred to +- q, so
    theta lies in [est - se G^-1(q), est - se G^-1(-q)]. A skewed estimator (kappa near its bounds,
    owners with unequal pair counts) then misses about as often on each side (measured in
    benchmarks/bench_owners.py)."""
    tiny = np.abs(a) < 1e-9
    b = np.where(tiny, 1.0, a)

    def inverse(x: np.ndarray) -> np.ndarray:
        return np.where(tiny, x, (np.cbrt(1 + 6 * b * (x - b)) - 1) / (2 * b))

    return est - se * inverse(q), est - se * inverse(-q)


def _chance(confusion: np.ndarray) -> np.ndarray:
    """Chance agreement of confusion counts (..., K, K): the sum of the products of the margins."""
    total = confusion.sum((-1, -2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (confusion.sum(-1) * confusion.sum(-2)).sum(-1) / total**2


def _score_kappa(
    est: np.ndarray, se: np.ndarray, chance: np.ndarray, q: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Kappa's score-type interval: the k with (est - k)^2 = q^2 se^2 v(k) / v(est), where
    v(k) = (1 - k)(k + c), c = chance / (1 - chance), is how kappa's variance moves with kappa through
    the observed agreement at fixed chance agreement (po = pe + k (1 - pe), po (1 - po) ~ v(k)). Like
    Wilson's interval for a share it pulls the bounds away from 1, where a high estimate comes with a
    small jackknife SE (jackknife +- t alone then misses low; measured in benchmarks/bench_owners.py).
    NaN where v(est) is not positive."""
    with np.errstate(invalid="ignore", divide="ignore"):
        c = chance / (1 - chance)
        v_est = (1 - est) * (est + c)
        k = np.where(v_est > 0, q**2 * se**2 / v_est, np.nan)
        a, b, c0 = 1 + k, -(2 * est + k * (1 - c)), est**2 - k * c
        root = np.sqrt(b**2 - 4 * a * c0)
        return (-b - root) / (2 * a), (-b + root) / (2 * a)


def _direction(preference: pd.Series | np.ndarray) -> np.ndarray:
    """0 chosen, 1 tie, 2 rejected (the codes of :data:`DIRECTIONS`)."""
    p = np.asarray(preference, dtype=np.float64)
    return np.where(p > 0, 0, np.where(p < 0, 2, 1))


@dataclass(frozen=True)
class OwnerSection:
    """The owners' section of the report; every table has flat columns."""

    endorsement: pd.DataFrame  # one row: owners, pairs, the share preferring chosen and its interval
    agreement: pd.DataFrame  # one row per third-party annotator and one for the panel majority
    rubric: pd.DataFrame  # one row when owners answered on rubric aspects: their endorsement of them
    models: pd.DataFrame  # one row per model: accuracy against the owner and against the majority
    alt_test: pd.DataFrame = field(default_factory=pd.DataFrame)  # can a model replace an annotator?
    parameters: dict[str, Any] = field(default_factory=dict)


def _owner_judgments(owner_rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (pair, owner): the owner's direction."""
    own = judgments(owner_rows)[[PAIR_ID, ANNOTATOR, PREFERENCE]].rename(columns={ANNOTATOR: OWNER})
    own[PAIR_ID] = own[PAIR_ID].astype(str)
    own[OWNER] = own[OWNER].astype(str)
    own["owner_direction"] = _direction(own[PREFERENCE])
    return own.drop(columns=[PREFERENCE])


def _endorsement(own: pd.DataFrame, alpha: float) -> pd.DataFrame:
    score = np.array([1.0, 0.5, 0.0])[own["owner_direction"].to_numpy()]
    per_owner = pd.DataFrame({OWNER: own[OWNER], "score": score}).groupby(OWNER, sort=True)["score"]
    num, den = per_owner.sum().to_numpy(), per_owner.size().to_numpy()
    est, lo, hi, se = share_interval(num, den, alpha=alpha)
    g = len(num)
    return pd.DataFrame(
        [
            {
                "n_owners": g,
                "n_pairs": int(den.sum()),
                "share": float(est),
                "ci_low": float(lo),
                "ci_high": float(hi),
                "share_se": float(se),
            }
        ]
    )


def _confusion(rater: np.ndarray, owner_dir: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Per-owner confusion counts (G, K, K) of the rater's and the owner's directions."""
    _, g_idx = np.unique(owner, return_inverse=True)
    k = len(DIRECTIONS)
    out = np.zeros((int(g_idx.max()) + 1 if len(g_idx) else 0, k, k))
    np.add.at(out, (g_idx, rater, owner_dir), 1.0)
    return out


def _agreement_row(
    name: str, rater: np.ndarray, owner_dir: np.ndarray, owner: np.ndarray, alpha: float
) -> dict[str, Any]:
    c = _confusion(rater, owner_dir, owner)
    same = np.trace(c, axis1=-2, axis2=-1)
    acc, acc_lo, acc_hi, _ = share_interval(same, c.sum((-1, -2)), alpha=alpha)
    kap, kap_lo, kap_hi, _ = jackknife_kappa(c, alpha=alpha)
    return {
        "rater": name,
        "n_owners": int((c.sum((-1, -2)) > 0).sum()),
        "n_pairs": len(rater),
        "accuracy": float(acc),
        "accuracy_ci_low": float(acc_lo),
        "accuracy_ci_high": float(acc_hi),
        "kappa": float(kap),
        "kappa_ci_low": float(kap_lo),
        "kappa_ci_high": float(kap_hi),
    }


def _agreement(main: pd.DataFrame, own: pd.DataFrame, alpha: float) -> pd.DataFrame:
    joined = _third_party(main, own)
    votes = joined[[PAIR_ID, ANNOTATOR, PREFERENCE]]
    rows = []
    for name, part in joined.groupby(ANNOTATOR, sort=True):
        rows.append(
            _agreement_row(
                str(name),
                _direction(part[PREFERENCE]),
                part["owner_direction"].to_numpy(),
                part[OWNER].to_numpy(),
                alpha,
            )
        )
    if not joined.empty:
        majority = pair_majority(votes)[[PAIR_ID, "majority"]]
        majority[PAIR_ID] = majority[PAIR_ID].astype(str)
        both = majority.merge(own, on=PAIR_ID, how="inner")
        code = both["majority"].map({d: k for k, d in enumerate(DIRECTIONS)}).to_numpy(dtype=np.int64)
        rows.append(
            _agreement_row(PANEL, code, both["owner_direction"].to_numpy(), both[OWNER].to_numpy(), alpha)
        )
    columns = [
        "rater",
        "n_owners",
        "n_pairs",
        "accuracy",
        "accuracy_ci_low",
        "accuracy_ci_high",
        "kappa",
        "kappa_ci_low",
        "kappa_ci_high",
    ]
    return pd.DataFrame(rows, columns=columns)


def _rubric(owner_rows: pd.DataFrame, alpha: float) -> pd.DataFrame:
    rows = owner_rows[
        has_prefix(owner_rows[ITEM], SUPPORT_PREFIX) & (as_text(owner_rows[RESPONSE]) == CHOSEN)
    ]
    if rows.empty:
        return pd.DataFrame()
    value = rows[VALUE].to_numpy(dtype=np.float64)
    per_owner = pd.DataFrame({OWNER: rows[ANNOTATOR].astype(str).to_numpy(), "score": value / 2.0})
    grouped = per_owner.groupby(OWNER, sort=True)["score"]
    est, lo, hi, _ = share_interval(grouped.sum().to_numpy(), grouped.size().to_numpy(), alpha=alpha)
    return pd.DataFrame(
        [
            {
                "n_owners": int(grouped.ngroups),
                "n_answers": len(value),
                "yes": int((value == 2).sum()),
                "partly": int((value == 1).sum()),
                "no": int((value == 0).sum()),
                "endorsement": float(est),
                "ci_low": float(lo),
                "ci_high": float(hi),
            }
        ]
    )


def _usable(predictions: pd.DataFrame | None) -> bool:
    """True for a non-empty predictions frame with ``pair_id, model, choice``."""
    return (
        predictions is not None and not predictions.empty and {PAIR_ID, "model", "choice"} <= set(predictions)
    )


def _models(
    main: pd.DataFrame, own: pd.DataFrame, predictions: pd.DataFrame | None, alpha: float
) -> pd.DataFrame:
    if (
        predictions is None
        or predictions.empty
        or not {PAIR_ID, "model", "choice"} <= set(predictions.columns)
    ):
        return pd.DataFrame()
    majority = pair_majority(judgments(main)[[PAIR_ID, ANNOTATOR, PREFERENCE]])[[PAIR_ID, "majority"]]
    majority[PAIR_ID] = majority[PAIR_ID].astype(str)
    preds = predictions.assign(**{PAIR_ID: predictions[PAIR_ID].astype(str)})
    joined = preds.merge(own, on=PAIR_ID, how="inner").merge(majority, on=PAIR_ID, how="left")
    rows = []
    for model, part in joined.groupby("model", sort=True):
        choice = part["choice"].astype(str).to_numpy()
        code = np.select([choice == CHOSEN, choice == REJECTED], [0, 2], 1)
        owner = part[OWNER].to_numpy()
        _, g_idx = np.unique(owner, return_inverse=True)
        n_owners = int(g_idx.max()) + 1
        hit_owner = np.bincount(g_idx, code == part["owner_direction"].to_numpy(), n_owners)
        with_majority = part["majority"].notna().to_numpy()
        hit_major = np.bincount(
            g_idx, with_majority & (choice == part["majority"].astype(str).to_numpy()), n_owners
        )
        size_major = np.bincount(g_idx, with_majority, n_owners)
        acc, lo, hi, _ = share_interval(hit_owner, np.bincount(g_idx, minlength=n_owners), alpha=alpha)
        mac, mlo, mhi, _ = share_interval(hit_major, size_major, alpha=alpha)
        rows.append(
            {
                "model": str(model),
                "n_owners": n_owners,
                "n_pairs": len(part),
                "accuracy_owner": float(acc),
                "owner_ci_low": float(lo),
                "owner_ci_high": float(hi),
                "accuracy_majority": float(mac),
                "majority_ci_low": float(mlo),
                "majority_ci_high": float(mhi),
            }
        )
    return pd.DataFrame(rows)


def _third_party(main: pd.DataFrame, own: pd.DataFrame) -> pd.DataFrame:
    """One row per third-party judgment of an owned pair: its direction beside the owner's."""
    votes = judgments(main)[[PAIR_ID, ANNOTATOR, PREFERENCE]]
    votes = votes.assign(**{PAIR_ID: votes[PAIR_ID].astype(str), ANNOTATOR: votes[ANNOTATOR].astype(str)})
    joined = votes.merge(own, on=PAIR_ID, how="inner")
    return joined.assign(direction=_direction(joined[PREFERENCE]))


def alt_test_p(
    sums: npt.ArrayLike, sizes: npt.ArrayLike, epsilon: float, *, alpha: float = 0.05
) -> np.ndarray:
    """The alternative annotator test's one-sided p-value of H0: mean d >= `epsilon`, from per-owner sums
    of d (each pair's d in -1..1) and pair counts (..., G): the larger of the t test's (t on owners - 1 df
    with the leave-one-owner-out jackknife SE of sum(d) / sum(pairs)) and the distribution-free betting
    test's (``betting_p`` of (d + 1) / 2 against (epsilon + 1) / 2, bets sized at `alpha`), so it is
    valid whenever the betting test is, whatever the owners' distribution (the t test alone said "beaten"
    too often when a few owners, unseen in most samples, are judged far better by the annotator); NaN
    below 2 owners.

    >>> round(float(alt_test_p([-1, 0, -2, 0, -1], [4, 3, 5, 2, 4], 0.1)), 4)
    0.3691
    """
    d, n = np.asarray(sums, dtype=np.float64), np.asarray(sizes, dtype=np.float64)
    est, _, _, se = jackknife_ratio(d, n)
    g = (n > 0).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(se > 0, stats.t.cdf((est - epsilon) / se, np.maximum(g - 1, 1)), (est >= epsilon) * 1.0)
    p = np.maximum(p, betting_p((d + n) / 2, n, (1 + epsilon) / 2, alpha=alpha))
    return np.where(np.isnan(se), np.nan, p)


def _alt_test(
    main: pd.DataFrame, own: pd.DataFrame, predictions: pd.DataFrame | None, epsilon: float, q: float
) -> pd.DataFrame:
    """The alternative annotator test with the owner as the reference: per model and annotator, on the
    pairs both judged, d = [annotator agrees with the owner] - [model agrees with the owner]; H0: mean
    d >= epsilon, one-sided (``alt_test_p``: the larger of the t test's and a betting test's p-value);
    Benjamini-Yekutieli over the annotators at `q`; the model can replace an annotator when it beats at
    least half of the tested annotators (at least MIN_ANNOTATORS with MIN_ITEMS pairs each)."""
    if (
        predictions is None
        or predictions.empty
        or not {PAIR_ID, "model", "choice"} <= set(predictions.columns)
    ):
        return pd.DataFrame()
    votes = _third_party(main, own)
    preds = predictions.assign(**{PAIR_ID: predictions[PAIR_ID].astype(str)})
    rows = []
    for model, mine in preds.groupby("model", sort=True):
        choice = mine["choice"].astype(str).to_numpy()
        code = pd.Series(np.select([choice == CHOSEN, choice == REJECTED], [0, 2], 1), index=mine[PAIR_ID])
        both = votes[votes[PAIR_ID].isin(code.index)]
        p_values, names = [], []
        for name, part in both.groupby(ANNOTATOR, sort=True):
            if len(part) < MIN_ITEMS:
                continue
            target = part["owner_direction"].to_numpy()
            d = (part["direction"].to_numpy() == target).astype(float)
            d -= code.loc[part[PAIR_ID]].to_numpy() == target
            _, g_idx = np.unique(part[OWNER].to_numpy(), return_inverse=True)
            p = float(alt_test_p(np.bincount(g_idx, d), np.bincount(g_idx), epsilon, alpha=q))
            if np.isnan(p):
                continue
            p_values.append(p)
            names.append(str(name))
        beaten = benjamini_yekutieli(np.array(p_values), q) if p_values else np.array([], dtype=bool)
        tested = len(p_values)
        rate = float(np.mean(beaten)) if tested else float("nan")
        rows.append(
            {
                "model": str(model),
                "n_tested": tested,
                "winning_rate": rate,
                "epsilon": epsilon,
                "can_replace": bool(tested >= MIN_ANNOTATORS and rate >= 0.5),
            }
        )
    return pd.DataFrame(rows)


def owner_section(
    main: pd.DataFrame,
    owner_rows: pd.DataFrame,
    *,
    alpha: float = 0.05,
    predictions: pd.DataFrame | None = None,
    epsilon: float = EPSILON["crowd"],
) -> OwnerSection | None:
    """The owners' section from the third-party main rows and the owners' rows (None without owners).

    Parameters
    ----------
    main : pandas.DataFrame
        The validated third-party rows of the main pairs.
    owner_rows : pandas.DataFrame
        The owners' rows of the main pairs (:func:`split_owners`); the ``annotator`` column names the owner.
    alpha : float
        One-sided level; the intervals are 1 - 2*alpha.
    predictions : pandas.DataFrame, optional
        ``pair_id, model, choice`` (``chosen | rejected | tie``): each model against the owner and
        against the majority, and the alternative annotator test with the owner as the reference.
    epsilon : float
        The alternative annotator test's cost-benefit margin.
    """
    if owner_rows.empty:
        return None
    own = _owner_judgments(owner_rows)
    return OwnerSection(
        endorsement=_endorsement(own, alpha),
        agreement=_agreement(main, own, alpha),
        rubric=_rubric(owner_rows, alpha),
        models=_models(main, own, predictions, alpha),
        alt_test=_alt_test(main, own, predictions, epsilon, alpha),
        parameters={
            "unit": (
                "leave-one-owner-out jackknife; a share (the endorsement, the accuracies, the rubric): "
                "Korn-Graubard at the effective sample size, widened by Hall's correction for the skewness "
                "beyond a binomial's, united with Waudby-Smith and Ramdas's distribution-free betting "
                "interval over owners"
            ),
            "ci_level": 1 - 2 * alpha,
            "min_owners": MIN_OWNERS,
            "ties": "an owner's tie counts half a preference for chosen",
            "epsilon": epsilon,
        },
    )


def judge_choices(judges: pd.DataFrame) -> pd.DataFrame:
    """LLM judges' rows (:data:`analysis.judges.JUDGE_COLUMNS`) as choices, ``pair_id, model, choice``:
    per judge and pair the sign of its preference toward chosen, the mean over the orders it rated;
    the model is named "NAME (LLM judge)"."""
    rows = judges[judges[PREFERENCE].notna()].drop_duplicates([PAIR_ID, JUDGE, ORDER])
    if rows.empty:
        return pd.DataFrame(columns=[PAIR_ID, "model", "choice"])
    mean = rows.groupby([JUDGE, PAIR_ID], observed=True)[PREFERENCE].mean().reset_index()
    sign = np.sign(mean[PREFERENCE].to_numpy(dtype=float))
    return pd.DataFrame(
        {
            PAIR_ID: mean[PAIR_ID].astype(str),
            "model": mean[JUDGE].astype(str) + " (LLM judge)",
            "choice": np.select([sign > 0, sign < 0], [CHOSEN, REJECTED], "tie"),
        }
    )


def score_judges(
    section: OwnerSection,
    main: pd.DataFrame,
    owner_rows: pd.DataFrame,
    judges: pd.DataFrame,
    *,
    alpha: float = 0.05,
) -> OwnerSection:
    """The owners' section with the LLM judges scored against the owners beside the reward models: their
    accuracy against the owner and the majority, and the alternative annotator test with the owner as
    the reference (the section's epsilon)."""
    choices = judge_choices(judges)
    if choices.empty or owner_rows.empty:
        return section
    own = _owner_judgments(owner_rows)
    epsilon = float(section.parameters.get("epsilon", EPSILON["crowd"]))
    models = _models(main, own, choices, alpha)
    alt = _alt_test(main, own, choices, epsilon, alpha)
    return replace(
        section,
        models=pd.concat([section.models, models], ignore_index=True) if not models.empty else section.models,
        alt_test=pd.concat([section.alt_test, alt], ignore_index=True) if not alt.empty else section.alt_test,
    )


def owner_endorsement_verdict(section: OwnerSection, alpha: float, min_owners: int = MIN_OWNERS) -> Verdict:
    """*The profiles' owners prefer chosen*, over owners: the share of pairs whose owner prefers chosen
    (a tie half) against one half, one-sided at `alpha` with ``share_interval``."""
    row = section.endorsement.iloc[0]
    g, n = int(row["n_owners"]), int(row["n_pairs"])
    level = round(100 * (1 - 2 * alpha))
    numbers = (
        f"{row['share']:.1%} of {n} pairs preferred by their owner ({g} owners), "
        f"{level}% CI [{row['ci_low']:.1%}, {row['ci_high']:.1%}]"
    )
    status: Status
    if g < min_owners or np.isnan(row["ci_low"]):
        status, reason = "inconclusive", f": at least {min_owners} owners are needed"
    elif row["ci_low"] > 0.5:
        status, reason = "pass", ""
    elif row["ci_high"] < 0.5:
        status, reason = "fail", ": the owners prefer rejected"
    else:
        status, reason = "inconclusive", ": the interval includes one half"
    return Verdict(
        OWNER_ENDORSEMENT,
        "the profiles' owners prefer chosen (population: the owners of these profiles, each owner's pairs)",
        f"one-sided test of the share of pairs whose owner prefers chosen (tie = half) against 1/2 at "
        f"alpha = {alpha:g}, owners as the unit: the union of a leave-one-owner-out jackknife interval "
        "(Korn-Graubard Clopper-Pearson at the effective sample size widened by Hall's correction for "
        "the skewness beyond a binomial's, t quantile on owners - 1 df) and Waudby-Smith and Ramdas's "
        "distribution-free betting interval over owners (valid whatever the owners' distribution)",
        status,
        numbers + reason,
    )
