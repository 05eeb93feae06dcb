"""The six Shrout & Fleiss / McGraw & Wong intraclass correlations, as a two-way ANOVA on group means
(pingouin's formula-based ANOVA is slow at scale)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from analysis.lazy import stats

_ICC_NAMES = ["ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)", "ICC(C,k)"]
_ICC_DESCRIPTIONS = [
    "Single rater, one-way random",
    "Single rater, two-way random, absolute agreement",
    "Single rater, two-way mixed, consistency",
    "Mean of k raters, one-way random",
    "Mean of k raters, two-way random, absolute agreement",
    "Mean of k raters, two-way mixed, consistency",
]


def icc_matrix(y: npt.NDArray[np.float64], confidence: float) -> pd.DataFrame:
    """The six ICCs of a complete (targets x raters) matrix, as in pingouin 0.7."""
    n, k = y.shape
    if n < 2 or k < 2:
        raise ValueError(
            f"icc needs at least two targets and two raters with complete ratings; got {n} x {k}"
        )
    grand = y.mean()
    row = y.mean(axis=1)
    col = y.mean(axis=0)
    ss_rows = k * float(((row - grand) ** 2).sum())
    ss_cols = n * float(((col - grand) ** 2).sum())
    ss_within = float(((y - row[:, None]) ** 2).sum())
    ss_error = float(((y - row[:, None] - col[None, :] + grand) ** 2).sum())
    if ss_rows + ss_within == 0:
        raise ValueError("all ratings are identical; the ICC is undefined (no variation)")
    df1, df_w, df_e = n - 1, n * (k - 1), (n - 1) * (k - 1)
    # NumPy scalars so that a zero mean square gives inf/nan instead of ZeroDivisionError
    msb = np.float64(ss_rows / df1)
    msw = np.float64(ss_within / df_w)
    msj = np.float64(ss_cols / (k - 1))
    mse = np.float64(ss_error / df_e)
    with np.errstate(divide="ignore", invalid="ignore"):
        icc1 = (msb - msw) / (msb + (k - 1) * msw)
        icc2 = (msb - mse) / (msb + (k - 1) * mse + k * (msj - mse) / n)
        icc3 = (msb - mse) / (msb + (k - 1) * mse)
        icc1k = (msb - msw) / msb
        icc2k = (msb - mse) / (msb + (msj - mse) / n)
        icc3k = (msb - mse) / msb
        f1 = msb / msw
        f3 = msb / mse
        p1 = stats.f.sf(f1, df1, df_w)
        p3 = stats.f.sf(f3, df1, df_e)
        q = 1.0 - (1.0 - confidence) / 2.0
        f1l = f1 / stats.f.ppf(q, df1, df_w)
        f1u = f1 * stats.f.ppf(q, df_w, df1)
        f3l = f3 / stats.f.ppf(q, df1, df_e)
        f3u = f3 * stats.f.ppf(q, df_e, df1)
        l1, u1 = (f1l - 1) / (f1l + k - 1), (f1u - 1) / (f1u + k - 1)
        l3, u3 = (f3l - 1) / (f3l + k - 1), (f3u - 1) / (f3u + k - 1)
        # ICC(A,1): Satterthwaite degrees of freedom (McGraw & Wong 1996, case 2A)
        fj = msj / mse
        vn = df_e * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        vd = df1 * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        v = vn / vd
        f2u = stats.f.ppf(q, n - 1, v)
        f2l = stats.f.ppf(q, v, n - 1)
        l2 = n * (msb - f2u * mse) / (f2u * (k * msj + (k * n - k - n) * mse) + n * msb)
        u2 = n * (f2l * msb - mse) / (k * msj + (k * n - k - n) * mse + n * f2l * msb)
        ci_low = [l1, l2, l3, 1 - 1 / f1l, l2 * k / (1 + l2 * (k - 1)), 1 - 1 / f3l]
        ci_high = [u1, u2, u3, 1 - 1 / f1u, u2 * k / (1 + u2 * (k - 1)), 1 - 1 / f3u]
    out = pd.DataFrame(
        {
            "Type": _ICC_NAMES,
            "Description": _ICC_DESCRIPTIONS,
            "ICC": [icc1, icc2, icc3, icc1k, icc2k, icc3k],
            "F": [f1, f3, f3, f1, f3, f3],
            "df1": [df1] * 6,
            "df2": [df_w, df_e, df_e, df_w, df_e, df_e],
            "pval": [p1, p3, p3, p1, p3, p3],
            "ci_low": np.asarray(ci_low, dtype=np.float64),
            "ci_high": np.asarray(ci_high, dtype=np.float64),
        },
        index=pd.Index(_ICC_NAMES, name="icc"),
    )
    out[["ICC", "F", "pval"]] = out[["ICC", "F", "pval"]].astype(np.float64)
    return out


def icc(
    data: pd.DataFrame, *, targets: str, raters: str, ratings: str, confidence: float = 0.95
) -> pd.DataFrame:
    """Intraclass correlations (Shrout & Fleiss 1979; McGraw & Wong 1996) from a long DataFrame.

    Parameters
    ----------
    data : DataFrame, shape (ratings, columns)
        One row per rating, with the columns named by ``targets``, ``raters`` and ``ratings``.
        Each (target, rater) pair may appear once.
    targets, raters, ratings : str
        Column names of the rated objects, the raters and the numeric ratings.
    confidence : float, default 0.95
        Coverage of the F-based confidence intervals.

    Returns
    -------
    DataFrame, shape (6, 9)
        Index and ``Type`` ``"ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)", "ICC(C,k)"``
        (pingouin 0.7's names and order; Shrout & Fleiss call them ICC(1,1), ICC(2,1), ICC(3,1),
        ICC(1,k), ICC(2,k), ICC(3,k)), and columns ``Type, Description, ICC, F, df1, df2, pval,
        ci_low, ci_high``. ``attrs`` holds ``n_targets``, ``n_raters``, ``n_targets_dropped`` and a
        ``note`` on missing data.

    Notes
    -----
    Targets with any missing rating are deleted listwise (as pingouin's ``nan_policy="omit"``);
    the count is in ``attrs["n_targets_dropped"]``. The two-way ANOVA is computed from group means
    in NumPy and equals ``pingouin.intraclass_corr`` (validated against R psych) on the same data,
    but runs in milliseconds on hundreds of thousands of targets.

    References
    ----------
    .. [1] Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater
           reliability. Psychological Bulletin, 86(2), 420-428.
    .. [2] McGraw, K. O., & Wong, S. P. (1996). Forming inferences about some intraclass
           correlation coefficients. Psychological Methods, 1(1), 30-46.

    Examples
    --------
    The 6 targets x 4 judges table of Shrout & Fleiss (1979), Table 2:

    >>> scores = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    >>> long = pd.DataFrame([(t, j, s) for t, row in enumerate(scores) for j, s in enumerate(row)],
    ...                     columns=["target", "judge", "score"])
    >>> icc(long, targets="target", raters="judge", ratings="score")["ICC"].round(2).tolist()
    [0.17, 0.29, 0.71, 0.44, 0.62, 0.91]
    """
    if not isinstance(data, pd.DataFrame):
        raise TypeError("data must be a pandas DataFrame in long format")
    missing = [c for c in (targets, raters, ratings) if c not in data.columns]
    if missing:
        raise ValueError(f"data has no column(s) {missing}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1; got {confidence!r}")
    values = pd.to_numeric(data[ratings], errors="coerce").to_numpy(dtype=np.float64)
    if np.isnan(values).sum() > data[ratings].isna().sum():
        raise ValueError(f"column {ratings!r} must be numeric")
    t_code, t_uniques = pd.factorize(data[targets])
    r_code, r_uniques = pd.factorize(data[raters])
    if (t_code < 0).any() or (r_code < 0).any():
        raise ValueError(f"columns {targets!r} and {raters!r} must not contain missing values")
    n_t, n_r = len(t_uniques), len(r_uniques)
    cell = t_code.astype(np.int64) * n_r + r_code
    if np.bincount(cell, minlength=n_t * n_r).max(initial=0) > 1:
        raise ValueError(f"each ({targets}, {raters}) pair must appear at most once")
    flat = np.full(n_t * n_r, np.nan)
    flat[cell] = values
    wide = flat.reshape(n_t, n_r)
    complete = ~np.isnan(wide).any(axis=1)
    out = icc_matrix(wide[complete], confidence)
    dropped = int(n_t - complete.sum())
    out.attrs.update(
        n_targets=int(complete.sum()),
        n_raters=int(n_r),
        n_targets_dropped=dropped,
        note=f"listwise deletion: {dropped} of {n_t} targets with a missing rating dropped",
    )
    return out
