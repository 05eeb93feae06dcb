"""Power and sample size for the paired equivalence (TOST) claim on general quality.

The analytic power is exact for normal per-pair differences: conditional on the sample SD S, the
TOST rejects when ``low + t S/sqrt(n) < mean(d) < high - t S/sqrt(n)``; integrating that normal
probability over the chi-square distribution of S gives the power (Owen 1965; the same quantity as
PASS's and TOSTER's ``power_t_TOST``). A Monte Carlo check with the simulator's model (latent quality,
annotator bias and noise, rounding and clipping to the 1-5 scale, per-pair means over K annotators)
is provided as :func:`simulated_power`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from analysis.equivalence import tost_paired
from analysis.lazy import integrate, stats
from analysis.scale import Margin, item_margin
from analysis.simulation import BIAS_SD, NOISE, latent_quality, rate

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MAX_PAIRS",
    "MAX_POOL",
    "DesignResult",
    "PassPlan",
    "Plan",
    "PowerResult",
    "achieved_power",
    "crossed_design_se",
    "overall_pass_power",
    "design_power",
    "equivalence_draws",
    "pairs_needed",
    "recommend_design",
    "simulated_power",
    "smallest_reaching",
    "tost_power",
    "tost_power_at",
    "verdict_interval",
    "verdict_power",
    "variance_components",
]


@dataclass(frozen=True)
class PowerResult:
    """Pairs needed for a target power, and the power reached with that many."""

    n_pairs: int
    power: float
    margin: float
    sd_diff: float
    true_diff: float
    alpha: float
    annotators: int


class NotReached(ValueError):
    """No design within the planner's limits reaches the target power (an answer, not a bad input)."""


def _check(margin: float, sd: float, alpha: float) -> None:
    if not margin > 0:
        raise ValueError("margin must be positive")
    if not sd > 0:
        raise ValueError("sd must be positive")
    if not 0 < alpha < 0.5:
        raise ValueError("alpha must be in (0, 0.5)")


def tost_power(n: int, *, margin: float, sd: float, true_diff: float = 0.0, alpha: float = 0.05) -> float:
    """Exact power of the paired TOST with symmetric bounds (-margin, margin).

    Parameters
    ----------
    n : int
        Number of pairs (per-pair differences), at least 2.
    margin : float
        Equivalence margin in scale points.
    sd : float
        SD of the per-pair differences that enter the test.
    true_diff : float
        The true mean difference.
    alpha : float
        Level of each one-sided test.

    Examples
    --------
    >>> round(tost_power(30, margin=0.5, sd=1.0), 3)
    0.697
    """
    _check(margin, sd, alpha)
    if n < 2:
        raise ValueError("n must be at least 2")
    df = n - 1
    t_crit = float(stats.t.ppf(1 - alpha, df))
    se = sd / math.sqrt(n)

    def conditional(s: float) -> float:
        half_width = margin - t_crit * s / math.sqrt(n)
        if half_width <= 0:
            return 0.0
        upper = stats.norm.cdf((half_width - true_diff) / se)
        lower = stats.norm.cdf((-half_width - true_diff) / se)
        return float(upper - lower)

    def integrand(q: float) -> float:
        return conditional(sd * math.sqrt(q / df)) * float(stats.chi2.pdf(q, df))

    s_max = margin * math.sqrt(n) / t_crit  # beyond this S the rejection region is empty
    # beyond the chi-square's far tail nothing is left to integrate (a wide range makes quad miss the mass);
    # compared before squaring: (s_max / sd) ** 2 overflows when the margin is 1e154 SDs or more
    tail = float(stats.chi2.isf(1e-15, df))
    q_max = tail if s_max / sd >= math.sqrt(tail / df) else df * (s_max / sd) ** 2
    value, _ = integrate.quad(integrand, 0.0, q_max, limit=200)
    return float(min(1.0, max(0.0, value)))


