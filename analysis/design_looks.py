"""Registered looks: the "few broken pairs" test for a study that may stop at the first look that passes.

A design with ``looks = K > 1`` is judged at K registered points (:func:`analysis.design.look_points`)
and the researcher may stop at the first that passes. The one-look test (:func:`analysis.design
.critical_values`) cannot simply be repeated with shared alpha: at an early look of an adaptive design
the pooled within-pair noise estimate comes from few pairs, each picked for an extreme first judgment,
so it lies about 0.5 (log) above the truth and spreads by 0.3; a critical value read off at that
estimate, even prepivoted, passed 16% of the studies at the least favourable configuration at the first
of 5 looks (whereas with the noise known the same group-sequential boundary passed 5.25%), and
Bonferroni over looks has the same fault (it needs every look valid at alpha / K).

So alpha is split between the looks before the last and the last one (a union bound, each part valid on
its own):

- the last look gets ``(1 - INTERIM_SHARE) * alpha`` and the one-look test as it is (its critical value
  simulated for the registered procedure, prepivoted for the noise estimate, which at the end of the
  budget has enough degrees of freedom for that);
- the looks before it share ``INTERIM_SHARE * alpha``, of which ``gamma = GAMMA_SHARE`` of it buys a
  lower confidence bound on the noise ratio ``noise_var / margin^2`` at every interim look at once (the
  estimate divided by ``exp(u_j)``, ``u_j`` the excess of the estimate over the truth at look j that is
  passed at some look in at most gamma of the studies, simulated at the least favourable configuration
  over true noise levels around the estimate, rounded down to a grid ``GRID_STEP`` apart), and the rest
  a Pocock-type group-sequential boundary (one quantile level for every interim look) for ``T``
  computed with that bound plugged in as the noise, simulated with the noise known to be that bound. A
  plugged noise below the truth only makes passing harder (measured: a plugged noise above the truth is
  what passes too often), so the interim looks pass with probability at most their share.

The study passes at some look with probability at most alpha, whatever the true noise: stopping early is
free of inflation by construction, and the last look keeps most of the one-look test's power. The
interim looks, judged against a deliberately low noise, settle only clear studies early. Monte Carlo at
the boundary with 5 and 10 looks is in ``benchmarks/bench_adaptive.py --part looks``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np

from analysis.design import (
    Design,
    _boundary_gaps,
    critical_values,
    simulate_design,
)

__all__ = ["GAMMA_SHARE", "GRID_STEP", "INTERIM_SHARE", "look_rule"]

#: Share of alpha for the looks before the last.
INTERIM_SHARE = 0.2
#: Share of the interim looks' alpha spent on the lower confidence bound of the noise.
GAMMA_SHARE = 0.2
#: Spacing (log noise ratio) of the grid the plugged noise is rounded down to.
GRID_STEP = 0.2
#: True noise levels, in grid points around the estimate's likely truth, at which the estimate's
#: excess over the truth is simulated (the largest excess is used).
OFFSET_POINTS = (-4, -2, 0, 2, 4)


def _spend(t: np.ndarray, level: float) -> np.ndarray:
    """Per-look thresholds: one quantile level for every look, the largest for which "some look falls
    below its threshold" has probability at most `level` over the simulated paths `t` (S, looks)."""
    t = np.where(np.isfinite(t), t, np.inf)
    lo, hi = 0.0, level
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.mean((t < np.quantile(t, mid, axis=0)).any(axis=1)) <= level else (lo, mid)
    return np.quantile(t, lo, axis=0)


@functools.lru_cache(maxsize=256)
def _boundary(
    design: Design, n_pairs: int, index: int, max_share: float, level: float, n_sim: int, seed: int
) -> tuple[float, ...]:
    """Group-sequential critical values of ``T`` at the interim looks with the noise ratio
    ``exp(index * GRID_STEP)`` known."""
    ratio = math.exp(index * GRID_STEP)
    rng = np.random.default_rng([seed, 1, index + 1000])
    gaps = _boundary_gaps(n_sim, n_pairs, 1.0, max_share)
    t, _, _ = simulate_design(gaps, design, ratio, 1.0, max_share, rng, plug_var=ratio)
    return tuple(float(v) for v in _spend(t[:, :-1], level))


@functools.lru_cache(maxsize=64)
def _noise_offsets(
    design: Design, n_pairs: int, center: int, max_share: float, gamma: float, n_sim: int, seed: int
) -> tuple[float, ...]:
    """Per interim look, ``u_j``: log(estimate / truth) exceeds it at some interim look in at most gamma of
    the studies,
    at every simulated true noise level (grid points ``center + OFFSET_POINTS``)."""
    worst = np.full(design.looks - 1, -np.inf)
    for step in OFFSET_POINTS:
        ratio = math.exp((center + step) * GRID_STEP)
        rng = np.random.default_rng([seed, 2, center + step + 1000])
        gaps = _boundary_gaps(n_sim, n_pairs, 1.0, max_share)
        _, log_var, _ = simulate_design(gaps, design, ratio, 1.0, max_share, rng)
        excess = np.where(np.isfinite(log_var), log_var - math.log(ratio), -np.inf)[:, :-1]
        worst = np.maximum(worst, -_spend(-excess, gamma))
    return tuple(float(v) for v in worst)


@functools.lru_cache(maxsize=4096)
def look_rule(
    design: Design,
    n_pairs: int,
    noise_over_margin2: float,
    look: int,
    max_share: float = 0.1,
    alpha: float = 0.05,
    n_sim: int = 2000,
    seed: int = 0,
) -> tuple[float | None, float]:
    """The plugged noise ratio and the critical value at registered look `look` (1-based).

    Parameters
    ----------
    design : Design
        The registered design (its ``looks``).
    n_pairs : int
    noise_over_margin2 : float
        The study's pooled within-pair noise variance at this look over ``margin^2``.
    look : int
    max_share, alpha : float
    n_sim, seed : int
        Simulated studies per calibration run and the seed.

    Returns
    -------
    tuple
        ``(plug, critical)``: the look passes when ``T`` computed with noise variance
        ``plug * margin^2`` (the study's own estimate when ``plug`` is None: the last look) lies below
        ``critical``.

    Examples
    --------
    >>> design = Design("two_stage", 2, 3.0, 8, looks=3)
    >>> plug, crit = look_rule(design, 40, 3.0, 1, n_sim=300)
    >>> bool(plug < 3.0), bool(crit < 0)
    (True, True)
    >>> look_rule(design, 40, 3.0, 3, n_sim=300)[0] is None
    True
    """
    if look >= design.looks:
        final = alpha * (1 - INTERIM_SHARE)
        one = replace(design, looks=1)
        return None, critical_values(one, n_pairs, noise_over_margin2, max_share, final, n_sim, seed)[0]
    x = math.log(noise_over_margin2)
    interim = alpha * INTERIM_SHARE
    gamma = GAMMA_SHARE * interim
    center = int(round((x - 0.4) / GRID_STEP))  # the estimate lies about 0.2-0.5 above the truth
    offset = _noise_offsets(design, n_pairs, center, max_share, gamma, n_sim, seed)[look - 1]
    index = math.floor((x - offset) / GRID_STEP)
    crit = _boundary(design, n_pairs, index, max_share, interim - gamma, n_sim, seed)[look - 1]
    return math.exp(index * GRID_STEP), crit
