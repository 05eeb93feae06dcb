"""Counted nouns for the sentences people read ("1 annotator", "2 annotators"): one rule for every page,
command and report line that prints a count with its noun.

>>> counted(1, "annotator"), counted(2, "annotator"), counted(0, "control item")
('1 annotator', '2 annotators', '0 control items')
>>> counted(1, "is", "are"), counted(3, "is", "are", number=False)
('1 is', 'are')
"""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str, plural: str | None = None, *, number: bool = True) -> str:
    """`n` and `noun`, the noun in the plural unless `n` is 1 (`plural`, or the noun with an "s");
    with `number=False` the noun alone, in the form the count asks for."""
    word = noun if n == 1 else plural or f"{noun}s"
    return f"{n} {word}" if number else word