def pairs_needed(
    *,
    margin: float,
    sd: float,
    power: float = 0.8,
    alpha: float = 0.05,
    true_diff: float = 0.0,
    annotators: int = 1,
    max_pairs: int = 1_000_000,
) -> PowerResult:
    """The smallest number of pairs whose TOST reaches `power`.

    `sd` is the SD of one annotator's chosen - rejected difference; with `annotators` K per pair and
    independent annotator noise, the per-pair mean difference has SD ``sd / sqrt(K)`` (an optimistic
    bound when pairs differ truly; pass the SD of per-pair mean differences with K = 1 to avoid it).

    Examples
    --------
    >>> pairs_needed(margin=0.5, sd=1.0, power=0.8).n_pairs
    36
    """
    _check(margin, sd, alpha)
    if not 0 < power < 1:
        raise ValueError("power must be in (0, 1)")
    if annotators < 1:
        raise ValueError("annotators must be at least 1")
    if abs(true_diff) >= margin:
        raise ValueError("the true difference must lie inside the margin for equivalence to be shown")
    sd_diff = sd / math.sqrt(annotators)
    lo, hi = 2, 4
    while tost_power(hi, margin=margin, sd=sd_diff, true_diff=true_diff, alpha=alpha) < power:
        lo, hi = hi, hi * 2
        if hi > max_pairs:
            raise ValueError(f"more than {max_pairs} pairs would be needed")
    while lo < hi:
        mid = (lo + hi) // 2
        if tost_power(mid, margin=margin, sd=sd_diff, true_diff=true_diff, alpha=alpha) >= power:
            hi = mid
        else:
            lo = mid + 1
    achieved = tost_power(lo, margin=margin, sd=sd_diff, true_diff=true_diff, alpha=alpha)
    return PowerResult(lo, achieved, margin, sd_diff, true_diff, alpha, annotators)


def simulated_power(
    n_pairs: int,
    *,
    margin: float,
    annotators: int = 3,
    quality_gap: float = 0.0,
    noise: float = NOISE,
    bias_sd: float = BIAS_SD,
    alpha: float = 0.05,
    n_sim: int = 500,
    seed: int = 0,
) -> float:
    """Monte Carlo power of the per-pair-mean paired TOST under the simulator's rating model.

    Each pair has a latent quality N(4, 0.45) shared by both responses, chosen gets +quality_gap;
    each annotator adds a bias N(0, bias_sd) and noise N(0, noise); ratings are rounded and clipped
    to 1-5 and averaged per pair and response over `annotators` raters.

    Examples
    --------
    >>> simulated_power(20, margin=0.5, n_sim=50)
    0.98
    """
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(n_sim):
        latent = latent_quality(rng.standard_normal(size=(n_pairs, 1)))
        bias = rng.normal(0.0, bias_sd, size=(1, annotators))
        chosen = rate(latent + quality_gap + bias + rng.normal(0, noise, (n_pairs, annotators)), 1, 5)
        rejected = rate(latent + bias + rng.normal(0, noise, (n_pairs, annotators)), 1, 5)
        diff = chosen.mean(axis=1) - rejected.mean(axis=1)
        if np.std(diff) == 0:
            hits += abs(float(diff.mean())) < margin
            continue
        hits += tost_paired(
            chosen.mean(axis=1), rejected.mean(axis=1), low=-margin, high=margin, alpha=alpha
        ).equivalent
    return hits / n_sim


def achieved_power(
    frame: pd.DataFrame, *, quality_items: Sequence[str], margin: Margin, alpha: float = 0.05
) -> pd.DataFrame:
    """The power an existing study has for each quality dimension's paired TOST (against the
    dimension's margin when `margin` gives one per dimension).

    Uses the study's number of pairs and the observed SD of its per-pair mean differences, at a true
    difference of 0 (the power to show equivalence if the responses are truly equal).

    Examples
    --------
    >>> import pandas as pd
    >>> rows = [(f"p{i}", "a", r, "correctness", float(4 + (i + (r == "chosen")) % 2), 1, 2, 9.0)
    ...         for i in range(30) for r in ("chosen", "rejected")]
    >>> df = pd.DataFrame(rows, columns=["pair_id", "annotator", "response", "item", "value",
    ...                                  "preference", "confidence", "time_s"])
    >>> result = achieved_power(df, quality_items=["correctness"], margin=0.5)
    >>> result.loc[0, "dimension"], int(result.loc[0, "n_pairs"])
    ('correctness', 30)
    """
    import pandas as pd

    from analysis.aggregates import pair_means

    rows = []
    for item in quality_items:
        diff = pair_means(frame, item)["diff"].dropna()
        sd = float(np.std(diff, ddof=1)) if len(diff) > 1 else float("nan")
        power = (
            tost_power(len(diff), margin=item_margin(margin, item), sd=sd, alpha=alpha)
            if len(diff) > 1 and sd > 0
            else float("nan")
        )
        rows.append({"dimension": item, "n_pairs": int(len(diff)), "sd_diff": sd, "power": power})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class DesignResult:
    """A recommended design for the crossed-model equivalence test and its approximate power."""

    n_pairs: int
    per_pair: int
    pool: int
    power: float
    se: float
    df: float
    margin: float
    alpha: float
    true_diff: float
    pair_var: float
    annotator_var: float
    residual_var: float


