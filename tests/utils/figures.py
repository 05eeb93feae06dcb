"""What a report figure (matplotlib) draws, read back for tests: its intervals, bands and hollow points."""

from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.container import ErrorbarContainer


@dataclass(frozen=True)
class Interval:
    row: str  # the y tick label of the point's row
    series: str  # the errorbar's label, or its gid where it has none
    estimate: float
    low: float
    high: float


def _row_labels(ax: Any) -> dict[int, str]:
    return {round(y): t.get_text() for y, t in zip(ax.get_yticks(), ax.get_yticklabels(), strict=True)}


def intervals(figure: Any) -> list[Interval]:
    """Every point drawn with an interval, with the label of its row."""
    ax = figure.axes[0]
    rows = _row_labels(ax)
    found = []
    for container in ax.containers:
        if not isinstance(container, ErrorbarContainer):
            continue
        line, _, (bars, *_) = container.lines
        name = container.get_label() if not container.get_label().startswith("_") else line.get_gid()
        xs, ys = line.get_data()
        points = [(x, y) for x, y in zip(xs, ys, strict=True) if np.isfinite(x) and np.isfinite(y)]
        for (x, y), segment in zip(points, bars.get_segments(), strict=True):
            found.append(
                Interval(rows[round(y)], str(name), float(x), float(segment[0][0]), float(segment[1][0]))
            )
    return found


def hollow_points(figure: Any) -> dict[str, list[str]]:
    """The rows of the points drawn without an interval, by the gid of their series."""
    ax = figure.axes[0]
    rows = _row_labels(ax)
    return {
        str(line.get_gid()): [rows[round(y)] for y in line.get_ydata()]
        for line in ax.lines
        if line.get_gid() and line.get_markerfacecolor() == "none" and len(line.get_ydata())
    }


def bands(figure: Any) -> dict[str, tuple[float, float]]:
    """The x extent of every band drawn with a gid (the margins per dimension)."""
    ax = figure.axes[0]
    return {
        str(c.get_gid()): (float(v[:, 0].min()), float(v[:, 0].max()))
        for c in ax.collections
        if c.get_gid() and (v := c.get_paths()[0].vertices).size
    }
