"""Simulated studies with a drawn human sample (uniform or active), vectorized over studies.

A study: ``N`` pairs with true gaps ``g_i`` as in :mod:`analysis.ppi_simulation`; the judge's gap on
every pair from :data:`analysis.ppi_simulation.JUDGES`, except the ``"knows its errors"`` judge: it
tracks the gaps with an error whose SD differs from pair to pair (``f_i = g_i + s_i e_i`` with
``log s_i ~ N(., spread)``, overall correlation ``judge_corr``) and reports an uncertainty
``s_i exp(N(0, 0.3))``. The other judges report an uncertainty that is unrelated to their error
(``"random"``) or, with ``uncertainty="misleading"``, highest where their error is smallest. Each pair
enters the human sample with its :func:`analysis.active_ppi.inclusion_probabilities` (Poisson
sampling, expected size ``n``); a fully crossed panel of ``q`` annotators rates the drawn pairs. The
verdict is :func:`analysis.active_ppi.weighted_ppi` with the crossed model's annotator and residual
variances from the balanced two-way ANOVA of the drawn pairs (equal to the REML fit of a balanced panel
when no component is at 0; checked against :func:`analysis.active_ppi.weighted_ppi_tost`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from analysis.active_ppi import MIN_SHARE, inclusion_probabilities, weighted_ppi
from analysis.lazy import stats
from analysis.ppi_simulation import JUDGES, Design, _tracking_noise

__all__ = [
    "LEANS",
    "PREFERENCE_JUDGES",
    "ActiveDesign",
    "Drawn",
    "draw_active",
    "draw_preferences",
    "one_sided_verdicts",
    "simulate_active",
    "weighted_verdicts",
]

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ActiveDesign:
    """A design (:class:`analysis.ppi_simulation.Design`, ``n_rated`` = the expected sample size), the
    draw (``active``: by the judge's uncertainty, else uniform), the floor share of the active draw,
    the spread of the log error SD of the ``"knows its errors"`` judge and the kind of uncertainty the
    other judges report (``"random"`` or ``"misleading"``)."""

    design: Design
    active: bool = True
    min_share: float = MIN_SHARE
    spread: float = 0.8
    uncertainty: str = "random"


@dataclass(frozen=True)
class Drawn:
    """Drawn studies: the people's differences ``d`` (studies, K, q) on the drawn pairs (NaN in the
    rows beyond a study's drawn count), the pair of each row ``rows`` (studies, K), the judge's gap
    ``f``, ``drawn`` and ``probability`` (studies, N)."""

    d: Array
    f: Array
    drawn: npt.NDArray[np.bool_]
    probability: Array
    rows: npt.NDArray[np.int64]

    def pair_means(self) -> Array:
        """The people's mean difference per pair (studies, N), 0 where not drawn."""
        h = np.zeros(self.f.shape)
        valid = ~np.isnan(self.d[:, :, 0])
        np.put_along_axis(h, self.rows, np.where(valid, self.d.mean(2), 0.0), axis=1)
        return np.where(self.drawn, h, 0.0)


def _judge(spec: ActiveDesign, g: Array, category: Array, rng: np.random.Generator) -> tuple[Array, Array]:
    """The judge's gap on every pair and the uncertainty it reports."""
    design = spec.design
    if design.judge == "knows its errors":
        z = rng.normal(0.0, spec.spread, g.shape)
        s = np.exp(z - spec.spread**2)  # E[s^2] = 1: the same overall correlation as the tracking judge
        f = g + _tracking_noise(design) * s * rng.normal(0.0, 1.0, g.shape)
        return f, s * np.exp(rng.normal(0.0, 0.3, g.shape))
    f = JUDGES[design.judge](design, g, category, rng)
    if spec.uncertainty == "misleading":
        error = np.abs(f - g)
        return f, 1.0 / (0.05 + error)
    return f, rng.lognormal(0.0, spec.spread, g.shape)


def _draw(
    spec: ActiveDesign, uncertainty: Array, rng: np.random.Generator
) -> tuple[Array, npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Each pair's inclusion probability (by the judge's `uncertainty` for an active draw, else
    uniform), the Poisson draw, each study's drawn pairs first in order (``rows``, as wide as the largest
    draw) and which of those rows hold a drawn pair."""
    s, big_n = uncertainty.shape
    n = spec.design.n_rated
    if spec.active:
        probability = inclusion_probabilities(uncertainty, n, min_share=spec.min_share)
    else:
        probability = np.full((s, big_n), n / big_n)
    drawn = rng.random((s, big_n)) < probability
    count = drawn.sum(1)
    width = max(int(count.max()), 1)
    rows = np.argsort(~drawn, axis=1, kind="stable")[:, :width]
    return probability, drawn, rows, np.arange(width)[None, :] < count[:, None]


def draw_active(spec: ActiveDesign, n_studies: int, rng: np.random.Generator) -> Drawn:
    """Draw ``n_studies`` studies of one design (see the module docstring); the people's judgments
    only for the drawn pairs."""
    design = spec.design
    s, big_n, q = n_studies, design.n_total, design.panel
    category = (rng.random((s, big_n)) < 0.5).astype(np.float64)
    shift = np.where(category == 0, -design.category_shift, design.category_shift)
    g = design.mean_gap + shift + rng.normal(0, design.pair_sd, (s, big_n))
    f, u = _judge(spec, g, category, rng)
    probability, drawn, rows, valid = _draw(spec, u, rng)
    width = rows.shape[1]
    bias = rng.normal(0, design.annotator_sd, (s, 1, q))
    gathered = np.take_along_axis(g, rows, axis=1)
    d = gathered[:, :, None] + bias + rng.normal(0, design.noise_sd, (s, width, q))
    return Drawn(np.where(valid[:, :, None], d, np.nan), f, drawn, probability, rows)


def _components(d: Array) -> tuple[Array, Array, Array]:
    """Annotator and residual variance of a fully crossed panel on the drawn pairs (balanced ANOVA, a
    negative annotator component set to 0 with its sum of squares pooled into the residual), and the
    number of drawn pairs; ``d`` (studies, K, q) has NaN rows beyond a study's drawn count."""
    q = d.shape[2]
    valid = ~np.isnan(d[:, :, 0])
    n = valid.sum(1).astype(np.float64)
    n_safe = np.maximum(n, 2.0)
    x = np.where(valid[:, :, None], d, 0.0)
    rows = x.mean(2)
    m = rows.sum(1) / n_safe
    cols = x.sum(1) / n_safe[:, None]
    ss_a = n * ((cols - m[:, None]) ** 2).sum(1)
    resid = x - rows[:, :, None] - cols[:, None, :] + m[:, None, None]
    ss_e = np.where(valid[:, :, None], resid**2, 0.0).sum(axis=(1, 2))
    df_a, df_e = q - 1.0, (n_safe - 1.0) * (q - 1.0)
    ms_a, ms_e = ss_a / df_a, ss_e / df_e
    a_zero = ms_a < ms_e
    s2 = np.where(a_zero, (ss_a + ss_e) / (df_a + df_e), ms_e)
    s2_a = np.where(a_zero, 0.0, (ms_a - ms_e) / n_safe)
    return s2_a, s2, n


