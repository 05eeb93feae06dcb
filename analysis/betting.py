"""Distribution-free bounds of a ratio of means by betting (Waudby-Smith and Ramdas 2023).

For clusters drawn independently (e.g. a study's owners), each with a count ``den`` and a part
``num`` of it (0 <= num <= den <= N), ``betting_ratio`` bounds E[num] / E[den] whatever the clusters'
distribution: the betting test of E[num - r den] = 0 is inverted over r; ``betting_p`` is that
test's p-value at one r.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["BET_STEPS", "BET_TRUNCATION", "betting_p", "betting_ratio"]

#: Bisection halvings of the betting bounds (precision 2^-30).
BET_STEPS = 30
#: The largest bet as a share of the most a bet can stake (c / r): c = 1/2 (Waudby-Smith and Ramdas's
#: default) left the owners' verdict almost no power with 10-20 owners; 0.75, 0.9, 0.95 and 0.99 gained
#: power step by step at no cost in coverage (measured in benchmarks/bench_owners.py); 0.9 keeps at
#: least a tenth of the capital after any one owner.
BET_TRUNCATION = 0.9


def _capital(
    num: np.ndarray, den: np.ndarray, present: np.ndarray, r: np.ndarray, alpha: float, side: int
) -> np.ndarray:
    """The largest value over owners of the hedged-capital process betting that the ratio is above
    (`side` = 1) or below (-1) `r` (...): Waudby-Smith and Ramdas's (2023) capital
    prod (1 + side lambda_i (y_i - r)) with y_i = (num_i - r den_i) / N + r in 0..1 (N the largest
    ``den``), predictable-mixture bets lambda_i = sqrt(2 log(1/alpha) / (G sigma_{i-1}^2)) from the
    owners before i (prior mean 1/2 and variance 1/4 as one observation), truncated at BET_TRUNCATION
    over r (side 1) or 1 - r (side -1), so every factor stays positive."""
    r = r[..., None]
    cap = den.max(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        step = np.where(present, (num - r * den) / cap, 0.0)  # y_i - r
        y = step + r
        t = np.cumsum(present, -1)
        mu = (0.5 + np.cumsum(np.where(present, y, 0.0), -1)) / (t + 1)
        var = (0.25 + np.cumsum(np.where(present, (y - mu) ** 2, 0.0), -1)) / (t + 1)
        var_before = np.concatenate([np.full(var.shape[:-1] + (1,), 0.25), var[..., :-1]], -1)
        bet = np.sqrt(2 * np.log(1 / alpha) / (t[..., -1:] * var_before))
        bet = np.minimum(bet, BET_TRUNCATION / (r if side > 0 else 1 - r))
        factor = np.where(present, 1 + side * bet * step, 1.0)
        return np.cumprod(factor, -1).max(-1)


def betting_ratio(
    num: npt.ArrayLike, den: npt.ArrayLike, *, alpha: float = 0.05, steps: int = BET_STEPS
) -> tuple[np.ndarray, np.ndarray]:
    """Distribution-free bounds of the ratio E[num] / E[den] over owners drawn independently, whatever
    the distribution of an owner's (num, den) with 0 <= num <= den <= N (N: the largest ``den`` of the
    study): Waudby-Smith and Ramdas's (2023, "Estimating means of bounded random variables by betting",
    JRSS B 86:1-27) betting interval inverted over r for E[num - r den] = 0. Each bound is the r where
    the capital of ``_capital`` (its largest value over the owners, by Ville's inequality) crosses
    1 / alpha, found by bisection in `steps` halvings; owners enter in their given order.

    Parameters
    ----------
    num, den : array_like, shape (..., G)
        Per-owner sums; an owner with ``den == 0`` is absent.
    alpha : float
        Each side's level (the interval is 1 - 2*alpha).

    Returns
    -------
    ci_low, ci_high : numpy.ndarray, shape (...)
        0 and 1 without owners.

    Examples
    --------
    >>> low, high = betting_ratio([9, 10, 8, 10, 10, 9, 10, 7, 10, 10], [10] * 10, alpha=0.05)
    >>> round(float(low), 3), round(float(high), 3)
    (0.666, 1.0)
    """
    n = np.asarray(num, dtype=np.float64)
    d = np.asarray(den, dtype=np.float64)
    present = d > 0
    threshold = 1 / alpha
    bounds: list[np.ndarray] = []
    for side in (1, -1):
        # side 1: r = 0 may be rejected, r = 1 never is; side -1: the mirror image.
        accepted = np.ones(n.shape[:-1]) if side > 0 else np.zeros(n.shape[:-1])
        rejected = edge_value = 1 - accepted
        edge = _capital(n, d, present, edge_value, alpha, side) >= threshold
        for _ in range(steps):
            mid = (accepted + rejected) / 2
            out = _capital(n, d, present, mid, alpha, side) >= threshold
            rejected = np.where(out, mid, rejected)
            accepted = np.where(out, accepted, mid)
        bounds.append(np.where(edge, accepted, edge_value))
    return bounds[0], bounds[1]


def betting_p(
    num: npt.ArrayLike, den: npt.ArrayLike, r: float, *, alpha: float = 0.05, below: bool = True
) -> np.ndarray:
    """The p-value of H0: E[num] / E[den] >= `r` (`below`, the evidence sought is a ratio below r; else
    H0: <= r) over owners drawn independently, whatever their distribution (0 <= num <= den <= N): one
    over the largest capital of ``_capital``'s betting process (Ville's inequality), at most 1; `alpha`
    only sizes the bets. 1 without owners.

    >>> round(float(betting_p([1, 0, 2, 1, 0, 1, 0, 2, 1, 0], [5] * 10, 0.5)), 4)
    0.0103
    """
    n = np.asarray(num, dtype=np.float64)
    d = np.asarray(den, dtype=np.float64)
    ratio = np.full(n.shape[:-1], float(r))
    capital = _capital(n, d, d > 0, ratio, alpha, -1 if below else 1)
    return np.minimum(1.0, 1.0 / capital)