MAX_POOL = 500
MAX_PAIRS = 100_000
"""The largest pool and number of pairs a design from scratch is searched in (:func:`recommend_design`)."""


@dataclass(frozen=True)
class Plan:
    """A planned crossed design and its pilot's variance components: what the power of a planned
    study is computed from.

    Attributes
    ----------
    n_pairs : int
        Main pairs people rate.
    per_pair : float
        Judgments per pair: annotators per pair (overlap), on average under an adaptive design.
    pool : int
        Annotators in the pool (each rates about ``n_pairs * per_pair / pool`` pairs).
    margin : float
        Equivalence margin.
    pair_var, annotator_var, residual_var : float
        Variance components of one judgment's chosen - rejected gap (:func:`variance_components`
        on pilot data).
    alpha : float, default 0.05
        Level of each one-sided test.
    true_diff : float, default 0
        The true mean gap.
    """

    n_pairs: int
    per_pair: float
    pool: int
    margin: float
    pair_var: float
    annotator_var: float
    residual_var: float
    alpha: float = 0.05
    true_diff: float = 0.0


def _check_design(plan: Plan) -> None:
    """Refuse a design with fewer than 2 pairs, no annotator per pair or a pool smaller than the panel."""
    if plan.n_pairs < 2 or plan.per_pair < 1 or plan.pool < plan.per_pair:
        raise ValueError("need n_pairs >= 2, per_pair >= 1 and pool >= per_pair")


def crossed_design_se(plan: Plan) -> tuple[float, float]:
    """Standard error and approximate Satterthwaite df of the mean gap for a planned design (its
    margin, alpha and true gap are not used); ``pool >= per_pair``.

    Returns
    -------
    tuple of float
        ``(se, df)``. The variance is ``annotator_var / pool + pair_var / n_pairs +
        residual_var / (n_pairs * per_pair)`` (exact for a balanced design, where every annotator
        rates equally many pairs); df from Satterthwaite's formula with pool - 1 df for the annotator
        term and n_pairs - 1 for the rest.

    Examples
    --------
    >>> se, df = crossed_design_se(Plan(n_pairs=100, per_pair=1, pool=10, margin=0.5, pair_var=0.0,
    ...                                 annotator_var=0.0, residual_var=1.0))
    >>> round(se, 3)
    0.1
    """
    _check_design(plan)
    n_pairs, per_pair, pool = plan.n_pairs, plan.per_pair, plan.pool
    va = plan.annotator_var / pool
    vr = plan.pair_var / n_pairs + plan.residual_var / (n_pairs * per_pair)
    total = va + vr
    if pool < 2:
        return math.sqrt(total), float(n_pairs - 1)
    denom = va**2 / (pool - 1) + vr**2 / (n_pairs - 1)
    df = total**2 / denom if denom > 0 else float(n_pairs - 1)
    return math.sqrt(total), float(df)


