"""The blinding map, the one home of the rule that links what an annotator sees (sides A and B, the
form's preference index 0..4 with 0 = "A much better") to what is stored (``chosen`` / ``rejected``,
the signed preference -2..2 with positive = ``chosen`` preferred). Each assignment fixes the side on
which ``chosen`` is shown (``Assignment.chosen_side``); nothing else may compute these mappings.

>>> side_texts("B", chosen="good", rejected="bad")
('bad', 'good')
>>> response_of("A", chosen_side="B"), side_of("chosen", chosen_side="B")
('rejected', 'B')
>>> signed_preference(0, chosen_side="A"), signed_preference(0, chosen_side="B")
(2, -2)
>>> all(preference_index(signed_preference(i, chosen_side=s), chosen_side=s) == i
...     for i in range(5) for s in "AB")
True
"""

from __future__ import annotations

from typing import Literal

from analysis.vocabulary import CHOSEN, PREFERENCE_DOMAIN, REJECTED, SIDES

__all__ = [
    "Side",
    "chosen_on_a",
    "preference_index",
    "response_of",
    "side_of",
    "side_texts",
    "signed_preference",
]

Side = Literal["A", "B"]
_MIDDLE = len(PREFERENCE_DOMAIN) // 2  # the form's index of "tie"


def chosen_on_a(chosen_side: str) -> bool:
    """True when the assignment shows ``chosen`` on side A."""
    if chosen_side not in SIDES:
        raise ValueError(f"chosen_side must be 'A' or 'B', got {chosen_side!r}")
    return chosen_side == SIDES[0]


def side_texts(chosen_side: str, *, chosen: str, rejected: str) -> tuple[str, str]:
    """The texts shown on sides A and B."""
    return (chosen, rejected) if chosen_on_a(chosen_side) else (rejected, chosen)


def response_of(side: str, *, chosen_side: str) -> str:
    """``chosen`` or ``rejected``: the response shown on ``side``."""
    if side not in SIDES:
        raise ValueError(f"side must be 'A' or 'B', got {side!r}")
    return CHOSEN if (side == SIDES[0]) == chosen_on_a(chosen_side) else REJECTED


def side_of(response: str, *, chosen_side: str) -> Side:
    """The side (A or B) on which ``response`` is shown."""
    if response not in (CHOSEN, REJECTED):
        raise ValueError(f"response must be 'chosen' or 'rejected', got {response!r}")
    return "A" if (response == CHOSEN) == chosen_on_a(chosen_side) else "B"


def signed_preference(index: int, *, chosen_side: str) -> int:
    """The stored preference (-2..2, positive = ``chosen``) of the form's answer ``index`` (0..4,
    0 = A much better)."""
    for_a = _MIDDLE - int(index)
    return for_a if chosen_on_a(chosen_side) else -for_a


def preference_index(preference: int, *, chosen_side: str) -> int:
    """The form's answer index (0..4, 0 = A much better) of a stored preference (-2..2)."""
    for_a = int(preference) if chosen_on_a(chosen_side) else -int(preference)
    return _MIDDLE - for_a
