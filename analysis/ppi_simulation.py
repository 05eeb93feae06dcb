"""Simulated studies for the prediction-powered verdict, vectorized over studies (benchmark and tests).

A study: ``N`` pairs with true chosen - rejected gaps ``g_i ~ N(mean_gap (+ category shift), pair_sd)``;
a judge gives every pair a gap ``f_i`` (:data:`JUDGES`); a panel of ``q`` annotators rates a uniform
random sample of ``n`` pairs (fully crossed), ``d_ij = g_i + a_j + e_ij`` with ``a_j ~ N(0,
annotator_sd)`` and ``e_ij ~ N(0, noise_sd)``. Each study gets the people-only verdict and the
prediction-powered one (:mod:`analysis.prediction_powered`: the same lambda and combination
functions). The crossed model's mean, SE and df come from the balanced two-way ANOVA of the
fully crossed panel (the REML estimates of a balanced design, components truncated at 0 by pooling
their sums of squares, Satterthwaite df from the mean squares) and the same few-annotator guard as
:func:`analysis.mixed.guarded_se`; ``benchmarks/bench_ppi.py`` checks it against the REML fit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from analysis.lazy import stats
from analysis.prediction_powered import combine_parts, power_tuned_lambda

__all__ = ["JUDGES", "Design", "balanced_crossed_mean", "draw", "judge_gaps", "simulate", "verdicts"]

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Design:
    """One simulated design (see the module docstring); ``judge`` names an entry of :data:`JUDGES`,
    ``judge_corr`` is the target correlation of a tracking judge's gap with the people's pair mean;
    ``category_shift``: half the difference of the true mean gap between two equal categories."""

    n_total: int
    n_rated: int
    panel: int
    mean_gap: float
    judge: str
    judge_corr: float = 0.7
    pair_sd: float = 0.5
    annotator_sd: float = 0.1
    noise_sd: float = 0.6
    category_shift: float = 0.0
    margin: float = 0.5
    alpha: float = 0.05


def _tracking_noise(design: Design) -> float:
    """The judge noise SD that gives ``f = g + noise`` the target correlation with the people's pair
    mean (whose variance is ``pair_sd^2 + noise_sd^2 / panel``)."""
    tau2 = design.pair_sd**2
    people = tau2 + design.noise_sd**2 / design.panel
    rho = design.judge_corr
    if not 0 < rho**2 < tau2 / people:
        raise ValueError(
            f"a judge can correlate at most {np.sqrt(tau2 / people):.3f} with the people's means"
        )
    return float(np.sqrt(tau2**2 / (rho**2 * people) - tau2))


def judge_gaps(design: Design, g: Array, category: Array, rng: np.random.Generator) -> Array:
    """The judge's gap on every pair, by the design's judge (:data:`JUDGES`)."""
    return JUDGES[design.judge](design, g, category, rng)


def _tracking(design: Design, g: Array, category: Array, rng: np.random.Generator) -> Array:
    return g + rng.normal(0, _tracking_noise(design), g.shape)


def _biased(design: Design, g: Array, category: Array, rng: np.random.Generator) -> Array:
    """Tracks the gaps but adds 0.6 scale points for chosen and exaggerates them by half."""
    return 0.6 + 1.5 * _tracking(design, g, category, rng)


def _position(design: Design, g: Array, category: Array, rng: np.random.Generator) -> Array:
    """Prefers the response shown first (chosen first on a random half), a little signal."""
    first = np.where(rng.random(g.shape) < 0.5, 1.0, -1.0)
    return 0.8 * first + 0.2 * g + rng.normal(0, 0.1, g.shape)


def _anti(design: Design, g: Array, category: Array, rng: np.random.Generator) -> Array:
    return -_tracking(design, g, category, rng)


def _some_categories(design: Design, g: Array, category: Array, rng: np.random.Generator) -> Array:
    """Right on category 0, on category 1 a confident constant gap of +1 with noise."""
    good = _tracking(design, g, category, rng)
    return np.where(category == 0, good, 1.0 + rng.normal(0, 0.3, g.shape))


def _useless(design: Design, g: Array, category: Array, rng: np.random.Generator) -> Array:
    return rng.normal(0.3, 1.0, g.shape)


JUDGES: dict[str, Callable[[Design, Array, Array, np.random.Generator], Array]] = {
    "tracking": _tracking,
    "biased toward chosen": _biased,
    "position-biased": _position,
    "anti-correlated": _anti,
    "good on one category only": _some_categories,
    "useless": _useless,
}


def balanced_crossed_mean(y: Array, alpha: float) -> tuple[Array, Array, Array]:
    """Mean, SE and df of a fully crossed pair x annotator panel ``y`` (studies, pairs, annotators).

    The balanced ANOVA estimates of the pair, annotator and residual variances (a negative component
    is set to 0 and its sum of squares pooled into the residual, as REML does at the boundary), the
    variance of the mean ``s2_a / q + s2_p / n + s2 / (n q)`` with Satterthwaite df from the mean
    squares, then the wider of that interval and the moment-based one of the few-annotator guard.
    """
    _, n, q = y.shape
    m = y.mean(axis=(1, 2))
    rows = y.mean(axis=2)
    cols = y.mean(axis=1)
    ss_p = q * ((rows - m[:, None]) ** 2).sum(1)
    ss_a = n * ((cols - m[:, None]) ** 2).sum(1)
    resid = y - rows[:, :, None] - cols[:, None, :] + m[:, None, None]
    ss_e = (resid**2).sum(axis=(1, 2))
    df_p, df_a, df_e = n - 1.0, q - 1.0, (n - 1.0) * (q - 1.0)
    ms_p, ms_a, ms_e = ss_p / df_p, ss_a / df_a, ss_e / df_e
    a_zero = ms_a < ms_e
    p_zero = ms_p < ms_e
    pooled_e = np.where(
        a_zero & p_zero,
        (ss_a + ss_p + ss_e) / (df_a + df_p + df_e),
        np.where(
            a_zero, (ss_a + ss_e) / (df_a + df_e), np.where(p_zero, (ss_p + ss_e) / (df_p + df_e), ms_e)
        ),
    )
    s2 = pooled_e
    s2_a = np.where(a_zero, 0.0, (ms_a - s2) / n).clip(0)
    s2_p = np.where(p_zero, 0.0, (ms_p - s2) / q).clip(0)
    var = s2_a / q + s2_p / n + s2 / (n * q)
    # Satterthwaite: var as a combination of mean squares, each on its own df
    denom = np.where(
        a_zero & p_zero,
        (s2 / (n * q)) ** 2 / (df_a + df_p + df_e),
        np.where(
            a_zero,
            (ms_p / (n * q)) ** 2 / df_p,
            np.where(
                p_zero,
                (ms_a / (n * q)) ** 2 / df_a,
                ((ms_a / (n * q)) ** 2 / df_a + (ms_p / (n * q)) ** 2 / df_p + (ms_e / (n * q)) ** 2 / df_e),
            ),
        ),
    )
    df = np.clip(var**2 / denom, 1.0, n * q - 1.0)
    v_a = (s2_a + s2 / n) / q
    v_p = (s2_p + s2 / q) / n
    df_c = (v_a + v_p) ** 2 / (v_a**2 / max(df_a, 1.0) + v_p**2 / df_p)
    se, se_c = np.sqrt(var), np.sqrt(v_a + v_p)
    wider = stats.t.ppf(1 - alpha, df_c) * se_c > stats.t.ppf(1 - alpha, df) * se
    return m, np.where(wider, se_c, se), np.where(wider, df_c, df)


def _tost(est: Array, se: Array, df: Array, margin: float, alpha: float) -> Array:
    t = stats.t.ppf(1 - alpha, df)
    return (est - t * se > -margin) & (est + t * se < margin)


def draw(design: Design, n_studies: int, rng: np.random.Generator) -> tuple[Array, Array, Array]:
    """Draw ``n_studies`` studies: the people's differences ``d`` (studies, n, q) on the rated pairs,
    the judge's gaps on the rated pairs ``f_rated`` (studies, n) and on the others (studies, N - n)."""
    s, big_n, n, q = n_studies, design.n_total, design.n_rated, design.panel
    category = (rng.random((s, big_n)) < 0.5).astype(np.float64)
    shift = np.where(category == 0, -design.category_shift, design.category_shift)
    g = design.mean_gap + shift + rng.normal(0, design.pair_sd, (s, big_n))
    f = judge_gaps(design, g, category, rng)
    # the pairs are independent draws, so the first n are a uniform random sample of the N
    bias = rng.normal(0, design.annotator_sd, (s, 1, q))
    d = g[:, :n, None] + bias + rng.normal(0, design.noise_sd, (s, n, q))
    return d, f[:, :n], f[:, n:]