def design_power(plan: Plan) -> tuple[float, float, float]:
    """Approximate power of the report's crossed-model TOST for a planned design, from variance
    components (:func:`verdict_power` with the people's pair part ``pair_var / n + residual_var /
    (n per_pair)``).

    Returns
    -------
    tuple of float
        ``(power, se, df)``: the SE and Satterthwaite df of the interval the verdict uses.

    Examples
    --------
    >>> power, se, df = design_power(Plan(n_pairs=80, per_pair=3, pool=20, margin=0.5, pair_var=0.05,
    ...                                   annotator_var=0.04, residual_var=0.8))
    >>> round(power, 3), round(se, 3)
    (1.0, 0.096)
    """
    _check(plan.margin, 1.0, plan.alpha)
    pair_part = (plan.pair_var + plan.residual_var / plan.per_pair) / plan.n_pairs
    return verdict_power(plan, pair_part)


def tost_power_at(plan: Plan, se: float, df: float) -> float:
    """Power of the plan's TOST whose estimate has standard error `se` on `df` degrees of freedom."""
    t_crit = float(stats.t.ppf(1 - plan.alpha, df))
    upper = float(stats.t.cdf((plan.margin - plan.true_diff) / se - t_crit, df))
    lower = float(stats.t.cdf((-plan.margin - plan.true_diff) / se + t_crit, df))
    return max(0.0, upper - lower)


def verdict_interval(plan: Plan, pair_part: float) -> tuple[float, float, float]:
    """The estimate's SD and the SE and df of the interval the report's verdict uses, for a planned
    design whose variance is ``annotator_var / pool + pair_part``: the wider of that model interval and
    the few-annotator guard's (:func:`analysis.mixed.guarded_se`: ``residual_var / (n per_pair)`` more on
    the annotator term), df by Satterthwaite with pool - 1 and n - 1 df. Returns ``(sd, se, df)``."""
    _check_design(plan)
    va = plan.annotator_var / plan.pool
    best = (-math.inf, math.nan, math.nan)
    for a_part in (va, _guard_part(plan)):
        df = _satterthwaite(a_part, pair_part, plan.pool, plan.n_pairs)
        half = float(stats.t.ppf(1 - plan.alpha, df)) * math.sqrt(a_part + pair_part)
        if half > best[0]:
            best = (half, math.sqrt(a_part + pair_part), df)
    return math.sqrt(va + pair_part), best[1], best[2]


def verdict_power(plan: Plan, pair_part: float) -> tuple[float, float, float]:
    """Power, SE and df of the report's TOST for a planned design (:func:`verdict_interval`).

    With a pool larger than the panel the estimate is normal with the model variance and the interval
    is the guard's, its annotator part estimated on pool - 1 df: the power averages the TOST over that
    part's chi-square distribution (within 0.016 of the report's REML verdict in 11 Monte Carlo rows,
    ``benchmarks/bench_ppi_pool.py``). In a fully crossed panel (pool = per_pair) the interval's SE
    stands for the estimate's spread too: 0.02-0.04 below the simulated power with 5 annotators, from
    0.014 below to 0.021 above it with 3 (``benchmarks/bench_ppi.py``).
    """
    sd, se, df = verdict_interval(plan, pair_part)
    if se <= 0:  # judgments that never vary: the estimate is the true gap
        return float(abs(plan.true_diff) < plan.margin), 0.0, float(plan.n_pairs - 1)
    if plan.pool > plan.per_pair:
        return _pool_power(plan, pair_part, spread=sd), se, df
    return tost_power_at(plan, se, df), se, df


def _guard_part(plan: Plan) -> float:
    """The few-annotator guard's annotator term: ``annotator_var / pool + residual_var / (n per_pair)``."""
    return plan.annotator_var / plan.pool + plan.residual_var / (plan.n_pairs * plan.per_pair)


def _satterthwaite(a_part: float, rest: float, pool: int, n_pairs: int) -> float:
    """df of ``a_part + rest`` with pool - 1 df for the annotator part and n - 1 for the rest."""
    denom = a_part**2 / max(pool - 1, 1) + rest**2 / (n_pairs - 1)
    return (a_part + rest) ** 2 / denom if pool >= 2 and denom > 0 else float(n_pairs - 1)


#: Points of the annotator part's chi-square distribution the pool design's power averages over.
_QUANTILES = 64


