"""Whole-number settings read from the environment (one rule for their parsing and their error)."""

import os

from annotator.errors import UserError


def whole_number(name: str, default: int, *, least: int, wording: str, most: int | None = None) -> int:
    """$`name` as a whole number from `least` to `most` (if given), else `default` when it is unset or
    blank; any other value raises a UserError: "$NAME must be `wording`, not '...'"."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = least - 1
    if value < least or (most is not None and value > most):
        raise UserError(f"${name} must be {wording}, not {raw!r}")
    return value
