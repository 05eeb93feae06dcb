"""Crossed random-effects models of the chosen - rejected contrast (pair and annotator effects).

The claim "chosen and rejected are equivalent on general quality" is about responses and annotators
in general, not about the pairs and the panel of one study. Each judgment gives one difference
``d = chosen - rejected`` (same annotator, same pair, same item), and the model is

    d_ij = x_ij' b + p_i + a_j + e_ij,   p_i ~ N(0, s2_pair), a_j ~ N(0, s2_annotator), e_ij ~ N(0, s2)

with ``p_i`` the pair-specific gap (pair x response interaction of the scores), ``a_j`` the
annotator-specific gap (annotator x response interaction: annotators differ in how much of a gap they
see) and ``e_ij`` the judgment noise. Pair and annotator intercepts of the raw scores cancel in the
difference, so they need no terms. The fixed intercept is the mean gap over the populations of pairs
and annotators; its variance contains ``s2_annotator / (number of annotators)``, so a small panel
gives a wide interval and few degrees of freedom: the honest answer.

Fit: REML with the scale profiled out and two variance ratios ``g_p = s2_pair / s2``,
``g_a = s2_annotator / s2`` optimized (Nelder-Mead on their square roots, both may be 0). Every
quantity is a grouped sum: the pair effects are removed block-wise (Sherman-Morrison per pair), the
annotator effects through a q x q system (Woodbury, q = number of annotators) built by grouped sums
(``np.bincount``) over the judgments and the annotator couples within a pair; no BLAS call touches
the long vectors (a multithreaded BLAS spinning on a busy machine was 50x slower). 60,000 judgments
fit in about a second. Degrees of freedom of a fixed effect: Satterthwaite (1946) as in lmerTest
(Kuznetsova et al. 2017), with the asymptotic
covariance of the variance estimates from the numerical Hessian of the REML deviance; components
estimated at zero are held at zero. Tested against statsmodels ``MixedLM`` (``tests/test_mixed.py``)
and against the closed-form ANOVA answer of a balanced design.

References
----------
Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
Biometrics Bulletin 2(6), 110-114.
Kuznetsova, A., Brockhoff, P. B., Christensen, R. H. B. (2017). lmerTest package: tests in linear
mixed effects models. J. Stat. Softw. 82(13).
Baayen, R. H., Davidson, D. J., Bates, D. M. (2008). Mixed-effects modeling with crossed random
effects for subjects and items. J. Mem. Lang. 59, 390-412.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from analysis.aggregates import judgment_differences
from analysis.equivalence import TostResult, tost_from_estimate
from analysis.equivalence.checks import WarnedResult, check_margin
from analysis.frames import ANNOTATOR, PAIR_ID
from analysis.lazy import optimize, stats
from analysis.unanimous import (
    UNANIMOUS_METHOD,
    distinct_matching,
    lower_end,
    unanimous_message,
    unanimous_p,
    upper_end,
)

__all__ = [
    "CrossedFit",
    "MixedResult",
    "fit_crossed",
    "guarded_se",
    "intercept_se",
    "mixed_effect",
]

_THETA_MAX = 100.0  # upper bound of sqrt(variance ratio)
_NEAR_ZERO = 0.05  # a sqrt(ratio) below this also tries the fits with that component at zero


@dataclass(frozen=True)
class CrossedFit:
    """REML fit of ``y = X b + u_pair + u_annotator + e``.

    ``df`` holds the Satterthwaite degrees of freedom of each fixed effect; ``boundary`` names the
    variance components estimated at zero (held at zero for the df). ``capped``: a variance ratio
    reached its bound (``_THETA_MAX ** 2``), so the residual is too small beside a component for REML
    to size the components (judgments without noise: each annotator, or each pair, always alike);
    then the few-annotator guard takes ``mean_vars``, the sample variances of the pair means and of
    the annotator means, instead.
    """

    params: np.ndarray
    cov_params: np.ndarray
    df: np.ndarray
    pair_var: float
    annotator_var: float
    residual_var: float
    reml_loglik: float
    n_obs: int
    n_pairs: int
    n_annotators: int
    boundary: tuple[str, ...]
    converged: bool
    capped: bool = False
    mean_vars: tuple[float, float] = (0.0, 0.0)


def group_codes(labels: Any) -> np.ndarray:
    """Each label's rank among the distinct labels (``np.unique``'s inverse), by hashing; a categorical
    whose categories are sorted is ranked from its integer codes (no text per row)."""
    dtype = getattr(labels, "dtype", None)
    if isinstance(dtype, pd.CategoricalDtype) and dtype.categories.is_monotonic_increasing:
        return np.asarray(pd.factorize(labels, sort=True)[0])
    return np.asarray(pd.factorize(np.asarray(labels), sort=True)[0])


class _Crossed:
    """Grouped sums of one data set; evaluates the REML criterion for any variance ratios.

    A pair's weight in V^-1 depends only on how many judgments it has, c = gp / (1 + gp * size), so
    every sum over pairs is kept per size class once: an evaluation then costs a few q x q
    operations (q annotators) whatever the number of judgments."""

    def __init__(self, y: np.ndarray, X: np.ndarray, pairs: np.ndarray, annotators: np.ndarray) -> None:
        self.n, self.p = X.shape
        pi, ai = group_codes(pairs), group_codes(annotators)
        self.n_pairs, self.q = int(pi.max()) + 1, int(ai.max()) + 1
        sizes = np.bincount(pi, minlength=self.n_pairs)
        self.na = np.bincount(ai, minlength=self.q).astype(float)
        S = np.column_stack([np.bincount(pi, weights=X[:, k], minlength=self.n_pairs) for k in range(self.p)])
        t = np.bincount(pi, weights=y, minlength=self.n_pairs)
        self.ZX = np.column_stack([np.bincount(ai, weights=X[:, k], minlength=self.q) for k in range(self.p)])
        self.Zy = np.bincount(ai, weights=y, minlength=self.q)
        self.mean_vars = (_sample_var(t / sizes), _sample_var(self.Zy / self.na))
        self.XtX = self._gram(X, X, np.ones(self.n))
        self.Xty = np.array([float((X[:, k] * y).sum()) for k in range(self.p)])
        self.yty = float((y * y).sum())
        # per size class l: the pairs' count, sum S S', sum S t, sum t^2
        size_values, size_class = np.unique(sizes, return_inverse=True)
        self.class_sizes = size_values.astype(float)
        self.class_pairs = np.bincount(size_class).astype(float)
        St = np.column_stack([S, t])
        self.class_gram = np.stack(
            [self._gram(St, St, (size_class == c).astype(float)) for c in range(len(size_values))]
        )
        # per size class, by annotator: N' diag(class) N (the annotator couples within a pair) and
        # Z' diag(class) N [S t]
        obs_class = size_class[pi]
        order = np.argsort(pi, kind="stable")
        p_sorted, a_sorted = pi[order], ai[order]
        first = np.searchsorted(p_sorted, np.arange(self.n_pairs))
        reps = sizes.astype(np.int64)[p_sorted]
        j = np.repeat(np.arange(self.n), reps)
        k = np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
        couple_pair = p_sorted[j]
        cell = (size_class[couple_pair] * self.q + a_sorted[j]) * self.q + a_sorted[first[couple_pair] + k]
        self.class_couples = np.bincount(cell, minlength=len(size_values) * self.q * self.q).reshape(
            len(size_values), self.q, self.q
        )
        self.class_cross = np.stack(
            [
                np.bincount(obs_class * self.q + ai, weights=St[pi, col], minlength=len(size_values) * self.q)
                for col in range(self.p + 1)
            ],
            axis=-1,
        ).reshape(len(size_values), self.q, self.p + 1)
        self._flat = {
            name: getattr(self, name).reshape(len(size_values), -1)
            for name in ("class_gram", "class_couples", "class_cross")
        }

    @staticmethod
    def _gram(A: np.ndarray, B: np.ndarray, w: np.ndarray) -> np.ndarray:
        """A' diag(w) B for tall, thin A and B, by column sums (no BLAS: a multithreaded BLAS spinning
        on a busy machine made one evaluation 50x slower)."""
        return np.array(
            [[float((w * A[:, j] * B[:, k]).sum()) for k in range(B.shape[1])] for j in range(A.shape[1])]
        )

    def _weighted(self, c: np.ndarray, name: str) -> np.ndarray:
        """sum_l c_l A_l of the per-size-class array `name` (what ``np.tensordot(c, A, axes=1)``
        computes, by the same product, without its per-call bookkeeping)."""
        stack = getattr(self, name)
        return cast(np.ndarray, np.dot(c.reshape(1, -1), self._flat[name]).reshape(stack.shape[1:]))

    def parts(self, gp: float, ga: float) -> tuple[np.ndarray, np.ndarray, float, float]:
        """X'V*^-1 X, its solution beta, Q = y'P*y and log|V*| for V* = V / s2."""
        c = gp / (1.0 + gp * self.class_sizes)
        gram = self._weighted(c, "class_gram")
        XWX = self.XtX - gram[: self.p, : self.p]
        XWy = self.Xty - gram[: self.p, self.p]
        yWy = self.yty - float(gram[self.p, self.p])
        logdet = float((self.class_pairs * np.log1p(gp * self.class_sizes)).sum())
        if ga > 0:
            q = self.q
            M = np.diag(self.na) - self._weighted(c, "class_couples")
            cross = self._weighted(c, "class_cross")
            ZWX = self.ZX - cross[:, : self.p]
            ZWy = self.Zy - cross[:, self.p]
            K = np.eye(q) / ga + M
            chol = np.linalg.cholesky(K)
            sol = np.linalg.solve(chol, np.column_stack([ZWX, ZWy]))
            lx, ly = sol[:, : self.p], sol[:, self.p]
            XWX = XWX - lx.T @ lx
            XWy = XWy - lx.T @ ly
            yWy = yWy - float(ly @ ly)
            # log|I + ga M| = q log ga + log|K|
            logdet += q * math.log(ga) + 2.0 * float(np.log(np.diag(chol)).sum())
        beta = np.linalg.solve(XWX, XWy)
        qf = yWy - float(XWy @ beta)
        return XWX, beta, qf, logdet

    def profiled(self, gp: float, ga: float) -> float:
        """REML deviance with the scale profiled out (constants dropped)."""
        try:
            XWX, _, q, logdet = self.parts(gp, ga)
        except np.linalg.LinAlgError:
            return math.inf
        if not q > 1e-12 * self.yty:  # no residual variation left but rounding
            return math.inf
        sign, logdet_x = np.linalg.slogdet(XWX)
        if sign <= 0:
            return math.inf
        m = self.n - self.p
        return cast(float, m * math.log(q / m) + logdet + logdet_x)

    def deviance(self, sigma: np.ndarray) -> float:
        """Full REML deviance -2 l_R at variances (s2_pair, s2_annotator, s2), constants dropped."""
        s2p, s2a, s2 = (float(v) for v in sigma)
        if s2 <= 0:
            return math.inf
        XWX, _, q, logdet = self.parts(max(s2p, 0.0) / s2, max(s2a, 0.0) / s2)
        logdet_x = float(np.linalg.slogdet(XWX)[1])
        m = self.n - self.p
        return cast(float, m * math.log(s2) + logdet + logdet_x + q / s2)

    def cov_beta(self, sigma: np.ndarray) -> np.ndarray:
        s2p, s2a, s2 = (float(v) for v in sigma)
        XWX, _, _, _ = self.parts(max(s2p, 0.0) / s2, max(s2a, 0.0) / s2)
        return s2 * np.linalg.inv(XWX)


def _hessian(fun: Any, x: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Central-difference Hessian."""
    k = len(x)
    H = np.zeros((k, k))
    f0 = fun(x)
    for i in range(k):
        ei = np.zeros(k)
        ei[i] = steps[i]
        H[i, i] = (fun(x + ei) - 2 * f0 + fun(x - ei)) / steps[i] ** 2
        for j in range(i):
            ej = np.zeros(k)
            ej[j] = steps[j]
            H[i, j] = H[j, i] = (
                fun(x + ei + ej) - fun(x + ei - ej) - fun(x - ei + ej) + fun(x - ei - ej)
            ) / (4 * steps[i] * steps[j])
    return H