def _pool_power(plan: Plan, rest: float, *, spread: float) -> float:
    """The TOST's power when the estimate is normal with SD `spread` and the interval is the guard's:
    its annotator part (:func:`_guard_part`) estimated on pool - 1 df (chi-square; averaged over
    equally likely quantiles), the rest taken as known, df by Satterthwaite for each value."""
    df_a = max(plan.pool - 1, 1)
    a_part = _guard_part(plan) * stats.chi2.ppf((np.arange(_QUANTILES) + 0.5) / _QUANTILES, df_a) / df_a
    denom = a_part**2 / df_a + rest**2 / (plan.n_pairs - 1)
    half = stats.t.ppf(1 - plan.alpha, (a_part + rest) ** 2 / denom) * np.sqrt(a_part + rest)
    upper = stats.norm.cdf((plan.margin - plan.true_diff - half) / spread)
    lower = stats.norm.cdf((-plan.margin - plan.true_diff + half) / spread)
    return float(np.clip(upper - lower, 0.0, None).mean())


@dataclass(frozen=True)
class PassPlan:
    """A planned study whose overall PASS is simulated from a pilot: the pilot's verdict items, the
    planned design and the report's settings.

    Attributes
    ----------
    components : pandas.DataFrame
        One row per verdict item with ``item, kind, effect, pair_var, annotator_var, residual_var``:
        ``kind`` is ``"equivalence"`` (a quality dimension; its true gap is taken as 0) or
        ``"superiority"`` (the rubric and the preference score - 0.5; the pilot's estimate is taken as
        the true effect).
    n_pairs, pool : int
        Main pairs and annotators in the pool.
    per_pair : float
        Judgments per pair (annotators per pair; on average under an adaptive design).
    margin : float or mapping of str to float
        As in the report (one for every quality dimension, or each dimension's).
    alpha, max_broken_share : float
        As in the report.
    """

    components: pd.DataFrame
    n_pairs: int
    per_pair: float
    pool: int
    margin: Margin
    alpha: float = 0.05
    max_broken_share: float = 0.1


def smallest_reaching(power_at: Callable[[int], float], power: float, lo: int, hi: int) -> int:
    """The smallest n in [lo, hi] with ``power_at(n) >= power`` (binary search: the power grows with n;
    `hi` must reach it)."""
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power_at(mid) >= power else (mid + 1, hi)
    return lo


def recommend_design(plan: Plan, *, power: float = 0.8, keep_pairs: bool = False) -> DesignResult:
    """The smallest design within `plan` that reaches `power` for the crossed-model equivalence test.

    The plan's ``pool`` and ``n_pairs`` are the largest pool and number of pairs searched
    (:data:`MAX_POOL`, :data:`MAX_PAIRS` for a design from scratch). With `keep_pairs` (e.g. the
    study's own pairs), the smallest annotator pool that reaches the target with the plan's pairs;
    otherwise the smallest number of pairs for the smallest pool that can reach it (the annotator term
    ``annotator_var / pool`` does not shrink with more pairs, so the pool is chosen first, then the
    pairs). ``per_pair`` is a whole number of annotators per pair.

    Returns
    -------
    DesignResult

    Raises
    ------
    ValueError
        If no design within the plan reaches the target.

    Examples
    --------
    >>> rec = recommend_design(Plan(n_pairs=MAX_PAIRS, per_pair=3, pool=MAX_POOL, margin=0.5,
    ...                             pair_var=0.05, annotator_var=0.04, residual_var=0.8))
    >>> rec.pool, rec.n_pairs, rec.per_pair
    (4, 41, 3)
    """
    if not 0 < power < 1:
        raise ValueError("power must be in (0, 1)")
    if abs(plan.true_diff) >= plan.margin:
        raise ValueError("the true difference must lie inside the margin for equivalence to be shown")
    per_pair, max_pool, max_pairs = int(plan.per_pair), plan.pool, plan.n_pairs

    def at(n: int, m: int) -> tuple[float, float, float]:
        return design_power(replace(plan, n_pairs=n, pool=m))

    def power_with(m: int) -> Callable[[int], float]:
        return lambda n: at(n, m)[0]

    def result(n: int, m: int) -> DesignResult:
        p, se, df = at(n, m)
        components = (plan.pair_var, plan.annotator_var, plan.residual_var)
        return DesignResult(n, per_pair, m, p, se, df, plan.margin, plan.alpha, plan.true_diff, *components)

    # the power grows with the pool: a target the largest pool misses is missed by every pool
    if at(max_pairs, max_pool)[0] >= power:
        for m in range(max(per_pair, 2), max_pool + 1):
            if at(max_pairs, m)[0] >= power:
                if keep_pairs:
                    return result(max_pairs, m)
                return result(smallest_reaching(power_with(m), power, 2, max_pairs), m)
    if keep_pairs:
        raise NotReached(
            f"no pool of up to {max_pool} annotators reaches power {power} with {max_pairs} pairs"
        )
    raise NotReached(
        f"no design with up to {max_pool} annotators and {max_pairs} pairs reaches power {power}"
    )


