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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy import integrate, stats

from analysis.equivalence import tost_paired

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PowerResult", "achieved_power", "pairs_needed", "simulated_power", "tost_power"]


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
    q_max = df * (s_max / sd) ** 2
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
    noise: float = 0.6,
    bias_sd: float = 0.25,
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
    >>> 0.0 <= simulated_power(20, margin=0.5, n_sim=50) <= 1.0
    True
    """
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(n_sim):
        latent = rng.normal(4.0, 0.45, size=(n_pairs, 1))
        bias = rng.normal(0.0, bias_sd, size=(1, annotators))
        chosen = np.clip(
            np.rint(latent + quality_gap + bias + rng.normal(0, noise, (n_pairs, annotators))), 1, 5
        )
        rejected = np.clip(np.rint(latent + bias + rng.normal(0, noise, (n_pairs, annotators))), 1, 5)
        diff = chosen.mean(axis=1) - rejected.mean(axis=1)
        if np.std(diff) == 0:
            hits += abs(float(diff.mean())) < margin
            continue
        hits += tost_paired(
            chosen.mean(axis=1), rejected.mean(axis=1), low=-margin, high=margin, alpha=alpha
        ).equivalent
    return hits / n_sim


def achieved_power(
    frame: pd.DataFrame, *, quality_items: Sequence[str], margin: float, alpha: float = 0.05
) -> pd.DataFrame:
    """The power an existing study has for each quality dimension's paired TOST.

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

    from analysis.frames import pair_means

    rows = []
    for item in quality_items:
        diff = pair_means(frame, item)["diff"].dropna()
        sd = float(np.std(diff, ddof=1)) if len(diff) > 1 else float("nan")
        power = (
            tost_power(len(diff), margin=margin, sd=sd, alpha=alpha)
            if len(diff) > 1 and sd > 0
            else float("nan")
        )
        rows.append({"dimension": item, "n_pairs": int(len(diff)), "sd_diff": sd, "power": power})
    return pd.DataFrame(rows)
