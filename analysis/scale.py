"""The rating scale of a quality dimension: its integer points from `low` to `high` and a label on each.

A study's quality dimensions share the study's scale (1-5 unless its ``[quality]`` table says otherwise)
unless a dimension names its own (``scale_min``/``scale_max`` on the dimension, annotator/study.py): a
1-7 item, or a yes/no item as 0/1. The rating page offers a dimension's points, the submit checks them,
the agreement statistics use them as the ordinal domain, the report's intervals and plots are bounded by
them and the exports name them. A report's parameters carry the scales (:func:`report_scales`)."""

from __future__ import annotations

import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_SCALE",
    "Margin",
    "Scale",
    "dimension_margins",
    "item_margin",
    "margins_text",
    "report_scales",
    "rescaled",
    "scale_parameters",
    "to_study_points",
    "unnumbered",
]


@dataclass(frozen=True)
class Scale:
    """An integer rating scale.

    Attributes
    ----------
    low, high : int
        The lowest and highest point (``high > low``); every integer between is a point.
    labels : tuple of str
        A label per point, low to high (empty: the points are unlabelled).

    Examples
    --------
    >>> yes_no = Scale(0, 1, ("No", "Yes"))
    >>> yes_no.values, yes_no.span, yes_no.text(), 1 in yes_no, 0.5 in yes_no
    ((0, 1), 1.0, '0-1', True, False)
    """

    low: int = 1
    high: int = 5
    labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for end in (self.low, self.high):
            if isinstance(end, bool) or not isinstance(end, int):
                raise TypeError(f"a scale's ends must be integers, got {self.low!r}-{self.high!r}")
        if self.high <= self.low:
            raise ValueError(f"a scale's high end must be above its low end, got {self.low}-{self.high}")
        if self.labels and len(self.labels) != self.points:
            raise ValueError(f"the scale {self.text()} needs {self.points} labels, got {len(self.labels)}")

    @property
    def points(self) -> int:
        """How many points the scale has."""
        return self.high - self.low + 1

    @property
    def values(self) -> tuple[int, ...]:
        """The points, low to high."""
        return tuple(range(self.low, self.high + 1))

    @property
    def span(self) -> float:
        """The largest difference two ratings can have (high - low)."""
        return float(self.high - self.low)

    def __contains__(self, value: object) -> bool:
        return isinstance(value, numbers.Real) and not isinstance(value, bool) and value in self.values

    def text(self) -> str:
        """The range in words: ``"1-5"``."""
        return f"{self.low}-{self.high}"

    def label(self, value: int) -> str:
        """The label of point `value` (its number when the scale has no labels)."""
        return self.labels[value - self.low] if self.labels else str(value)

    def words(self, value: int) -> str:
        """The label of point `value` without a leading number ("Mostly wrong" for "2 - Mostly wrong")."""
        return unnumbered(value, self.label(value))

    def to_dict(self) -> dict[str, Any]:
        """The scale as plain data (JSON): low, high, labels."""
        return {"low": self.low, "high": self.high, "labels": list(self.labels)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scale:
        """The scale from :meth:`to_dict`'s data."""
        return cls(int(data["low"]), int(data["high"]), tuple(data.get("labels") or ()))


def unnumbered(value: int, label: str) -> str:
    """A scale label without its leading number ("2 - Mostly wrong" -> "Mostly wrong")."""
    return re.sub(rf"^\s*{value}\s*[-–.:)]?\s*", "", label)


#: The scale of a study or dimension that names none.
DEFAULT_SCALE = Scale()


def scale_parameters(items: Sequence[str], scale: Scale, scales: Mapping[str, Scale]) -> dict[str, Any]:
    """A report's scale parameters: ``scale_min``/``scale_max`` (the study's scale) and, only when some
    item has its own scale, ``scales`` (every item's, as :meth:`Scale.to_dict`)."""
    out: dict[str, Any] = {"scale_min": scale.low, "scale_max": scale.high}
    own = {item: scales.get(item, scale) for item in items}
    if any((s.low, s.high) != (scale.low, scale.high) for s in own.values()):
        out["scales"] = {item: s.to_dict() for item, s in own.items()}
    return out


def rescaled(value: Any, scale: Scale, origin: Scale) -> Any:
    """`value` (a number or an array) on the `origin` scale moved linearly onto `scale`; unchanged when
    the two have the same ends (a simulated latent truth drawn on one scale, rated on another).

    Examples
    --------
    >>> rescaled(3.0, Scale(1, 7), Scale()), rescaled(5.0, Scale(0, 1), Scale())
    (4.0, 1.0)
    >>> rescaled(2.5, Scale(), Scale())
    2.5
    """
    if scale.low == origin.low and scale.high == origin.high:
        return value
    return scale.low + (value - origin.low) * (scale.span / origin.span)


def report_scales(parameters: Mapping[str, Any], items: Sequence[str]) -> dict[str, Scale]:
    """Each item's scale from a report's parameters (:func:`scale_parameters`; a report without them
    used the 1-5 scale)."""
    own = parameters.get("scales") or {}
    study = Scale(
        int(parameters.get("scale_min", DEFAULT_SCALE.low)),
        int(parameters.get("scale_max", DEFAULT_SCALE.high)),
    )
    return {item: Scale.from_dict(own[item]) if item in own else study for item in items}


#: An equivalence margin in scale points: one for every quality item, or one per item (every item's).
Margin = float | Mapping[str, float]


def item_margin(margin: Margin, item: str) -> float:
    """The margin of quality item `item` (`margin` itself when it is one number)."""
    return float(margin[item]) if isinstance(margin, Mapping) else float(margin)


def dimension_margins(
    margin: float, scale: Scale, scales: Mapping[str, Scale], own: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Each dimension's equivalence margin in its own scale's points: its `own` margin where it has one,
    else the study's `margin` (points of the study's `scale`) held to the same share of the dimension's
    scale (0.5 on 1-5 is 0.75 on 1-7 and 0.125 on a 0/1 item).

    Examples
    --------
    >>> dimension_margins(0.5, Scale(), {"a": Scale(), "b": Scale(1, 7), "c": Scale(0, 1)})
    {'a': 0.5, 'b': 0.75, 'c': 0.125}
    """
    own = own or {}
    return {
        name: float(own[name]) if name in own else margin * (s.span / scale.span)
        for name, s in scales.items()
    }


def margins_text(margins: Mapping[str, float]) -> str:
    """Each dimension's margin in plain text, as the methods and notes state it.

    >>> margins_text({"a": 0.5, "b": 0.125})
    'a +-0.5, b +-0.125'
    """
    return ", ".join(f"{item} +-{m:g}" for item, m in margins.items())


def to_study_points(margin: float, margins: Mapping[str, float] | None, item: str) -> float:
    """The factor that puts a gap on `item` into points of the study's margin (`margin` / the item's),
    so gaps on dimensions of different scales can be summed or averaged; 1 without per-item margins."""
    if not margins or item not in margins:
        return 1.0
    return margin / margins[item]