def variance_components(frame: pd.DataFrame, *, quality_items: Sequence[str]) -> pd.DataFrame:
    """Variance components of the per-judgment chosen - rejected difference, per quality dimension.

    Pilot data for :func:`recommend_design`: the crossed REML fit
    (:func:`analysis.mixed.fit_crossed`) of each dimension's differences.

    Returns
    -------
    pandas.DataFrame
        Columns ``dimension, n_pairs, n_annotators, per_pair, estimate, pair_var, annotator_var,
        residual_var``.

    Examples
    --------
    >>> from analysis.simulation import SimDesign, simulate_frame
    >>> frame = simulate_frame(np.random.default_rng(0), SimDesign(n_pairs=40, rubric_aspects=0))
    >>> vc = variance_components(frame, quality_items=["correctness"])
    >>> int(vc.loc[0, "n_pairs"]), int(vc.loc[0, "n_annotators"])
    (40, 3)
    """
    import pandas as pd

    from analysis.aggregates import judgment_differences
    from analysis.frames import ANNOTATOR, PAIR_ID
    from analysis.mixed import fit_crossed

    rows = []
    for item in quality_items:
        d = judgment_differences(frame, item)
        fit = fit_crossed(
            d["diff"].to_numpy(), np.ones((len(d), 1)), d[PAIR_ID].to_numpy(), d[ANNOTATOR].to_numpy()
        )
        rows.append(
            {
                "dimension": item,
                "n_pairs": fit.n_pairs,
                "n_annotators": fit.n_annotators,
                "per_pair": float(len(d) / fit.n_pairs),
                "estimate": float(fit.params[0]),
                "pair_var": fit.pair_var,
                "annotator_var": fit.annotator_var,
                "residual_var": fit.residual_var,
            }
        )
    return pd.DataFrame(rows)


