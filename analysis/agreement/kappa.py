"""Chance-corrected agreement on categories: Fleiss' and Cohen's kappa, Gwet's AC1/AC2, and percent
agreement."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.agreement.inputs import Weights, reliability_data


def fleiss_table(data: npt.ArrayLike, *, categories: npt.ArrayLike | None = None) -> npt.NDArray[np.int64]:
    """Count table for :func:`fleiss_kappa` from raw ratings.

    Parameters
    ----------
    data : array_like, shape (raters, units)
        Numeric ratings, ``np.nan`` for missing. Units nobody rated are dropped.
    categories : array_like, shape (C,), optional
        The categories (columns of the table), by default the sorted distinct values.

    Returns
    -------
    ndarray of int, shape (units, C)
        How many raters put each unit in each category.

    Examples
    --------
    >>> fleiss_table([[1, 2, 2], [1, 2, 3]])
    array([[2, 0, 0],
           [0, 2, 0],
           [0, 1, 1]])
    """
    x = reliability_data(data)
    x = x[:, ~np.isnan(x).all(axis=0)]
    values = x[~np.isnan(x)]
    cats = np.unique(values) if categories is None else np.asarray(categories, dtype=np.float64).ravel()
    outside = np.setdiff1d(values, cats)
    if outside.size:
        raise ValueError(f"data contains values outside categories: {outside[:5].tolist()}")
    order = np.argsort(cats)
    table = np.zeros((x.shape[1], cats.size), dtype=np.int64)
    for ratings in x:  # one rater at a time: a rater rates a unit at most once, so no index repeats
        unit = np.flatnonzero(~np.isnan(ratings))
        table[unit, order[np.searchsorted(cats[order], ratings[unit])]] += 1
    return table


#: Units per block when a per-unit quantity is computed block by block (bounded memory).
_BLOCK_UNITS = 1 << 16


def _blocks(n: int) -> range:
    return range(0, n, _BLOCK_UNITS)


def _pairwise_agreement(table: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """Per unit with at least two ratings, the share of its rater pairs that agree,
    sum_k t_k (t_k - 1) / (r (r - 1)), computed block by block (each value is exact integer arithmetic
    up to the division, so the blocks give the same numbers as the whole table at once)."""
    r_i = table.sum(axis=1)
    units = np.flatnonzero(r_i >= 2)
    out = np.empty(units.size)
    for start in _blocks(units.size):
        rows = units[start : start + _BLOCK_UNITS]
        t, r = table[rows].astype(np.float64), r_i[rows].astype(np.float64)
        out[start : start + rows.size] = (t * (t - 1.0)).sum(axis=1) / (r * (r - 1.0))
    return out


def _mean_shares(table: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """The mean over units of each category's share of the unit's ratings, block by block, each block
    added to the running sum row by row (the order of ``(table / r[:, None]).mean(axis=0)``)."""
    r_i = table.sum(axis=1).astype(np.float64)
    total = np.zeros(table.shape[1])
    for start in _blocks(table.shape[0]):
        shares = table[start : start + _BLOCK_UNITS] / r_i[start : start + _BLOCK_UNITS, None]
        total = np.vstack([total[None, :], shares]).sum(axis=0) if start else shares.sum(axis=0)
    return total / table.shape[0]


def fleiss_kappa(table: npt.ArrayLike) -> float:
    """Fleiss' kappa for a fixed number of raters per unit.

    Parameters
    ----------
    table : array_like, shape (units, categories)
        Non-negative integer counts: how many raters assigned each unit to each category. Every row
        must sum to the same number of raters (at least 2); build it with :func:`fleiss_table`.

    Returns
    -------
    float
        Kappa = (P_bar - P_e) / (1 - P_e).

    Notes
    -----
    With a different number of ratings per unit (missing ratings) Fleiss' kappa is not defined;
    use :func:`krippendorff_alpha` with ``level="nominal"`` instead.

    References
    ----------
    .. [1] Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters.
           Psychological Bulletin, 76(5), 378-382.

    Examples
    --------
    The 10 subjects x 14 raters x 5 categories example of Wikipedia's "Fleiss' kappa" article:

    >>> table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
    ...          [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
    ...          [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    >>> round(fleiss_kappa(table), 3)
    0.21
    """
    t = _counts(table)
    if t.ndim != 2:
        raise ValueError(f"table must be a 2-D array of shape (units, categories); got shape {t.shape}")
    if t.shape[0] < 1 or t.shape[1] < 2:
        raise ValueError(f"table needs at least one unit and two categories; got shape {t.shape}")
    per_unit = t.sum(axis=1)
    if per_unit.min() != per_unit.max():
        raise ValueError(
            f"fleiss_kappa needs the same number of ratings for every unit (found {int(per_unit.min())} "
            f"to {int(per_unit.max())}); use krippendorff_alpha for unequal numbers of raters"
        )
    k = per_unit[0]
    if k < 2:
        raise ValueError("fleiss_kappa needs at least two ratings per unit")
    p_cat = t.sum(axis=0).astype(np.float64) / float(t.sum())
    p_e = float((p_cat**2).sum())
    if p_e >= 1.0:
        raise ValueError("all ratings are in one category; kappa is undefined (no variation)")
    p_bar = float(_pairwise_agreement(t).mean())
    return (p_bar - p_e) / (1.0 - p_e)


def _counts(table: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """A count table as integers, or ValueError when it holds anything but non-negative integers."""
    t = np.asarray(table)
    if t.dtype.kind in "iu":
        if t.size and t.min() < 0:
            raise ValueError("table must hold non-negative integer counts")
        return t.astype(np.int64, copy=False)
    t = t.astype(np.float64)
    if not np.isfinite(t).all() or (t < 0).any() or (t != np.round(t)).any():
        raise ValueError("table must hold non-negative integer counts")
    return t.astype(np.int64)


def cohen_kappa(
    r1: npt.ArrayLike,
    r2: npt.ArrayLike,
    *,
    weights: Weights | None = None,
    labels: Sequence[object] | npt.ArrayLike | None = None,
) -> float:
    """Cohen's kappa for two raters, unweighted or with linear / quadratic weights.

    Parameters
    ----------
    r1, r2 : array_like, shape (units,)
        The two raters' labels for the same units; no missing values.
    weights : {None, "linear", "quadratic"}, default None
        Disagreement weights ``|i - j|`` or ``(i - j)**2`` on the label positions.
    labels : sequence, shape (C,), optional
        The ordered scale. Fixing it keeps an unused category in the weights (it changes the
        weighted kappa); by default the sorted distinct labels of ``r1`` and ``r2``.

    Returns
    -------
    float
        Kappa = 1 - sum(w * observed) / sum(w * expected).

    References
    ----------
    .. [1] Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and
           Psychological Measurement, 20(1), 37-46.
    .. [2] Cohen, J. (1968). Weighted kappa. Psychological Bulletin, 70(4), 213-220.

    Examples
    --------
    Wikipedia's "Cohen's kappa" worked example (50 proposals, 20 yes/yes, 5 yes/no, 10 no/yes,
    15 no/no; kappa = 0.4):

    >>> r1 = ["yes"] * 25 + ["no"] * 25
    >>> r2 = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    >>> round(cohen_kappa(r1, r2), 3)
    0.4
    """
    a, b = np.asarray(r1), np.asarray(r2)
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"r1 and r2 must be 1-D and of equal length; got shapes {a.shape} and {b.shape}")
    if a.size == 0:
        raise ValueError("r1 and r2 are empty")
    if pd.isna(a).any() or pd.isna(b).any():
        raise ValueError("r1 and r2 must not contain missing values")
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"weights must be None, 'linear' or 'quadratic'; got {weights!r}")
    scale = pd.Index(pd.unique(np.concatenate([a, b]))).sort_values() if labels is None else pd.Index(labels)
    if not scale.is_unique:
        raise ValueError("labels must not repeat")
    ia, ib = scale.get_indexer(a), scale.get_indexer(b)
    if (ia < 0).any() or (ib < 0).any():
        raise ValueError("r1 or r2 contains values not in labels")
    return kappa_from_codes(ia, ib, len(scale), weights=weights)


def kappa_from_codes(
    ia: npt.NDArray[np.intp], ib: npt.NDArray[np.intp], n_cat: int, *, weights: Weights | None = None
) -> float:
    """:func:`cohen_kappa` of two raters' labels given as positions 0..n_cat-1 on the scale (for a
    bootstrap: the labels are encoded once, each resample only counts)."""
    observed = np.bincount(ia * n_cat + ib, minlength=n_cat * n_cat).reshape(n_cat, n_cat) / ia.size
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    pos = np.arange(n_cat)
    dist = np.abs(pos[:, None] - pos[None, :]).astype(np.float64)
    w = {None: (dist > 0).astype(np.float64), "linear": dist, "quadratic": dist**2}[weights]
    denom = float((w * expected).sum())
    if denom == 0:
        raise ValueError("both raters use a single, identical category; kappa is undefined (no variation)")
    return 1.0 - float((w * observed).sum()) / denom


def _category_counts(
    data: npt.ArrayLike, categories: npt.ArrayLike | None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Counts (units rated at least once x categories) and the category values."""
    x = reliability_data(data)
    table = fleiss_table(x, categories=categories)
    cats = np.unique(x[~np.isnan(x)]) if categories is None else np.asarray(categories, np.float64).ravel()
    return table, cats


