"""The label frame's vocabulary: column names, item names and prefixes, control kinds, answer domains,
the default quality items and the default equivalence margin. Every other module takes these names from
here; ``tests/test_architecture.py`` fails on a stray literal of them elsewhere.

>>> rubric_item(2), aspect_of(rubric_item(2)), is_rubric_item("correctness")
('rubric:2', 2, False)
>>> PREFERENCE_DOMAIN, CONFIDENCE_DOMAIN, RUBRIC_DOMAIN
((-2, -1, 0, 1, 2), (1, 2, 3), (0, 1, 2))
"""

from __future__ import annotations

import re

__all__ = [
    "ANNOTATOR",
    "ARM",
    "CATEGORY",
    "CHOSEN",
    "CHOSEN_CHARS",
    "CONFIDENCE",
    "CONFIDENCE_DOMAIN",
    "CONFIDENCE_POINTS",
    "CONTROL",
    "CONTROL_KINDS",
    "DUPLICATE",
    "GOLD",
    "ITEM",
    "JUDGMENT_ID",
    "MAIN",
    "NAME_CONTROLS",
    "OWNER",
    "PAIR_ID",
    "POSITIVE",
    "PREFERENCE",
    "PREFERENCE_DOMAIN",
    "PREFERENCE_POINTS",
    "QUALITY_ITEMS",
    "RATER_KIND",
    "RATER_KINDS",
    "REJECTED",
    "REJECTED_CHARS",
    "RESPONSE",
    "TEXT_CONTROLS",
    "RESPONSES",
    "RUBRIC_DOMAIN",
    "RUBRIC_SPAN",
    "RUBRIC_ITEM",
    "RUBRIC_POINTS",
    "RUBRIC_PREFIX",
    "SIDE_CHOSEN",
    "SIDES",
    "SUPPORT_DOMAIN",
    "SUPPORT_LABELS",
    "SUPPORT_PREFIX",
    "SWAP",
    "TIME_S",
    "TRAINING",
    "VALUE",
    "aspect_of",
    "is_rubric_item",
    "is_support_item",
    "rubric_item",
    "support_item",
]

# Columns of the long label frame (one row per score; see analysis.frames).
PAIR_ID = "pair_id"
ANNOTATOR = "annotator"
RESPONSE = "response"
ITEM = "item"
VALUE = "value"
PREFERENCE = "preference"
CONFIDENCE = "confidence"
TIME_S = "time_s"
CATEGORY = "category"
JUDGMENT_ID = "judgment_id"
CONTROL = "control"
ARM = "arm"
SIDE_CHOSEN = "side_chosen"
CHOSEN_CHARS = "chosen_chars"
REJECTED_CHARS = "rejected_chars"
#: Optional: who the rater is, ``""`` or ``"annotator"`` (a third party) or ``"owner"`` (the profile's owner).
RATER_KIND = "rater_kind"

# The two responses of a pair, and the two sides an annotator sees them on.
CHOSEN = "chosen"
REJECTED = "rejected"
RESPONSES: tuple[str, str] = (CHOSEN, REJECTED)
SIDES: tuple[str, str] = ("A", "B")

# Items: the default general-quality dimensions (1-5), rubric aspects and rubric support.
#: The general-quality dimensions of the default study (scale 1-5).
QUALITY_ITEMS: tuple[str, ...] = ("correctness", "relevance", "helpfulness")
#: The item holding the per-response rubric score (mean over the ``rubric:<k>`` aspects).
RUBRIC_ITEM = "rubric"
#: Prefix of a rubric-aspect item: ``rubric:0``, ``rubric:1``, ... (LaMP-QA's 0/1/2 per aspect).
RUBRIC_PREFIX = "rubric:"
#: Prefix of a rubric-support answer (is aspect k supported by what the user wrote?), stored on the
#: ``chosen`` rows of a judgment because it is about the pair.
SUPPORT_PREFIX = "support:"
#: The rubric-support answers by value (0, 1, 2).
SUPPORT_LABELS: tuple[str, ...] = ("no", "partly", "yes")

# Control kinds: "" is a main pair; controls never enter the main analysis.
MAIN = ""
GOLD = "gold"
POSITIVE = "positive"
SWAP = "swap"
DUPLICATE = "duplicate"
TRAINING = "training"
#: Allowed values of the optional ``control`` column.
CONTROL_KINDS: tuple[str, ...] = (MAIN, GOLD, POSITIVE, SWAP, DUPLICATE, TRAINING)

# Rater kinds: the owner's judgments never enter the third-party analysis.
OWNER = "owner"
#: Allowed values of the optional ``rater_kind`` column.
RATER_KINDS: tuple[str, ...] = ("", "annotator", OWNER)

# Answer domains.
#: Preference, signed: -2..2, positive = ``chosen`` preferred, 0 = tie.
#: The control characters no text may hold, the one rule of the pair import, the app's inputs and the
#: label frame (checked in Python, so SQLite and PostgreSQL accept the same): an id or a name holds none
#: (a terminal's escape sequences among them), a free text none but tab and line breaks.
NAME_CONTROLS = re.compile("[\x00-\x1f\x7f]")
TEXT_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

PREFERENCE_DOMAIN: tuple[int, ...] = (-2, -1, 0, 1, 2)
PREFERENCE_POINTS = len(PREFERENCE_DOMAIN)
#: Confidence 1 (low) .. 3 (high).
CONFIDENCE_DOMAIN: tuple[int, ...] = (1, 2, 3)
CONFIDENCE_POINTS = len(CONFIDENCE_DOMAIN)
#: A rubric aspect's coverage: 0 does not cover, 1 somewhat, 2 very well.
RUBRIC_DOMAIN: tuple[int, ...] = (0, 1, 2)
RUBRIC_POINTS = len(RUBRIC_DOMAIN)
#: The widest rubric difference: a chosen - rejected rubric score lies in -RUBRIC_SPAN..RUBRIC_SPAN.
RUBRIC_SPAN = RUBRIC_DOMAIN[-1] - RUBRIC_DOMAIN[0]
#: Rubric support: 0 no, 1 partly, 2 yes.
SUPPORT_DOMAIN: tuple[int, ...] = (0, 1, 2)


def rubric_item(aspect: int) -> str:
    """The item name of rubric aspect ``aspect`` (0-based)."""
    return f"{RUBRIC_PREFIX}{aspect}"


def support_item(aspect: int) -> str:
    """The item name of the support answer for rubric aspect ``aspect`` (0-based)."""
    return f"{SUPPORT_PREFIX}{aspect}"


def is_rubric_item(item: str) -> bool:
    """True for a rubric-aspect item (``rubric:<k>``)."""
    return item.startswith(RUBRIC_PREFIX)


def is_support_item(item: str) -> bool:
    """True for a rubric-support item (``support:<k>``)."""
    return item.startswith(SUPPORT_PREFIX)


def aspect_of(item: str) -> int:
    """The 0-based aspect index of a ``rubric:<k>`` or ``support:<k>`` item."""
    for prefix in (RUBRIC_PREFIX, SUPPORT_PREFIX):
        if item.startswith(prefix):
            return int(item[len(prefix) :])
    raise ValueError(f"not a rubric or support item: {item!r}")
