"""The t-based two one-sided tests (TOST): from an estimate and its standard error, paired, independent."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from analysis.equivalence.checks import TestResult, as_sample, check_alpha, check_bounds, paired_differences
from analysis.lazy import stats


@dataclass(frozen=True)
class TostResult(TestResult):
    """Result of a two one-sided tests (TOST) equivalence test.

    ``estimate`` is mean(x - y) (paired) or mean(x) - mean(y) (independent); ``ci_low``/``ci_high`` is
    the 1 - 2*alpha confidence interval; ``p_lower`` tests H0: diff <= low, ``p_upper`` tests
    H0: diff >= high; ``pvalue`` is the larger of the two; ``equivalent`` is ``pvalue < alpha``, which
    is the same as the 1 - 2*alpha interval lying strictly inside (low, high). ``low``/``high`` are in
    raw units.
    """

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    t_lower: float
    p_lower: float
    t_upper: float
    p_upper: float
    df: float
    pvalue: float
    equivalent: bool
    low: float
    high: float
    alpha: float
    n: int
    method: str

    def figures(self) -> dict[str, Any]:
        """What a result built on this TOST copies by name: the estimate with its SE and df, the
        interval, both one-sided p values and the larger, the verdict, the bounds and the level."""
        return {name: getattr(self, name) for name in _FIGURES}


_FIGURES = (
    "estimate",
    "se",
    "df",
    "ci_low",
    "ci_high",
    "p_lower",
    "p_upper",
    "pvalue",
    "equivalent",
    "low",
    "high",
    "alpha",
)


def tost_from_estimate(
    estimate: float, se: float, df: float, low: float, high: float, alpha: float, n: int, method: str
) -> TostResult:
    """TOST of an estimate with a t-distributed standard error: the one home of the TOST arithmetic.

    Parameters
    ----------
    estimate, se : float
        The estimate and its standard error.
    df : float
        Degrees of freedom of the t reference distribution.
    low, high : float
        Equivalence bounds in raw units.
    alpha : float
        Level of each one-sided test; the interval is 1 - 2*alpha.
    n : int
        Number of observations (reported only).
    method : str
        Name of the test (reported only).

    Returns
    -------
    TostResult
        With ``se == 0`` (no variation) the test is undefined: t and p are NaN and ``equivalent`` is
        False; a zero variance never gives p = 0.

    Examples
    --------
    >>> res = tost_from_estimate(0.1, 0.1, 20, -0.5, 0.5, 0.05, 21, "t")
    >>> round(res.pvalue, 4), res.equivalent
    (0.0004, True)
    >>> tost_from_estimate(0.0, 0.0, 1, -0.5, 0.5, 0.05, 2, "t").equivalent
    False
    """
    if not se > 0:
        return TostResult(
            estimate=float(estimate),
            se=float(se),
            ci_low=float(estimate),
            ci_high=float(estimate),
            t_lower=math.nan,
            p_lower=math.nan,
            t_upper=math.nan,
            p_upper=math.nan,
            df=float(df),
            pvalue=math.nan,
            equivalent=False,
            low=low,
            high=high,
            alpha=alpha,
            n=n,
            method=f"{method} (undefined: zero variance)",
        )
    t_lower = (estimate - low) / se
    t_upper = (estimate - high) / se
    p_lower = float(stats.t.sf(t_lower, df))
    p_upper = float(stats.t.cdf(t_upper, df))
    half = float(stats.t.ppf(1.0 - alpha, df)) * se
    pvalue = max(p_lower, p_upper)
    return TostResult(
        estimate=float(estimate),
        se=float(se),
        ci_low=float(estimate - half),
        ci_high=float(estimate + half),
        t_lower=float(t_lower),
        p_lower=p_lower,
        t_upper=float(t_upper),
        p_upper=p_upper,
        df=float(df),
        pvalue=pvalue,
        equivalent=bool(pvalue < alpha),
        low=low,
        high=high,
        alpha=alpha,
        n=n,
        method=method,
    )


def tost_paired(
    x: Any,
    y: Any,
    *,
    low: float,
    high: float,
    alpha: float = 0.05,
    bounds: Literal["raw", "dz"] = "raw",
) -> TostResult:
    """Paired TOST equivalence test of mean(x - y) against the interval (low, high).

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Paired observations (e.g. per-pair mean scores of chosen and rejected). Pairs with a missing
        value are dropped.
    low, high : float
        Equivalence bounds, ``low < high`` (asymmetric bounds are allowed).
    alpha : float, default 0.05
        Level of each one-sided test; the reported interval is 1 - 2*alpha (90% for 0.05).
    bounds : {"raw", "dz"}, default "raw"
        ``"raw"``: bounds in scale points. ``"dz"``: bounds as a standardized effect d_z (in units of
        the sample SD of the differences); they are converted to raw units, and the result's
        ``low``/``high`` hold the converted values. Raw bounds are preferred: d_z bounds depend on the
        observed SD, which makes the test slightly liberal (Lakens 2017).

    Returns
    -------
    TostResult

    Notes
    -----
    With d = x - y, se = sd(d)/sqrt(n) and df = n - 1: t_lower = (mean(d) - low)/se tested upper-tail,
    t_upper = (mean(d) - high)/se tested lower-tail (Schuirmann 1987). Validated against TOSTER's
    ``t_TOST`` and statsmodels' ``ttost_paired`` in ``tests/test_equivalence.py``.

    References
    ----------
    Schuirmann, D. J. (1987). A comparison of the two one-sided tests procedure and the power approach
    for assessing the equivalence of average bioavailability. J. Pharmacokinet. Biopharm. 15, 657-680.
    Lakens, D. (2017). Equivalence tests. Soc. Psychol. Personal. Sci. 8(4), 355-362.

    Examples
    --------
    >>> x = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]  # R datasets::sleep, group 1
    >>> y = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]    # group 2
    >>> res = tost_paired(x, y, low=-0.5, high=0.5)
    >>> round(res.estimate, 2), round(res.pvalue, 4), res.equivalent
    (-1.58, 0.9892, False)
    """
    alpha = check_alpha(alpha)
    low, high = check_bounds(low, high)
    d = paired_differences(x, y)
    n = len(d)
    sd = float(np.std(d, ddof=1))
    if bounds == "dz":
        low, high = low * sd, high * sd
        if not low < high:
            raise ValueError("d_z bounds cannot be converted to raw units: the differences have zero SD")
    elif bounds != "raw":
        raise ValueError(f"bounds must be 'raw' or 'dz', got {bounds!r}")
    return tost_from_estimate(
        float(np.mean(d)), sd / math.sqrt(n), n - 1, low, high, alpha, n, "paired t TOST"
    )


def tost_ind(
    x: Any, y: Any, *, low: float, high: float, alpha: float = 0.05, equal_var: bool = False
) -> TostResult:
    """Independent-samples TOST equivalence test of mean(x) - mean(y) against (low, high).

    Parameters
    ----------
    x, y : array_like
        The two samples (missing values dropped, at least 2 each).
    low, high : float
        Equivalence bounds in raw units, ``low < high``.
    alpha : float, default 0.05
        Level of each one-sided test; the interval is 1 - 2*alpha.
    equal_var : bool, default False
        False: Welch's t with Satterthwaite df (the default, as in R and TOSTER). True: pooled SD,
        df = n_x + n_y - 2.

    Returns
    -------
    TostResult

    Examples
    --------
    >>> x = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
    >>> y = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
    >>> res = tost_ind(x, y, low=-0.5, high=0.5)
    >>> round(res.df, 2), round(res.p_upper, 4), res.method
    (17.78, 0.0125, 'Welch t TOST')
    """
    alpha = check_alpha(alpha)
    low, high = check_bounds(low, high)
    xa, ya = as_sample(x, "x"), as_sample(y, "y")
    nx, ny = len(xa), len(ya)
    vx, vy = float(np.var(xa, ddof=1)), float(np.var(ya, ddof=1))
    if equal_var:
        df = nx + ny - 2.0
        pooled = ((nx - 1) * vx + (ny - 1) * vy) / df
        se = math.sqrt(pooled * (1.0 / nx + 1.0 / ny))
        method = "pooled t TOST"
    else:
        ax, ay = vx / nx, vy / ny
        se = math.sqrt(ax + ay)
        denom = ax**2 / (nx - 1) + ay**2 / (ny - 1)
        df = (ax + ay) ** 2 / denom if denom > 0 else nx + ny - 2.0
        method = "Welch t TOST"
    estimate = float(np.mean(xa) - np.mean(ya))
    return tost_from_estimate(estimate, se, df, low, high, alpha, nx + ny, method)