Verdicts = dict[str, npt.NDArray[np.float64] | npt.NDArray[np.bool_]]
Test = Callable[[Array, Array, Array], npt.NDArray[np.bool_]]


def weighted_verdicts(spec: ActiveDesign, data: Drawn) -> Verdicts:
    """The weighted prediction-powered TOST (and the weighted people-only one) of drawn studies."""
    design = spec.design
    return _weighted(data, lambda est, se, df: _tost(est, se, df, design.margin, design.alpha))


def _weighted(data: Drawn, test: Test) -> Verdicts:
    """The weighted estimates of drawn studies with and without the judge, and whether `test` (of an
    estimate, its SE and df) passes for each."""
    q = data.d.shape[2]
    s2_a, s2, n = _components(data.d)
    unit = s2_a + s2 / np.maximum(n, 1.0)
    common = {
        "h": data.pair_means(),
        "f": data.f,
        "drawn": data.drawn,
        "probability": data.probability,
        "annotator_c2": 1.0 / q,
        "annotator_unit_var": unit,
        "n_annotators": q,
    }
    with np.errstate(invalid="ignore", divide="ignore"):
        mixed = weighted_ppi(**common)
        people = weighted_ppi(**common, lam=0.0)
    ok = n >= 2
    return {
        "ppi": ok & test(mixed.estimate, mixed.se, mixed.df),
        "people": ok & test(people.estimate, people.se, people.df),
        "lam": mixed.lam,
        "estimate": mixed.estimate,
        "se": mixed.se,
        "df": mixed.df,
        "n_drawn": n,
        "effective": n * people.se**2 / mixed.se**2,
    }


def _tost(est: Array, se: Array, df: Array, margin: float, alpha: float) -> npt.NDArray[np.bool_]:
    t = stats.t.ppf(1 - alpha, np.maximum(df, 1.0))
    return np.asarray((est - t * se > -margin) & (est + t * se < margin))


