"""The per-item agreement table of a study's tidy label frame (alpha with its CI, ICC, Fleiss' kappa,
AC1, percent agreement, units used)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.aggregates import paired_aspects
from analysis.agreement.alpha import alpha_ci, krippendorff_alpha
from analysis.agreement.icc import icc_matrix
from analysis.agreement.inputs import Level
from analysis.agreement.kappa import fleiss_kappa, fleiss_table, gwet_ac1, percent_agreement
from analysis.frames import has_prefix
from analysis.scale import DEFAULT_SCALE, Scale

_TABLE_COLUMNS = [
    "item",
    "level",
    "krippendorff_alpha",
    "krippendorff_alpha_ci_low",
    "krippendorff_alpha_ci_high",
    "icc_a1",
    "icc_ak",
    "fleiss_kappa",
    "ac1",
    "percent_agreement",
    "n_units",
    "n_ratings",
    "ci_level",
    "ci_covers",
    "note",
]
#: Fewer units with two or more ratings than this give no agreement coefficient in a report: the
#: table says "too few doubly rated pairs" with the count instead (agreement_table's `min_units`).
MIN_REPLICATED_UNITS = 10


def _wide_units(
    long: pd.DataFrame, unit_cols: list[str], what: str
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]]:
    """Ratings (annotators x units) and the pair of each unit (as a code: a cluster label only)."""
    unit_code, first = _unit_codes(long, unit_cols)
    x = _wide(long, unit_code, what)
    pairs = pd.factorize(long[unit_cols[0]])[0]
    return x, pairs[first]


def _unit_codes(
    long: pd.DataFrame, unit_cols: list[str]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Each row's unit (the distinct combinations of unit_cols, numbered in order of first appearance,
    as pandas.factorize numbers tuples) and the first row of each unit: one factorize per column and
    one of the combined codes, instead of a factorize of tuples."""
    key = np.zeros(len(long), dtype=np.int64)
    for col in unit_cols:
        codes, uniques = pd.factorize(long[col])
        key = key * (len(uniques) + 1) + codes + 1  # missing (-1) is its own value
    unit_code, _ = pd.factorize(key)
    first = np.full(int(unit_code.max()) + 1 if unit_code.size else 0, len(long), dtype=np.int64)
    np.minimum.at(first, unit_code, np.arange(len(long)))
    return unit_code.astype(np.int64), first


def _wide(long: pd.DataFrame, unit_code: npt.NDArray[np.int64], what: str) -> npt.NDArray[np.float64]:
    """Ratings (annotators x units) from long rows with columns annotator and value, and each row's unit."""
    ann_code, ann = pd.factorize(long["annotator"], sort=True)
    n_units = int(unit_code.max()) + 1 if unit_code.size else 0
    cell = ann_code.astype(np.int64) * n_units + unit_code
    if np.bincount(cell, minlength=len(ann) * n_units).max(initial=0) > 1:
        raise ValueError(f"{what}: an annotator has more than one value for the same unit")
    x = np.full(len(ann) * n_units, np.nan)
    x[cell] = long["value"].to_numpy(dtype=np.float64)
    return x.reshape(len(ann), n_units)


def _slot_icc(x: npt.NDArray[np.float64]) -> tuple[float, float]:
    """ICC(A,1) and ICC(A,k) with the j-th rating of a unit as rater j (units with the modal count)."""
    counts = (~np.isnan(x)).sum(axis=0)
    counts = counts[counts >= 2]
    if counts.size == 0:
        return (np.nan, np.nan)
    values, freq = np.unique(counts, return_counts=True)
    k = int(values[freq == freq.max()].max())
    cols = x[:, (~np.isnan(x)).sum(axis=0) == k].T  # (units, annotators), annotators in sorted order
    y = cols[~np.isnan(cols)].reshape(-1, k)
    try:
        res = icc_matrix(y, 0.95)
    except ValueError:
        return (np.nan, np.nan)
    return (float(res.at["ICC(A,1)", "ICC"]), float(res.at["ICC(A,k)", "ICC"]))


def _equals(items: pd.Series, text: str) -> npt.NDArray[np.bool_]:
    """Which rows' text is `text` (for codes, one test per category)."""
    if isinstance(items.dtype, pd.CategoricalDtype):
        flags = np.array([str(c) == text for c in items.cat.categories], dtype=bool)
        codes = items.cat.codes.to_numpy()
        return np.where(codes >= 0, flags[codes] if len(flags) else False, False)
    return cast(np.ndarray, (items.astype(str) == text).to_numpy(dtype=bool))


