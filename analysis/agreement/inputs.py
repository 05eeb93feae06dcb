"""Shared input rules of the agreement coefficients: levels of measurement and reliability data
of shape ``(raters, units)`` with ``np.nan`` for a missing rating."""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

Level = Literal["nominal", "ordinal", "interval", "ratio"]
Weights = Literal["linear", "quadratic"]

LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")


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