def _gwet(table: npt.NDArray[np.int64], w: npt.NDArray[np.float64]) -> float:
    r_i = table.sum(axis=1)
    q = table.shape[1]
    if q < 2:
        raise ValueError("Gwet's AC needs at least two categories")
    multi = r_i >= 2
    if not multi.any():
        raise ValueError("no unit has ratings from at least two raters; the coefficient is undefined")
    if np.array_equal(w, np.eye(q)):  # AC1: r*_ik = r_ik, the pairwise agreement of each unit
        p_a = float(_pairwise_agreement(table).mean())
    else:
        t2 = table[multi].astype(np.float64)
        r2 = r_i[multi].astype(np.float64)
        weighted = t2 @ w.T  # r*_ik = sum_l w_kl r_il
        p_a = float(((t2 * (weighted - 1.0)).sum(axis=1) / (r2 * (r2 - 1.0))).mean())
    pi = _mean_shares(table)
    p_e = float(w.sum() * (pi * (1.0 - pi)).sum() / (q * (q - 1)))
    if p_e >= 1.0:
        raise ValueError("chance agreement is 1; the coefficient is undefined")
    return (p_a - p_e) / (1.0 - p_e)


def gwet_ac1(data: npt.ArrayLike, *, categories: npt.ArrayLike | None = None) -> float:
    """Gwet's AC1 for nominal ratings by any number of raters, with missing values.

    Parameters
    ----------
    data : array_like, shape (raters, units)
        Numeric category codes, ``np.nan`` for missing.
    categories : array_like, shape (q,), optional
        All categories of the scale, by default the distinct observed values. An unused category
        changes AC1 (through q), so pass the full scale when it is known.

    Returns
    -------
    float
        AC1 = (p_a - p_e) / (1 - p_e) with p_a over units with at least two ratings and
        p_e = sum_k pi_k (1 - pi_k) / (q - 1) over units with at least one rating.

    References
    ----------
    .. [1] Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence
           of high agreement. British Journal of Mathematical and Statistical Psychology, 61, 29-48.
    .. [2] Gwet, K. L. (2014). Handbook of Inter-Rater Reliability (4th ed.). Advanced Analytics.

    Examples
    --------
    Krippendorff's 4 raters x 12 units data as analysed in Gwet's handbook and the ``irrCAC``
    package (AC1 = 0.77544):

    >>> from analysis.agreement.inputs import KRIPPENDORFF_2011 as data
    >>> round(gwet_ac1(data), 5)
    0.77544
    """
    table, cats = _category_counts(data, categories)
    return _gwet(table, np.eye(cats.size))


