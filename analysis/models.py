"""Mixed-effects robustness check of the chosen-minus-rejected difference.

The per-pair paired TOST (:mod:`analysis.equivalence`) averages over annotators first. This module
fits the scores themselves, ``value ~ is_chosen``, with a random intercept per pair and annotator
effects, and tests the ``is_chosen`` coefficient against the equivalence margin.

Design (measured, see ``benchmarks/README.md``): statsmodels ``MixedLM`` with ``groups=pair_id``
takes ~16 s for one dimension of 20,000 pairs x 3 annotators x 2 responses (120,000 rows) on the
2-core benchmark machine, because it loops over the 20,000 groups in Python on every likelihood
evaluation; crossed random effects through ``vc_formula`` in one group are slower still and need a
dense rows x pairs design. So the random-intercept model is fitted by a vectorized REML kernel
(:func:`fit_random_intercept`): with V_i = s2 (I + g J) per pair, every quantity REML needs reduces to
per-pair sums (Sherman-Morrison), the scale is profiled out and the one remaining parameter g is
found by a bounded 1-D search. The kernel is tested against statsmodels ``MixedLM`` on the same data
(``tests/test_mixed_models.py``). It fits 120,000 rows in well under a second.

Which model is fitted (the result's ``model`` field says so):

* fewer than ``min_annotators_random`` annotators: annotator as fixed effects
  (``value ~ is_chosen + C(annotator)``, random intercept per pair; fast kernel);
* at least ``min_annotators_random`` annotators and at most ``CROSSED_MAX_ROWS`` rows: crossed random
  intercepts for pair and annotator with statsmodels ``MixedLM`` (one group, ``vc_formula``);
* many annotators and more rows: annotator-demeaned values (each annotator's mean on the item
  subtracted, which removes annotator intercepts like fixed effects would) with a random intercept
  per pair (fast kernel). Because both responses of a judgment come from the same annotator, the
  ``is_chosen`` contrast is within annotator, so treating annotators as fixed or random barely moves
  it; the demeaning only changes the residual df slightly.

On a failed or degenerate fit (non-convergence, singular matrices, no variation) the function falls
back to OLS with cluster-robust (by pair) standard errors and says so in ``warnings``; it never raises
for such data.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import optimize, stats
from statsmodels.tools.sm_exceptions import ConvergenceWarning

from analysis.frames import ANNOTATOR, CHOSEN, ITEM, PAIR_ID, RESPONSE, RUBRIC_ITEM, VALUE, add_rubric_means

__all__ = [
    "CROSSED_MAX_ROWS",
    "MixedResult",
    "RandomInterceptFit",
    "fit_random_intercept",
    "mixed_effect",
]

#: Largest number of rows fitted with statsmodels' crossed random effects (one group, vc_formula).
CROSSED_MAX_ROWS = 2000
_LOG_G_RANGE = (-23.0, 12.0)  # search range of log(pair variance / residual variance)


@dataclass(frozen=True)
class RandomInterceptFit:
    """REML fit of ``y = X b + u_group + e`` with u ~ N(0, pair_var), e ~ N(0, residual_var)."""

    params: np.ndarray
    cov_params: np.ndarray
    pair_var: float
    residual_var: float
    reml_loglik: float
    singular: bool


@dataclass(frozen=True)
class MixedResult:
    """Mixed-model estimate of chosen - rejected on one item, tested against (low, high).

    ``estimate``/``se`` is the ``is_chosen`` coefficient; ``ci_low``/``ci_high`` its 1 - 2*alpha
    interval with t quantiles on ``df`` = n_pairs - 1; ``p_lower``/``p_upper`` the two one-sided
    tests, ``pvalue`` the larger; ``equivalent`` = ``pvalue < alpha``. ``model`` names the model that
    was actually fitted; ``warnings`` lists everything the caller should know (fallbacks, singular
    fits, dropped terms).
    """

    item: str
    model: str
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    df: float
    p_lower: float
    p_upper: float
    pvalue: float
    equivalent: bool
    low: float
    high: float
    alpha: float
    n_obs: int
    n_pairs: int
    n_annotators: int
    pair_var: float
    annotator_var: float
    residual_var: float
    converged: bool
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a plain dict (``warnings`` joined by "; " to keep it flat)."""
        out = asdict(self)
        out["warnings"] = "; ".join(self.warnings)
        return out