def simulate_active(
    spec: ActiveDesign, n_studies: int, rng: np.random.Generator, chunk: int = 250
) -> Verdicts:
    """Draw and judge ``n_studies`` studies in chunks (bounded memory); the per-study results."""
    parts = []
    for start in range(0, n_studies, chunk):
        parts.append(weighted_verdicts(spec, draw_active(spec, min(chunk, n_studies - start), rng)))
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


#: A pair's lean toward chosen, symmetric around 0 so that the share preferring chosen is exactly 0.5:
#: normal, heavy-tailed (t, 3 df) and two camps of pairs (+-1.5 with normal spread 0.3).
LEANS: dict[str, Callable[[np.random.Generator, tuple[int, int]], Array]] = {
    "normal": lambda rng, shape: rng.normal(0.0, 1.0, shape),
    "heavy-tailed": lambda rng, shape: rng.standard_t(3.0, shape),
    "two camps": lambda rng, shape: (
        np.where(rng.random(shape) < 0.5, -1.5, 1.5) + rng.normal(0.0, 0.3, shape)
    ),
}

#: A judge's predicted preference score (0..1, 1 = chosen) from the pair's lean and whether chosen was
#: shown first.
PREFERENCE_JUDGES: dict[str, Callable[[Array, Array, np.random.Generator], Array]] = {
    "tracking": lambda lean, first, rng: stats.norm.cdf(lean + rng.normal(0.0, 0.5, lean.shape)),
    "always chosen": lambda lean, first, rng: 0.9 + rng.normal(0.0, 0.05, lean.shape),
    "position-biased": lambda lean, first, rng: 0.8 * first + 0.1,
    "anti-correlated": lambda lean, first, rng: 1.0 - stats.norm.cdf(lean),
    "useless": lambda lean, first, rng: rng.random(lean.shape),
}

_TIE = 0.2  # a judgment within +-0.2 of no lean is a tie (scored 0.5)
_PREFERENCE_NOISE = 1.0
_PREFERENCE_ANNOTATOR_SD = 0.3


def draw_preferences(
    spec: ActiveDesign, n_studies: int, rng: np.random.Generator, lean: str = "normal"
) -> Drawn:
    """Drawn studies of preference judgments: each pair's lean from :data:`LEANS` plus
    ``spec.design.mean_gap`` (0: the null, a share of exactly 0.5), the judge ``spec.design.judge`` of
    :data:`PREFERENCE_JUDGES`, each judgment ``lean + a_j + e`` (annotator SD 0.3, noise SD 1) scored 1
    above 0.2, 0 below -0.2, else 0.5. ``d`` and ``f`` are centred (score - 0.5). The uncertainty the
    judge reports: random, or with ``spec.uncertainty == "misleading"`` highest where its error about
    the pair's true share is smallest."""
    design = spec.design
    s, big_n, q = n_studies, design.n_total, design.panel
    x = LEANS[lean](rng, (s, big_n)) + design.mean_gap
    first = (rng.random((s, big_n)) < 0.5).astype(np.float64)
    f = PREFERENCE_JUDGES[design.judge](x, first, rng) - 0.5
    sd = math.hypot(_PREFERENCE_ANNOTATOR_SD, _PREFERENCE_NOISE)
    truth = 0.5 * (stats.norm.sf((_TIE - x) / sd) + stats.norm.sf((-_TIE - x) / sd)) - 0.5
    if spec.uncertainty == "misleading":
        u = 1.0 / (0.05 + np.abs(f - truth))
    else:
        u = rng.lognormal(0.0, spec.spread, (s, big_n))
    probability, drawn, rows, valid = _draw(spec, u, rng)
    width = rows.shape[1]
    bias = rng.normal(0, _PREFERENCE_ANNOTATOR_SD, (s, 1, q))
    judged = (
        np.take_along_axis(x, rows, axis=1)[:, :, None]
        + bias
        + rng.normal(0, _PREFERENCE_NOISE, (s, width, q))
    )
    score = np.where(judged > _TIE, 0.5, np.where(judged < -_TIE, -0.5, 0.0))
    return Drawn(np.where(valid[:, :, None], score, np.nan), f, drawn, probability, rows)


def one_sided_verdicts(spec: ActiveDesign, data: Drawn) -> Verdicts:
    """The weighted one-sided test of a mean > 0 (the rubric claim; the preference share - 0.5) of
    drawn studies, with the judge and people only: PASS when ``p_greater < alpha``, as the report's
    :func:`analysis.active_ppi.weighted_superiority` and :func:`analysis.active_ppi.weighted_share`."""
    alpha = spec.design.alpha

    def greater(est: Array, se: Array, df: Array) -> npt.NDArray[np.bool_]:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(stats.t.sf(est / se, np.maximum(df, 1.0)) < alpha)

    return _weighted(data, greater)
