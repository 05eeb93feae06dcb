"""Shared input rules of the agreement coefficients: levels of measurement and reliability data
of shape ``(raters, units)`` with ``np.nan`` for a missing rating."""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

Level = Literal["nominal", "ordinal", "interval", "ratio"]
Weights = Literal["linear", "quadratic"]

LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")

_NA = np.nan
# The worked example of Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 raters x
# 12 units, nan = not rated (nominal alpha 0.743, interval 0.849; Gwet's AC1 0.77544 in ``irrCAC``).
# The doctests of the coefficients use it.
KRIPPENDORFF_2011: list[list[float]] = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, _NA, _NA, _NA],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _NA, 3],
    [_NA, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _NA],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _NA],
]


def check_level(level: str) -> None:
    if level not in LEVELS:
        raise ValueError(f"level must be one of 'nominal', 'ordinal', 'interval', 'ratio'; got {level!r}")


def reliability_data(data: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Validate reliability data of shape (raters, units) and return it as float64."""
    try:
        x = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError("data must be numeric (use np.nan for a missing rating)") from err
    if x.ndim != 2:
        raise ValueError(f"data must be a 2-D array of shape (raters, units); got shape {x.shape}")
    if x.shape[0] < 2:
        raise ValueError(f"data must have at least two raters (rows); got {x.shape[0]}")
    if np.isinf(x).any():
        raise ValueError("data must not contain infinite values")
    if np.isnan(x).all():
        raise ValueError("data has no non-missing values")
    return x