def gwet_ac2(
    data: npt.ArrayLike, *, weights: Weights = "quadratic", categories: npt.ArrayLike | None = None
) -> float:
    """Gwet's AC2: AC1 with linear or quadratic agreement weights on ordered numeric categories.

    Parameters
    ----------
    data : array_like, shape (raters, units)
        Numeric ratings, ``np.nan`` for missing.
    weights : {"linear", "quadratic"}, default "quadratic"
        ``1 - |k - l| / (max - min)`` or ``1 - (k - l)**2 / (max - min)**2`` on category values.
    categories : array_like, shape (q,), optional
        All categories of the scale, by default the distinct observed values.

    Returns
    -------
    float
        AC2.

    References
    ----------
    .. [1] Gwet, K. L. (2014). Handbook of Inter-Rater Reliability (4th ed.). Advanced Analytics.

    Examples
    --------
    Krippendorff's 4 x 12 data with quadratic weights (``irrCAC``: 0.914):

    >>> from analysis.agreement.inputs import KRIPPENDORFF_2011 as data
    >>> round(gwet_ac2(data, weights="quadratic"), 3)
    0.914
    """
    if weights not in ("linear", "quadratic"):
        raise ValueError(f"weights must be 'linear' or 'quadratic'; got {weights!r}")
    table, cats = _category_counts(data, categories)
    span = cats.max() - cats.min()
    dist = np.abs(cats[:, None] - cats[None, :]) / (span if span > 0 else 1.0)
    w = 1.0 - (dist if weights == "linear" else dist**2)
    return _gwet(table, w)


def percent_agreement(data: npt.ArrayLike) -> float:
    """Pairwise percent agreement, averaged over units with at least two ratings.

    Parameters
    ----------
    data : array_like, shape (raters, units)
        Ratings, ``np.nan`` for missing; values agree only when exactly equal.

    Returns
    -------
    float
        Mean over units of (agreeing rater pairs) / (all rater pairs) in the unit, in [0, 1].

    Examples
    --------
    Krippendorff's 4 x 12 data (Gwet's p_a in ``irrCAC``: 0.81818):

    >>> from analysis.agreement.inputs import KRIPPENDORFF_2011 as data
    >>> round(percent_agreement(data), 5)
    0.81818
    """
    shares = _pairwise_agreement(fleiss_table(data))
    if not shares.size:
        raise ValueError("no unit has ratings from at least two raters; agreement is undefined")
    return float(shares.mean())