def _estimate_draws(
    plan: Plan, pair_part: float, effect: float, rng: np.random.Generator, n_sim: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """Simulated estimates (normal around `effect` with the design's SD) and interval SEs (scaled
    chi-square on the interval's df) of the report's crossed-model verdict, and that df."""
    sd, se, df = verdict_interval(plan, pair_part)
    est = effect + sd * rng.standard_normal(n_sim)
    return est, se * np.sqrt(rng.chisquare(df, n_sim) / df), df


def equivalence_draws(
    plan: Plan, pair_part: float, *, effect: float, max_share: float, rng: np.random.Generator, n_sim: int
) -> np.ndarray:
    """Simulated verdicts of one quality dimension: its TOST within ``plan.margin`` and the bound on
    the share of broken pairs below `max_share` (:func:`analysis.broken_share.planned_below`).
    `pair_part` is the pair term of the mean's variance (people only, or the prediction-powered one).
    One bool per study."""
    from analysis.broken_share import planned_below

    est, se_hat, df = _estimate_draws(plan, pair_part, effect, rng, n_sim)
    t = float(stats.t.ppf(1 - plan.alpha, df))
    tost = (est - t * se_hat > -plan.margin) & (est + t * se_hat < plan.margin)
    below = planned_below(
        n=plan.n_pairs, per_pair=plan.per_pair, pool=plan.pool, pair_var=plan.pair_var,
        annotator_var=plan.annotator_var, residual_var=plan.residual_var, mean=effect, margin=plan.margin,
        max_share=max_share, alpha=plan.alpha, rng=rng, n_sim=n_sim,
    )  # fmt: skip
    return np.asarray(tost & below, dtype=bool)


def overall_pass_power(plan: PassPlan, *, n_sim: int = 4000, seed: int = 0) -> dict[str, float]:
    """Power of the overall PASS of a planned design, by simulation from a pilot's variance components.

    Parameters
    ----------
    plan : PassPlan
        The pilot's verdict items, the design and the report's settings.
    n_sim : int, default 4000
        Simulated studies.
    seed : int
        Random seed.

    Returns
    -------
    dict
        ``power_overall`` (every simulated verdict passes) and ``power_<item>`` per item.

    Notes
    -----
    Each simulated study draws, per item, the statistics the verdicts use: the crossed-model mean
    (normal around the true effect with the model's SD) and the SE of the verdict's interval (the
    few-annotator guard's where it is wider, :func:`verdict_interval`; scaled chi-square on its df),
    and for a quality dimension the estimate of the mean squared gap and its SE for the share of broken
    pairs, each study with its own annotators (:func:`equivalence_draws`). Quality dimensions get a
    TOST and the broken-share bound, the rubric and the preference a one-sided test, Holm-adjusted
    together. Items are drawn independently (quality dimensions are positively
    correlated in real data, so the power of their intersection is if anything higher). The
    sample-size, reliability and sensitivity verdicts are
    not simulated: the caller reports them as they stand in the pilot.

    Examples
    --------
    >>> import pandas as pd
    >>> comps = pd.DataFrame([
    ...     {"item": "correctness", "kind": "equivalence", "effect": 0.0, "pair_var": 0.0,
    ...      "annotator_var": 0.0, "residual_var": 0.3},
    ...     {"item": "rubric", "kind": "superiority", "effect": 0.8, "pair_var": 0.05,
    ...      "annotator_var": 0.01, "residual_var": 0.3}])
    >>> res = overall_pass_power(PassPlan(comps, n_pairs=200, per_pair=10, pool=20, margin=0.5), n_sim=500)
    >>> res["power_overall"] > 0.8
    True
    """
    n_pairs, per_pair, alpha = plan.n_pairs, plan.per_pair, plan.alpha
    rng = np.random.default_rng(seed)
    passes: dict[str, np.ndarray] = {}
    superiority: dict[str, np.ndarray] = {}
    for row in plan.components.to_dict("records"):
        comps = {k: max(float(row[k]), 0.0) for k in ("pair_var", "annotator_var", "residual_var")}
        pair_part = (comps["pair_var"] + comps["residual_var"] / per_pair) / n_pairs
        if row["kind"] == "equivalence":
            m = item_margin(plan.margin, str(row["item"]))
            design = Plan(n_pairs, per_pair, plan.pool, margin=m, alpha=alpha, **comps)
            passes[str(row["item"])] = equivalence_draws(
                design, pair_part, effect=float(row["effect"]), max_share=plan.max_broken_share, rng=rng,
                n_sim=n_sim,
            )  # fmt: skip
        else:
            design = Plan(n_pairs, per_pair, plan.pool, margin=0.0, **comps)  # no margin needed
            est, se_hat, df = _estimate_draws(design, pair_part, float(row["effect"]), rng, n_sim)
            superiority[str(row["item"])] = stats.t.sf(est / se_hat, df)
    if superiority:
        names = list(superiority)
        p = np.column_stack([superiority[n] for n in names])
        order = np.argsort(p, axis=1)
        sorted_p = np.take_along_axis(p, order, axis=1)
        m = p.shape[1]
        adjusted = np.maximum.accumulate(np.minimum(1.0, sorted_p * (m - np.arange(m))), axis=1)
        back = np.empty_like(adjusted)
        np.put_along_axis(back, order, adjusted, axis=1)
        for j, name in enumerate(names):
            passes[name] = back[:, j] < alpha
    overall = np.ones(n_sim, dtype=bool)
    for v in passes.values():
        overall &= v
    out = {"power_overall": float(overall.mean())}
    out |= {f"power_{name}": float(v.mean()) for name, v in passes.items()}
    return out