def fit_crossed(
    y: Any,
    X: Any,
    pairs: Any,
    annotators: Any,
    *,
    annotator_effect: bool = True,
    start: tuple[float, float] | None = None,
) -> CrossedFit:
    """REML fit of a linear model with crossed random intercepts for pair and annotator.

    Parameters
    ----------
    y : array_like, shape (n,)
        Response (here: one chosen - rejected difference per judgment).
    X : array_like, shape (n, p)
        Fixed-effects design including the intercept column, full column rank.
    pairs, annotators : array_like, shape (n,)
        Group labels of the two crossed factors (any hashable values).
    annotator_effect : bool, default True
        False fits the pair effect only (the annotator variance held at 0).
    start : tuple of float, optional
        Starting variance ratios ``(s2_pair / s2, s2_annotator / s2)``, e.g. from a fit of the same
        data without covariates (fewer iterations; the optimum is the same).

    Returns
    -------
    CrossedFit

    Raises
    ------
    ValueError
        Fewer than 2 pairs, mismatched lengths, a rank-deficient design, no more observations than
        fixed effects, or no residual variation.

    Notes
    -----
    With ``c_i = g_p / (1 + g_p n_i)`` the pair-only inverse is ``W = I - sum_i c_i 1_i 1_i'``; the
    annotator effects enter by Woodbury with ``K = I / g_a + Z_a' W Z_a`` (q x q), so
    ``u' V*^-1 v = u' W v - (Z_a' W u)' K^-1 (Z_a' W v)`` and
    ``log|V*| = sum_i log(1 + g_p n_i) + q log g_a + log|K|``. The profiled REML deviance
    ``(n - p) log(Q / (n - p)) + log|V*| + log|X' V*^-1 X|`` is minimized over ``sqrt(g_p)``,
    ``sqrt(g_a)`` (Nelder-Mead, and near a boundary also the one-component fits by Brent's
    method), the same criterion as statsmodels ``MixedLM(..., reml=True)``.

    Examples
    --------
    A balanced design, 3 annotators x 50 pairs; the annotator gap varies (SD 0.3):

    >>> rng = np.random.default_rng(0)
    >>> pair, ann = np.repeat(np.arange(50), 3), np.tile(np.arange(3), 50)
    >>> d = 0.2 + rng.normal(0, 0.3, 3)[ann] + rng.normal(0, 0.4, 50)[pair] + rng.normal(0, 0.8, 150)
    >>> fit = fit_crossed(d, np.ones((150, 1)), pair, ann)
    >>> round(float(fit.params[0]), 3), round(float(fit.df[0]), 1)
    (0.274, 3.0)
    """
    model = _checked_model(y, X, pairs, annotators)
    use_a = annotator_effect and model.q >= 2
    best_value, best = _best_theta(model, use_a, start)
    return _fit_at(model, best_value, best, use_a)


