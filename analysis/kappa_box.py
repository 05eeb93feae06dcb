"""Cohen's kappa over owners with the owner's shares of each direction bounded distribution-free.

Kappa of confusion counts pooled over owners is (po - pe) / (1 - pe), po the agreement and
pe = sum_k r_k o_k (the rater's and the owner's shares of each direction, ratios of means over owners).
At fixed owner shares o it is a ratio of means, E[U] / E[V] with U = agree - sum_k o_k R_k and
V = pairs - sum_k o_k R_k per owner (R_k: the rater's count in direction k), whose only skew-prone part
left is the rater's; the owner's shares are the part that a few owners far from the rest (unseen in most
samples of 10-20 owners) make skewed, as they made the owner endorsement's jackknife interval miss.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from analysis.betting import betting_ratio
from analysis.lazy import stats

__all__ = ["OWNER_CATEGORIES", "kappa_box"]

#: The directions an owner can take (chosen, tie, rejected): the first columns of a confusion table.
OWNER_CATEGORIES = 3
#: The share of alpha spent on the box of the owner's shares (the rest on Fieller's interval).
BOX_SHARE = 0.5


def _corners(confusion: np.ndarray, alpha: float) -> np.ndarray:
    """The four corners (..., 4, 3) of the box of the owner's shares: the tie and rejected shares each
    bounded by ``betting_ratio`` at alpha / 4 each side (so the box holds the population's shares with
    probability 1 - alpha whatever the owners' distribution), chosen the rest."""
    owner = confusion.sum(-2)[..., 1:OWNER_CATEGORIES]  # (..., G, 2)
    pairs = confusion.sum((-1, -2))
    low, high = betting_ratio(np.moveaxis(owner, -1, -2), pairs[..., None, :], alpha=alpha / 4)
    pick = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    rest = np.where(pick == 1, high[..., None, :], low[..., None, :])
    return np.concatenate([1 - rest.sum(-1, keepdims=True), rest], -1)


def _fieller(u: np.ndarray, v: np.ndarray, pairs: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fieller's interval of E[U] / E[V] from per-owner sums `u`, `v` (..., G) of owners with `pairs`
    (absent at 0): the k with (U - k V)^2 = q^2 s^2(k), s^2 the leave-one-owner-out jackknife variance
    of the ratio sum(U - k V) / sum(pairs) (times G / (G - 1), as ``analysis.owners``); -1 and 1 where
    the interval is unbounded."""
    present = pairs > 0
    g = present.sum(-1, keepdims=True)
    total_n = pairs.sum(-1, keepdims=True)
    total_u, total_v = u.sum(-1, keepdims=True), v.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        loo_u = np.where(present, (total_u - u) / (total_n - pairs), 0.0)
        loo_v = np.where(present, (total_v - v) / (total_n - pairs), 0.0)
        du = np.where(present, loo_u - loo_u.sum(-1, keepdims=True) / g, 0.0)
        dv = np.where(present, loo_v - loo_v.sum(-1, keepdims=True) / g, 0.0)
        suu, suv, svv = (du * du).sum(-1), (du * dv).sum(-1), (dv * dv).sum(-1)
        mean_u, mean_v = total_u[..., 0] / total_n[..., 0], total_v[..., 0] / total_n[..., 0]
        a = mean_v**2 - q**2 * svv
        b = -2 * (mean_u * mean_v - q**2 * suv)
        c = mean_u**2 - q**2 * suu
        disc = b**2 - 4 * a * c
        bounded = (a > 0) & (disc >= -1e-9 * b**2)  # 0 up to rounding: owners all alike
        root = np.sqrt(np.maximum(disc, 0.0))
        return np.where(bounded, (-b - root) / (2 * a), -1.0), np.where(bounded, (-b + root) / (2 * a), 1.0)


def kappa_box(confusion: npt.ArrayLike, *, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Kappa's interval over owners drawn independently, each side missing at most about `alpha`: the
    owner's shares of each direction lie in a betting box (``_corners``, at BOX_SHARE * alpha, whatever
    the owners' distribution), and at each of its corners Fieller's interval of kappa = E[U] / E[V]
    (``_fieller``, t on owners - 1 df at the rest of alpha) holds it; the interval spans the four.
    Each side misses at most about alpha (the box's alpha exactly, whatever the owners' distribution; the
    rest as far as Fieller's t interval holds with the owner's shares fixed, and taking the extremes over
    the box at its corners, where pe, linear in o, has its own). Kept within -1..1.

    Parameters
    ----------
    confusion : array_like, shape (..., G, K, K)
        Per owner, the counts of (rater's direction, owner's direction); the owner's directions are the
        first OWNER_CATEGORIES columns (a rater's further direction, a panel with no majority, is never
        the owner's).

    Returns
    -------
    ci_low, ci_high : numpy.ndarray, shape (...)

    Examples
    --------
    >>> owner = np.array([[6.0, 1, 1], [1, 1, 0], [1, 0, 1]])
    >>> counts = np.stack([owner, owner.T] * 10) + np.eye(3) * (np.arange(20) % 3)[:, None, None]
    >>> low, high = kappa_box(counts)
    >>> round(float(low), 3), round(float(high), 3)
    (0.381, 0.662)
    """
    c = np.asarray(confusion, dtype=np.float64)
    pairs = c.sum((-1, -2))
    rater = c.sum(-1)[..., :OWNER_CATEGORIES]
    agree = np.trace(c, axis1=-2, axis2=-1)
    corners = _corners(c, BOX_SHARE * alpha)
    mixed = np.einsum("...gk,...ck->...cg", rater, corners)  # (..., 4, G): sum_k o_k R_k
    g = (pairs > 0).sum(-1)
    q = stats.t.ppf(1 - (1 - BOX_SHARE) * alpha, np.maximum(g - 1, 1))[..., None]
    low, high = _fieller(agree[..., None, :] - mixed, pairs[..., None, :] - mixed, pairs[..., None, :], q)
    return np.clip(low.min(-1), -1.0, 1.0), np.clip(high.max(-1), -1.0, 1.0)
