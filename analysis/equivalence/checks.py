"""The equivalence statistics' shared input checks and the base of their result types."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

import numpy as np


class TestResult:
    """Base of the result dataclasses: their fields as a plain dict."""

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a plain dict (JSON-ready)."""
        out: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        return out


class WarnedResult:
    """Base of the crossed-model result dataclasses (crossed mean, mixed model, prediction-powered):
    their fields as a plain dict, with ``warnings`` joined by "; " to keep it flat."""

    warnings: list[str]

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a plain dict (``warnings`` joined by "; " to keep it flat)."""
        out: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        out["warnings"] = "; ".join(self.warnings)
        return out


def check_alpha(alpha: float) -> float:
    alpha = float(alpha)
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    return alpha


def check_margin(margin: float) -> float:
    """A symmetric equivalence margin as a float (ValueError unless finite and > 0)."""
    margin = float(margin)
    if not (math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a positive number, got {margin!r}")
    return margin


def check_bounds(low: float, high: float) -> tuple[float, float]:
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"bounds must be finite, got low={low!r}, high={high!r}")
    if not low < high:
        raise ValueError(f"low must be smaller than high, got low={low!r}, high={high!r}")
    return low, high


def as_vector(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def paired_differences(x: Any, y: Any) -> np.ndarray:
    """x - y with pairs that have a missing value dropped; at least 2 pairs."""
    xa, ya = as_vector(x, "x"), as_vector(y, "y")
    if xa.shape != ya.shape:
        raise ValueError(f"x and y must have the same length for a paired test, got {len(xa)} and {len(ya)}")
    d = xa - ya
    d = d[~np.isnan(d)]
    if len(d) < 2:
        raise ValueError(f"a paired test needs at least 2 complete pairs, got {len(d)}")
    return d


def as_sample(x: Any, name: str) -> np.ndarray:
    arr = as_vector(x, name)
    arr = arr[~np.isnan(arr)]
    if len(arr) < 2:
        raise ValueError(f"{name} needs at least 2 non-missing values, got {len(arr)}")
    return arr