_COVERS = {
    "pair": "new pairs rated by this panel (pairs resampled, both responses of a pair together)",
    "unit": "new (pair, response) units rated by this panel (units resampled independently)",
}


def _item_row(
    item: str,
    level: Level,
    x: npt.NDArray[np.float64],
    domain: npt.NDArray[np.float64] | None,
    n_boot: int,
    seed: int,
    confidence: float,
    clusters: npt.NDArray[np.intp] | None,
    min_units: int = 0,
) -> dict[str, object]:
    counts = (~np.isnan(x)).sum(axis=0)
    pairable = counts >= 2
    row: dict[str, object] = dict.fromkeys(_TABLE_COLUMNS, np.nan) | {"note": ""}
    row.update(
        item=item,
        level=level,
        n_units=int(pairable.sum()),
        n_ratings=int(counts[pairable].sum()),
        ci_level=confidence,
        ci_covers=_COVERS["unit" if clusters is None else "pair"],
    )
    if x.shape[0] < 2 or not pairable.any() or pairable.sum() < min_units:
        if pairable.sum() < min_units:
            row["note"] = (
                f"too few doubly rated pairs: {int(pairable.sum())} units rated twice or more, "
                f"{min_units} needed for a coefficient"
            )
        return row

    def safe(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ValueError:  # undefined for these data (e.g. no variation): reported as NaN
            return np.nan

    row["krippendorff_alpha"] = safe(krippendorff_alpha, x, level=level, value_domain=domain)
    ci = safe(
        alpha_ci,
        x,
        level=level,
        n_boot=n_boot,
        seed=seed,
        confidence=confidence,
        value_domain=domain,
        clusters=clusters,
    )
    if isinstance(ci, tuple):
        row["krippendorff_alpha_ci_low"], row["krippendorff_alpha_ci_high"] = ci
    row["icc_a1"], row["icc_ak"] = _slot_icc(x)
    rated = counts[counts > 0]
    if rated.min() == rated.max():
        row["fleiss_kappa"] = safe(fleiss_kappa, fleiss_table(x, categories=domain))
    row["ac1"] = safe(gwet_ac1, x, categories=domain)
    row["percent_agreement"] = safe(percent_agreement, x)
    return row


def agreement_table(
    frame: pd.DataFrame,
    *,
    quality_items: Sequence[str],
    rubric_item: str = "rubric",
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    scales: Mapping[str, Scale] | None = None,
    bootstrap: Literal["pair", "unit"] = "pair",
    min_units: int = 0,
) -> pd.DataFrame:
    """Agreement per rated item of a study, one row per quality item, the rubric and the preference.

    Parameters
    ----------
    frame : DataFrame, shape (rows, columns)
        The tidy long label frame: ``pair_id, annotator, response`` (``"chosen"``/``"rejected"``),
        ``item, value`` and optionally ``preference`` (-2..2, repeated on every row of a judgment).
        Rows with a missing ``value`` are ignored.
    quality_items : sequence of str
        Quality items, each rated on its integer scale (`scales`; ordinal).
    rubric_item : str, default "rubric"
        Name of the rubric row. The per-response rubric score is the mean over the items
        ``"<rubric_item>:0"``, ``"<rubric_item>:1"``, ... (0/1/2 each), or the item ``rubric_item``
        itself if the frame already holds it; its level is interval.
    n_boot, seed, confidence
        Passed to :func:`alpha_ci`.
    scales : mapping of str to analysis.scale.Scale, optional
        Each quality item's scale (the study's ``[quality]`` section), its ordinal domain; an item not
        in it is rated 1-5. A value outside an item's scale raises ``ValueError``.
    bootstrap : {"pair", "unit"}, default "pair"
        ``"pair"``: resample pairs (both responses of a pair together; a cluster bootstrap).
        ``"unit"``: resample (pair, response) units independently. ``ci_covers`` says which
        population the interval covers.
    min_units : int, default 0
        An item with fewer units rated twice or more gets no coefficient (NaN) and a ``note`` saying
        so (a report uses :data:`MIN_REPLICATED_UNITS`).

    Returns
    -------
    DataFrame, shape (items, 15)
        Columns ``item, level, krippendorff_alpha, krippendorff_alpha_ci_low,
        krippendorff_alpha_ci_high, icc_a1, icc_ak, fleiss_kappa, ac1, percent_agreement, n_units,
        n_ratings, ci_level, ci_covers, note``.

    Notes
    -----
    The unit of a quality item or the rubric is (pair_id, response): a pair gives two units. The
    preference (ordinal, domain -2..2) has one unit per pair. ``n_units`` counts units with at least
    two ratings and ``n_ratings`` the ratings in them. Fleiss' kappa is NaN when units have
    different numbers of ratings. Fleiss' kappa, AC1 and percent agreement treat every distinct value
    as a category (for the rubric: every distinct mean score). ``icc_a1``/``icc_ak`` are ICC(A,1) and
    ICC(A,k) with the j-th rating of a unit (annotators in sorted order) as rater j, on the units
    with the most common number of ratings; in a fully crossed design that is the usual two-way ICC
    with annotators as raters, otherwise the annotator effect is only approximately separated.
    A statistic that is undefined for the data (e.g. no variation) is NaN.

    Examples
    --------
    Two annotators who agree perfectly on one quality item:

    >>> frame = pd.DataFrame({
    ...     "pair_id": ["p1", "p1", "p2", "p2"] * 2,
    ...     "annotator": ["a"] * 4 + ["b"] * 4,
    ...     "response": ["chosen", "rejected"] * 4,
    ...     "item": "helpfulness",
    ...     "value": [5, 3, 4, 2] * 2,
    ... })
    >>> table = agreement_table(frame, quality_items=["helpfulness"], n_boot=50)
    >>> table[["item", "level", "krippendorff_alpha", "n_units"]].to_dict("records")
    [{'item': 'helpfulness', 'level': 'ordinal', 'krippendorff_alpha': 1.0, 'n_units': 4}]
    """
    required = ["pair_id", "annotator", "response", "item", "value"]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"frame has no column(s) {missing}")
    if bootstrap not in ("pair", "unit"):
        raise ValueError(f"bootstrap must be 'pair' or 'unit', got {bootstrap!r}")
    rated = frame.loc[frame["value"].notna(), required]
    unit = ["pair_id", "response"]
    rows: list[dict[str, object]] = []
    by_pair = bootstrap == "pair"
    for item in quality_items:
        sub = rated[rated["item"] == item]
        if sub.empty:
            raise ValueError(f"quality item {item!r} has no ratings in frame")
        x, pairs = _wide_units(sub, unit, item)
        cl = pairs if by_pair else None
        domain = np.array((scales or {}).get(item, DEFAULT_SCALE).values, dtype=float)
        rows.append(_item_row(item, "ordinal", x, domain, n_boot, seed, confidence, cl, min_units))

    whole = _equals(rated["item"], rubric_item)
    if whole.any():
        rubric = rated[whole]
    else:
        rubric = paired_aspects(rated[has_prefix(rated["item"], f"{rubric_item}:")])
        rubric = rubric.groupby(["pair_id", "response", "annotator"], as_index=False, sort=False)[
            "value"
        ].mean()
    if not rubric.empty:
        x, pairs = _wide_units(rubric, unit, rubric_item)
        cl = pairs if by_pair else None
        rows.append(_item_row(rubric_item, "interval", x, None, n_boot, seed, confidence, cl, min_units))

    if "preference" in frame.columns and frame["preference"].notna().any():
        pref = frame.loc[frame["preference"].notna(), ["pair_id", "annotator", "preference"]]
        per_judgment = pref.groupby(["pair_id", "annotator"], sort=False)["preference"]
        if (per_judgment.nunique() > 1).any():
            raise ValueError("preference differs between rows of the same judgment (pair_id, annotator)")
        pref = per_judgment.first().reset_index().rename(columns={"preference": "value"})
        x = _wide(pref, _unit_codes(pref, ["pair_id"])[0], "preference")
        # one unit per pair: resampling units is resampling pairs
        row = _item_row(
            "preference", "ordinal", x, np.arange(-2.0, 3.0), n_boot, seed, confidence, None, min_units
        )
        row["ci_covers"] = _COVERS["pair"].split(" (")[0] + " (one unit per pair)"
        rows.append(row)
    out = pd.DataFrame(rows, columns=_TABLE_COLUMNS)
    return out.astype({"n_units": np.int64, "n_ratings": np.int64})