def fit_random_intercept(y: np.ndarray, X: np.ndarray, groups: np.ndarray) -> RandomInterceptFit:
    """REML fit of a linear model with one random intercept per group, vectorized over groups.

    Parameters
    ----------
    y : numpy.ndarray, shape (n,)
        Response.
    X : numpy.ndarray, shape (n, p)
        Fixed-effects design (include the intercept column), full column rank.
    groups : numpy.ndarray, shape (n,)
        Group labels (any hashable values).

    Returns
    -------
    RandomInterceptFit
        ``singular`` is True when the group variance is estimated at (numerically) zero.

    Raises
    ------
    numpy.linalg.LinAlgError
        If the fixed-effects design is rank deficient or the residual sum of squares is zero.

    Notes
    -----
    With g = pair_var / residual_var and c_i = g / (1 + g n_i): X'V^-1 X = (X'X - sum_i c_i s_i s_i') / s2,
    where s_i are the per-group column sums of X, and likewise for X'V^-1 y and y'V^-1 y. The REML
    log-likelihood with s2 profiled out is
    -1/2 [(n - p) log(Q / (n - p)) + sum_i log(1 + g n_i) + log|A| + n - p] (+ const),
    maximized over log g in [-23, 12] by bounded Brent search, then compared with g = 0.
    Same model and criterion as statsmodels ``MixedLM(y, X, groups).fit(reml=True)``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> g = np.repeat(np.arange(200), 4)
    >>> x = np.tile([0.0, 1.0], 400)
    >>> y = 1 + 0.5 * x + rng.normal(0, 1, 200)[g] + rng.normal(0, 0.5, 800)
    >>> fit = fit_random_intercept(y, np.column_stack([np.ones(800), x]), g)
    >>> round(float(fit.params[1]), 1), fit.singular
    (0.5, False)
    """
    y = np.asarray(y, dtype=float)
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    _, gidx = np.unique(groups, return_inverse=True)
    n_groups = int(gidx.max()) + 1
    sizes = np.bincount(gidx, minlength=n_groups).astype(float)
    S = np.zeros((n_groups, p))
    np.add.at(S, gidx, X)
    t = np.bincount(gidx, weights=y, minlength=n_groups)
    XtX, Xty, yty = X.T @ X, X.T @ y, float(y @ y)
    if np.linalg.matrix_rank(XtX) < p:
        raise np.linalg.LinAlgError("fixed-effects design is rank deficient")

    def parts(gamma: float) -> tuple[np.ndarray, np.ndarray, float]:
        c = gamma / (1.0 + gamma * sizes)
        A = XtX - (S * c[:, None]).T @ S
        b = Xty - S.T @ (c * t)
        beta = np.linalg.solve(A, b)
        q = yty - float(c @ (t * t)) - float(b @ beta)
        return A, beta, q

    def neg_loglik(log_gamma: float) -> float:
        gamma = math.exp(log_gamma) if log_gamma > _LOG_G_RANGE[0] else 0.0
        A, _, q = parts(gamma)
        if q <= 0:
            return math.inf
        sign, logdet = np.linalg.slogdet(A)
        if sign <= 0:
            return math.inf
        return 0.5 * ((n - p) * math.log(q / (n - p)) + float(np.log1p(gamma * sizes).sum()) + logdet)

    res = optimize.minimize_scalar(neg_loglik, bounds=_LOG_G_RANGE, method="bounded", options={"xatol": 1e-7})
    best_log_g, best = float(res.x), float(res.fun)
    at_zero = neg_loglik(_LOG_G_RANGE[0])
    if at_zero <= best:
        best_log_g, best = _LOG_G_RANGE[0], at_zero
    if not math.isfinite(best):
        raise np.linalg.LinAlgError("REML criterion is not finite (no residual variation)")
    gamma = math.exp(best_log_g) if best_log_g > _LOG_G_RANGE[0] else 0.0
    A, beta, q = parts(gamma)
    scale = q / (n - p)
    cov = scale * np.linalg.inv(A)
    return RandomInterceptFit(
        params=beta,
        cov_params=cov,
        pair_var=gamma * scale,
        residual_var=scale,
        reml_loglik=-best - 0.5 * (n - p) * (1.0 + math.log(2 * math.pi)),
        singular=gamma * scale < 1e-8 * max(scale, 1e-300),
    )