def _checked_model(y: Any, X: Any, pairs: Any, annotators: Any) -> _Crossed:
    """The grouped sums of a data set a crossed model can be fitted to, or ValueError why not."""
    y = np.asarray(y, dtype=float)
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if not (len(y) == len(X) == len(pairs) == len(annotators)):
        raise ValueError("y, X, pairs and annotators must have the same length")
    model = _Crossed(y, X, pairs, annotators)
    if model.n_pairs < 2:
        raise ValueError(f"a crossed model needs at least 2 pairs, got {model.n_pairs}")
    if np.linalg.matrix_rank(model.XtX) < model.p:
        raise ValueError("the fixed-effects design is rank deficient")
    if model.n <= model.p:
        raise ValueError(
            f"{model.n} observations leave no residual degrees of freedom for {model.p} fixed effects"
        )
    return model


def _best_theta(model: _Crossed, use_a: bool, start: tuple[float, float] | None) -> tuple[float, np.ndarray]:
    """The minimum of the profiled REML criterion over theta = sqrt(variance ratios), and where."""

    def crit(theta: np.ndarray) -> float:
        return model.profiled(float(theta[0]) ** 2, float(theta[1]) ** 2 if use_a else 0.0)

    # g = theta^2, so the search over theta is unconstrained (Nelder-Mead: scipy's L-BFGS-B costs
    # milliseconds per iteration in its own bookkeeping, more than this criterion)
    options = {"xatol": 1e-7, "fatol": 1e-12, "maxiter": 2000, "maxfev": 4000}

    def search(start: np.ndarray) -> tuple[float, np.ndarray]:
        if not use_a:
            x, value = _bounded_min(lambda v: crit(np.array([v, 0.0])))
            return value, np.array([x, 0.0])
        res = optimize.minimize(_capped(crit), start, method="Nelder-Mead", options=options)
        return _uncapped(res.fun), np.minimum(np.abs(np.asarray(res.x, dtype=float)), _THETA_MAX)

    theta0 = (
        np.array([0.7, 0.7]) if start is None else np.sqrt(np.maximum(np.asarray(start, float), 0.0)) + 0.01
    )
    candidates: list[tuple[float, np.ndarray]] = [search(theta0)]
    # near a boundary also fit each component alone (and none)
    if use_a and np.any(candidates[0][1] < _NEAR_ZERO):
        candidates += _one_component_fits(crit)
    best_value, best = min(candidates, key=lambda item: item[0])
    if not math.isfinite(best_value):
        raise ValueError("the REML criterion is not finite (no residual variation)")
    return best_value, best