def simulate(
    design: Design, n_studies: int, rng: np.random.Generator
) -> dict[str, npt.NDArray[np.float64] | npt.NDArray[np.bool_]]:
    """Simulate ``n_studies`` studies of one design and reach both verdicts on each.

    Returns
    -------
    dict
        Per study: ``people`` and ``ppi`` (the TOST passed), ``lam``, ``effective`` (effective pairs),
        ``estimate``/``se`` (prediction-powered), ``people_se``, ``correlation`` (of the judge's gap
        with the people's pair mean on the rated pairs).
    """
    d, fl, fu = draw(design, n_studies, rng)
    return verdicts(design, d, fl, fu)


def verdicts(
    design: Design, d: Array, fl: Array, fu: Array
) -> dict[str, npt.NDArray[np.float64] | npt.NDArray[np.bool_]]:
    """The people-only and the prediction-powered verdict of drawn studies (:func:`draw`)."""
    n = d.shape[1]
    people_m, people_se, people_df = balanced_crossed_mean(d, design.alpha)
    h = d.mean(2)
    lam = power_tuned_lambda(h, fl, fu)
    corr_m, corr_se, corr_df = balanced_crossed_mean(d - lam[:, None, None] * fl[:, :, None], design.alpha)
    var, df, _ = combine_parts(corr_se**2, corr_df, lam, fu)
    est = corr_m + lam * fu.mean(1)
    se = np.sqrt(var)
    hc, fc = h - h.mean(1, keepdims=True), fl - fl.mean(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        correlation = (hc * fc).sum(1) / np.sqrt((hc**2).sum(1) * (fc**2).sum(1))
    return {
        "people": _tost(people_m, people_se, people_df, design.margin, design.alpha),
        "ppi": _tost(est, se, df, design.margin, design.alpha),
        "lam": lam,
        "effective": n * people_se**2 / var,
        "estimate": est,
        "se": se,
        "df": df,
        "people_se": people_se,
        "correlation": correlation,
    }