def _item_data(frame: pd.DataFrame, item: str) -> pd.DataFrame:
    rows = frame[frame[ITEM] == item]
    if rows.empty and item == RUBRIC_ITEM:
        rows = add_rubric_means(frame)
        rows = rows[rows[ITEM] == item]
    data = pd.DataFrame(
        {
            PAIR_ID: rows[PAIR_ID].astype(str).to_numpy(),
            ANNOTATOR: rows[ANNOTATOR].astype(str).to_numpy(),
            "is_chosen": (rows[RESPONSE] == CHOSEN).to_numpy(dtype=float),
            VALUE: rows[VALUE].to_numpy(dtype=float),
        }
    )
    return data.dropna(subset=[VALUE]).reset_index(drop=True)


def _ols_cluster(data: pd.DataFrame) -> tuple[float, float]:
    """OLS of value ~ is_chosen with cluster-robust (by pair) SE."""
    X = sm.add_constant(data["is_chosen"].to_numpy(), has_constant="add")
    codes = pd.factorize(data[PAIR_ID])[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fit = sm.OLS(data[VALUE].to_numpy(), X).fit(cov_type="cluster", cov_kwds={"groups": codes})
    return float(fit.params[1]), float(fit.bse[1])


def _crossed_statsmodels(data: pd.DataFrame, messages: list[str]) -> tuple[float, float, float, float, float]:
    """Crossed random intercepts (pair, annotator) in one group with statsmodels vc_formula."""
    data = data.assign(group=1)
    model = sm.MixedLM.from_formula(
        "value ~ is_chosen",
        data=data,
        groups="group",
        re_formula="0",
        vc_formula={"pair": f"0 + C({PAIR_ID})", "annotator": f"0 + C({ANNOTATOR})"},
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = model.fit(reml=True)
    for w in caught:
        if issubclass(w.category, ConvergenceWarning | RuntimeWarning | UserWarning):
            messages.append(f"statsmodels: {w.message}")
    if not fit.converged:
        raise ConvergenceWarning("crossed MixedLM did not converge")
    vcomp = dict(zip(model.exog_vc.names, np.asarray(fit.vcomp, dtype=float), strict=True))
    return (
        float(fit.fe_params["is_chosen"]),
        float(fit.bse_fe["is_chosen"]),
        vcomp.get("pair", math.nan),
        vcomp.get("annotator", math.nan),
        float(fit.scale),
    )


def mixed_effect(
    frame: pd.DataFrame,
    item: str,
    *,
    margin: float,
    alpha: float = 0.05,
    min_annotators_random: int = 5,
) -> MixedResult:
    """Mixed-model equivalence check of chosen - rejected on one item.

    Parameters
    ----------
    frame : pandas.DataFrame
        A validated label frame (:func:`analysis.frames.validate_frame`).
    item : str
        Quality dimension, ``"rubric"`` (derived from the aspects if absent) or ``"rubric:<k>"``.
    margin : float
        Symmetric equivalence margin in raw scale points (bounds -margin, +margin), > 0.
    alpha : float, default 0.05
        Level of each one-sided test; the interval is 1 - 2*alpha.
    min_annotators_random : int, default 5
        With fewer annotators, annotator enters as fixed effects (a variance from 2-4 levels is not
        estimable); with at least this many, as a random intercept crossed with pair.

    Returns
    -------
    MixedResult

    Raises
    ------
    ValueError
        For a non-positive margin, a bad alpha, or an item without scores.

    Notes
    -----
    See the module docstring for the models and why the random-intercept fits use a vectorized REML
    kernel instead of statsmodels' group loop. The interval uses t quantiles with n_pairs - 1 df
    (the pairs are the replication unit; conservative compared with the normal quantile statsmodels
    prints).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> rows = [(f"p{i}", f"a{a}", r, "correctness", float(rng.integers(3, 6)), 0, 2, 10.0)
    ...         for i in range(60) for a in range(3) for r in ("chosen", "rejected")]
    >>> cols = ["pair_id", "annotator", "response", "item", "value", "preference", "confidence", "time_s"]
    >>> res = mixed_effect(pd.DataFrame(rows, columns=cols), "correctness", margin=0.5)
    >>> res.model
    'MixedLM (REML): value ~ is_chosen + C(annotator), random intercept per pair_id'
    >>> res.ci_low > -0.5 and res.ci_high < 0.5
    True
    """
    margin = float(margin)
    if not (math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a positive number, got {margin!r}")
    if not 0.0 < float(alpha) < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    alpha = float(alpha)
    data = _item_data(frame, item)
    if data.empty:
        raise ValueError(f"no scores for item '{item}'")
    messages: list[str] = []
    n_pairs = int(data[PAIR_ID].nunique())
    annotators = sorted(data[ANNOTATOR].unique())
    n_annotators = len(annotators)
    y = data[VALUE].to_numpy()
    pair_var = annotator_var = residual_var = math.nan
    converged = True

    use_fixed = n_annotators < min_annotators_random
    use_crossed = not use_fixed and len(data) <= CROSSED_MAX_ROWS
    if use_fixed:
        model = "MixedLM (REML): value ~ is_chosen + C(annotator), random intercept per pair_id"
        dummies = [(data[ANNOTATOR] == a).to_numpy(dtype=float) for a in annotators[1:]]
        X = np.column_stack([np.ones(len(data)), data["is_chosen"].to_numpy(), *dummies])
        if n_annotators == 1:
            model = "MixedLM (REML): value ~ is_chosen, random intercept per pair_id"
            messages.append("only 1 annotator: annotator effects cannot be estimated and are left out")
    elif use_crossed:
        model = (
            "MixedLM (REML, statsmodels vc_formula): value ~ is_chosen, "
            "crossed random intercepts pair_id, annotator"
        )
    else:
        model = (
            "MixedLM (REML): annotator-demeaned value ~ is_chosen, random intercept per pair_id "
            f"({n_annotators} annotators, {len(data)} rows > {CROSSED_MAX_ROWS}: crossed fit too slow)"
        )
        y = y - data.groupby(ANNOTATOR)[VALUE].transform("mean").to_numpy()
        X = np.column_stack([np.ones(len(data)), data["is_chosen"].to_numpy()])

    try:
        if float(np.ptp(data[VALUE].to_numpy())) == 0.0:
            raise np.linalg.LinAlgError("all values are identical")
        if n_pairs < 2:
            raise np.linalg.LinAlgError("fewer than 2 pairs")
        if use_crossed:
            estimate, se, pair_var, annotator_var, residual_var = _crossed_statsmodels(data, messages)
        else:
            fit = fit_random_intercept(y, X, data[PAIR_ID].to_numpy())
            estimate = float(fit.params[1])
            se = float(math.sqrt(fit.cov_params[1, 1]))
            pair_var, residual_var = fit.pair_var, fit.residual_var
            if fit.singular:
                messages.append("singular fit: the pair variance is estimated at zero")
    except (np.linalg.LinAlgError, ConvergenceWarning, ValueError) as exc:
        converged = False
        messages.append(f"mixed model failed ({exc}); fell back to OLS with cluster-robust SE by pair_id")
        model = "OLS: value ~ is_chosen, cluster-robust SE by pair_id (fallback)"
        try:
            estimate, se = _ols_cluster(data)
        except (np.linalg.LinAlgError, ValueError) as exc2:  # pragma: no cover - defensive
            messages.append(f"OLS fallback failed too ({exc2})")
            estimate = se = math.nan
        if not math.isfinite(se) or se == 0.0:
            messages.append("the standard error is zero or undefined: the interval is degenerate")

    df = max(n_pairs - 1, 1)
    low, high = -margin, margin
    if se > 0 and math.isfinite(se):
        t_lower, t_upper = (estimate - low) / se, (estimate - high) / se
    else:
        t_lower = math.inf if estimate > low else -math.inf
        t_upper = -math.inf if estimate < high else math.inf
        se = 0.0 if not math.isnan(estimate) else math.nan
    p_lower = float(stats.t.sf(t_lower, df))
    p_upper = float(stats.t.cdf(t_upper, df))
    half = float(stats.t.ppf(1 - alpha, df)) * se
    pvalue = max(p_lower, p_upper)
    return MixedResult(
        item=item,
        model=model,
        estimate=estimate,
        se=se,
        ci_low=estimate - half,
        ci_high=estimate + half,
        df=float(df),
        p_lower=p_lower,
        p_upper=p_upper,
        pvalue=pvalue,
        equivalent=bool(pvalue < alpha),
        low=low,
        high=high,
        alpha=alpha,
        n_obs=len(data),
        n_pairs=n_pairs,
        n_annotators=n_annotators,
        pair_var=float(pair_var),
        annotator_var=float(annotator_var),
        residual_var=float(residual_var),
        converged=converged,
        warnings=messages,
    )