def _one_component_fits(crit: Any) -> list[tuple[float, np.ndarray]]:
    """The criterion's minimum with only the pair, only the annotator, and neither component."""
    candidates = []
    for free in (0, 1):

        def along(v: float, free: int = free) -> float:
            theta = np.zeros(2)
            theta[free] = v
            return float(crit(theta))

        x, value = _bounded_min(along)
        theta = np.zeros(2)
        theta[free] = x
        candidates.append((value, theta))
    candidates.append((float(crit(np.zeros(2))), np.zeros(2)))
    return candidates


#: An infinite criterion as the searches see it: they subtract values, and inf - inf is no step.
_INFINITE_AS = 1e100


def _capped(fun: Any) -> Any:
    """`fun` with an infinite value taken as :data:`_INFINITE_AS`."""
    return lambda x: min(float(fun(x)), _INFINITE_AS)


def _uncapped(value: float) -> float:
    """A value of a :func:`_capped` function as the criterion's own (infinite where it was capped)."""
    return float(value) if value < _INFINITE_AS else math.inf


def _bounded_min(fun: Any) -> tuple[float, float]:
    """Where on [0, _THETA_MAX] `fun` is least, and its value there (scipy's bounded Brent search)."""
    res = optimize.minimize_scalar(
        _capped(fun),
        bounds=(0.0, _THETA_MAX),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return float(res.x), _uncapped(res.fun)


def _fit_at(model: _Crossed, best_value: float, best: np.ndarray, use_a: bool) -> CrossedFit:
    """The fit at the optimum theta: estimates, their covariance, Satterthwaite df, boundaries."""
    gp, ga = float(best[0]) ** 2, (float(best[1]) ** 2 if use_a else 0.0)
    XWX, beta, q, _ = model.parts(gp, ga)
    m = model.n - model.p
    s2 = q / m
    sigma = np.array([gp * s2, ga * s2, s2])
    tiny = 1e-8 * s2
    boundary = tuple(name for name, v in (("pair", sigma[0]), ("annotator", sigma[1])) if v <= tiny)
    if not use_a and "annotator" not in boundary:
        boundary = (*boundary, "annotator")
    sigma[:2] = np.where(sigma[:2] <= tiny, 0.0, sigma[:2])
    cov = s2 * np.linalg.inv(XWX)
    df = _satterthwaite(model, sigma, cov)
    return CrossedFit(
        params=beta,
        cov_params=cov,
        df=df,
        pair_var=float(sigma[0]),
        annotator_var=float(sigma[1]),
        residual_var=float(s2),
        reml_loglik=-0.5 * (best_value + m * (1.0 + math.log(2 * math.pi))),
        n_obs=model.n,
        n_pairs=model.n_pairs,
        n_annotators=model.q,
        boundary=boundary,
        converged=bool(math.isfinite(best_value)),
        capped=bool(np.any(best >= _THETA_MAX * (1 - 1e-6))),
        mean_vars=model.mean_vars,
    )


def _sample_var(means: np.ndarray) -> float:
    """The sample variance (ddof 1) of group means; 0 for fewer than two."""
    return float(np.var(means, ddof=1)) if len(means) > 1 else 0.0


def _satterthwaite(model: _Crossed, sigma: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Satterthwaite df per fixed effect; variance components at zero are held fixed."""
    free = [i for i in range(3) if i == 2 or sigma[i] > 0]
    x0 = sigma[free]
    steps = np.maximum(np.abs(x0) * 1e-4, 1e-7)
    if steps[-1] >= x0[-1]:  # the residual variance within a step of 0: no derivative there, df undefined
        return np.full(model.p, math.nan)

    def full(x: np.ndarray) -> np.ndarray:
        s = sigma.copy()
        s[free] = x
        return s

    H = _hessian(lambda x: model.deviance(full(x)), x0, steps)
    try:
        A = 2.0 * np.linalg.inv(H)
    except np.linalg.LinAlgError:
        return np.full(model.p, math.nan)
    df = np.empty(model.p)
    for k in range(model.p):
        grad = np.empty(len(free))
        for i in range(len(free)):
            e = np.zeros(len(free))
            e[i] = steps[i]
            grad[i] = (model.cov_beta(full(x0 + e))[k, k] - model.cov_beta(full(x0 - e))[k, k]) / (
                2 * steps[i]
            )
        denom = float(grad @ A @ grad)
        df[k] = 2.0 * cov[k, k] ** 2 / denom if denom > 0 else math.inf
    # never more than the residual df, never fewer than 1
    return np.clip(df, 1.0, float(model.n - model.p))


@dataclass(frozen=True)
class MixedResult(WarnedResult):
    """The crossed random-effects TOST of chosen - rejected on one item.

    ``estimate``/``se``: the mean gap over pairs and annotators (fixed intercept); ``df``: its
    Satterthwaite df; ``ci_low``/``ci_high``: the 1 - 2*alpha interval; ``p_lower``/``p_upper``: the
    two one-sided tests, ``pvalue`` the larger; ``equivalent`` = ``pvalue < alpha``.
    ``pair_var``, ``annotator_var``, ``residual_var``: the variance components of the per-judgment
    difference. ``annotator_estimable`` is False with fewer than 2 annotators (then the result is
    conditional on that annotator). ``warnings`` says what the caller should know.
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
    annotator_estimable: bool
    converged: bool
    warnings: list[str] = field(default_factory=list)


MODEL_NAME = (
    "REML crossed random effects: d = chosen - rejected ~ 1 + (1 | pair) + (1 | annotator), Satterthwaite df"
)


def mixed_effect(
    frame: pd.DataFrame | None,
    item: str,
    *,
    margin: float,
    alpha: float = 0.05,
    differences: pd.DataFrame | None = None,
    span: float | None = None,
) -> MixedResult:
    """Equivalence of chosen and rejected on one item, generalizing over pairs and annotators.

    Parameters
    ----------
    frame : pandas.DataFrame or None
        A validated label frame (:func:`analysis.frames.validate_frame`); None when `differences` is
        given.
    item : str
        Quality dimension, ``"rubric"`` (derived from the aspects if absent) or ``"rubric:<k>"``.
    margin : float
        Symmetric equivalence margin in raw scale points (bounds -margin, +margin), > 0.
    alpha : float, default 0.05
        Level of each one-sided test; the interval is 1 - 2*alpha.
    differences : pandas.DataFrame, optional
        :func:`analysis.aggregates.judgment_differences` of ``frame`` for ``item``, when the caller
        already has it.
    span : float, optional
        The largest difference the item's scale allows. When every difference is the same, each
        one-sided test is then the exact bound of :func:`analysis.unanimous.unanimous_p`; without it
        the test is undefined.

    Returns
    -------
    MixedResult

    Raises
    ------
    ValueError
        For a non-positive margin, a bad alpha, an item without scores, or fewer than 2 pairs.

    Notes
    -----
    Model: see the module docstring (:func:`fit_crossed` on the per-judgment differences, intercept
    only). With one annotator the annotator variance cannot be estimated: the pair-only model is
    fitted, ``annotator_estimable`` is False and the interval is conditional on that annotator. With
    no variation in the differences at all the test is undefined: p-values are NaN and
    ``equivalent`` is False (never p = 0 from a zero variance).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> rows = [(f"p{i}", f"a{a}", r, "correctness", float(rng.integers(3, 6)), 0, 2, 10.0)
    ...         for i in range(60) for a in range(3) for r in ("chosen", "rejected")]
    >>> cols = ["pair_id", "annotator", "response", "item", "value", "preference", "confidence", "time_s"]
    >>> res = mixed_effect(pd.DataFrame(rows, columns=cols), "correctness", margin=0.5)
    >>> res.n_pairs, res.n_annotators, res.annotator_estimable
    (60, 3, True)
    """
    margin = check_margin(margin)
    if not 0.0 < float(alpha) < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    alpha = float(alpha)
    if differences is not None:
        data = differences
    elif frame is not None:
        data = judgment_differences(frame, item)
    else:
        raise ValueError("mixed_effect needs a label frame or the item's differences")
    if data.empty:
        raise ValueError(f"no scores for item '{item}'")
    n_pairs = int(data[PAIR_ID].nunique())
    if n_pairs < 2:
        raise ValueError(f"the crossed model needs at least 2 pairs with scores on '{item}', got {n_pairs}")
    n_annotators = int(data[ANNOTATOR].nunique())
    d = data["diff"].to_numpy(dtype=float)
    messages: list[str] = []
    estimable = n_annotators >= 2
    if not estimable:
        messages.append(
            "only 1 annotator: the annotator variance cannot be estimated; the result is conditional "
            "on this annotator"
        )
    if float(np.ptp(d)) == 0.0:
        if span is None:
            messages.append("every difference is identical: no variance, the test is undefined")
            tost = tost_from_estimate(
                float(d[0]), 0.0, max(n_pairs - 1, 1), -margin, margin, alpha, len(d), MODEL_NAME
            )
        else:
            matched = distinct_matching(data[PAIR_ID], data[ANNOTATOR])
            messages.append(unanimous_message("difference", matched))
            tost = unanimous_tost(
                float(d[0]), margin=margin, span=span, alpha=alpha, matched=matched, n=len(d)
            )
        return _result(item, tost, data, math.nan, math.nan, 0.0, estimable, False, messages)
    fit = fit_crossed(d, np.ones((len(d), 1)), data[PAIR_ID], data[ANNOTATOR])
    if "annotator" in fit.boundary and estimable:
        messages.append("the annotator variance is estimated at zero")
    if "pair" in fit.boundary:
        messages.append("the pair variance is estimated at zero")
    se, df = intercept_se(fit, n_pairs, alpha, guard=estimable, messages=messages)
    tost = tost_from_estimate(float(fit.params[0]), se, df, -margin, margin, alpha, len(d), MODEL_NAME)
    return _result(
        item,
        tost,
        data,
        fit.pair_var,
        fit.annotator_var,
        fit.residual_var,
        estimable,
        fit.converged,
        messages,
    )


CAPPED_MESSAGE = (
    "the judgments show almost no noise beside the pair and annotator effects, so REML cannot size them: "
    "the moment-based interval (the variances of the pair and annotator means) is used"
)


def unanimous_tost(
    value: float, *, margin: float, span: float, alpha: float, matched: int, n: int
) -> TostResult:
    """The TOST of differences that all equal `value`, on a scale whose differences lie in
    -span..span: each one-sided test by :func:`analysis.unanimous.unanimous_p` (with `matched`
    annotators), the interval the values of the mean neither test rejects."""
    p_lower = unanimous_p(value, null=-margin, low=-span, matched=matched)
    p_upper = unanimous_p(-value, null=-margin, low=-span, matched=matched)
    pvalue = max(p_lower, p_upper)
    return TostResult(
        estimate=value, se=0.0,
        ci_low=lower_end(value, low=-span, alpha=alpha, matched=matched),
        ci_high=upper_end(value, high=span, alpha=alpha, matched=matched),
        t_lower=math.nan, p_lower=p_lower, t_upper=math.nan, p_upper=p_upper, df=math.nan, pvalue=pvalue,
        equivalent=pvalue < alpha, low=-margin, high=margin, alpha=alpha, n=n, method=UNANIMOUS_METHOD,
    )  # fmt: skip


GUARD_MESSAGE = (
    "the moment-based interval (annotator and pair terms with their own df) is wider than the "
    "REML-Satterthwaite one and is used"
)


def intercept_se(
    fit: CrossedFit, n_pairs: int, alpha: float, *, guard: bool, messages: list[str]
) -> tuple[float, float]:
    """The SE and df of a fitted intercept (one home): Satterthwaite df (pairs - 1 where it is
    undefined) and, with `guard` (at least 2 annotators), the few-annotator guard of
    :func:`guarded_se`. What the caller should know is appended to `messages`."""
    df = float(fit.df[0])
    if not math.isfinite(df):
        df = float(max(n_pairs - 1, 1))
        messages.append("Satterthwaite df undefined; used pairs - 1")
    se = math.sqrt(float(fit.cov_params[0, 0]))
    if guard:
        se, df, widened = guarded_se(fit, se, df, alpha)
        if fit.capped:
            messages.append(CAPPED_MESSAGE)
        elif widened:
            messages.append(GUARD_MESSAGE)
    return se, df


def guarded_se(fit: CrossedFit, se: float, df: float, alpha: float) -> tuple[float, float, bool]:
    """The few-annotator guard (one home): the wider of the REML-Satterthwaite and the moment-based
    interval of the mean; a capped fit (:class:`CrossedFit`) always takes the moment-based one, its
    REML components being no estimate. Returns ``(se, df, widened)``."""
    se_c, df_c = _conservative_se(fit)
    if fit.capped or float(stats.t.ppf(1 - alpha, df_c)) * se_c > float(stats.t.ppf(1 - alpha, df)) * se:
        return se_c, df_c, True
    return se, df, False


def _conservative_se(fit: CrossedFit) -> tuple[float, float]:
    """A moment-based SE of the mean gap and its df that stays honest when the annotator variance is
    estimated near zero from few annotators.

    ``V_A = (s2_annotator + s2 / m_a) / q`` (q annotators, m_a judgments each on average) and
    ``V_P = (s2_pair + s2 / k) / n`` (n pairs, k judgments each): in a balanced crossed design these are
    ``MS_annotator / N`` and ``MS_pair / N``, and ``V_A + V_P`` is the classical conservative
    variance of the grand mean (it exceeds the true one by ``s2 / N``); df by Satterthwaite with q - 1
    and n - 1 df. REML-Satterthwaite alone treats a zero annotator estimate from 3 annotators as
    certain (df ~ pairs) and is anti-conservative when annotators differ a little. A capped fit
    (:class:`CrossedFit`) takes the observed ``MS / N`` instead: the variance of the annotator means
    over q and of the pair means over n.
    """
    q, n, n_obs = fit.n_annotators, fit.n_pairs, fit.n_obs
    if fit.capped:  # REML could not size the components: the data's own moments
        v_a, v_p = fit.mean_vars[1] / q, fit.mean_vars[0] / n
    else:
        v_a = (fit.annotator_var + fit.residual_var / (n_obs / q)) / q
        v_p = (fit.pair_var + fit.residual_var / (n_obs / n)) / n
    denom = v_a**2 / max(q - 1, 1) + v_p**2 / max(n - 1, 1)
    df = (v_a + v_p) ** 2 / denom if denom > 0 else float(max(n - 1, 1))
    return math.sqrt(v_a + v_p), float(df)


def _result(
    item: str,
    tost: TostResult,
    data: pd.DataFrame,
    pair_var: float,
    annotator_var: float,
    residual_var: float,
    estimable: bool,
    converged: bool,
    messages: list[str],
) -> MixedResult:
    return MixedResult(
        item=item,
        model=MODEL_NAME,
        **tost.figures(),
        n_obs=len(data),
        n_pairs=int(data[PAIR_ID].nunique()),
        n_annotators=int(data[ANNOTATOR].nunique()),
        pair_var=float(pair_var),
        annotator_var=float(annotator_var),
        residual_var=float(residual_var),
        annotator_estimable=estimable,
        converged=converged,
        warnings=messages,
    )
