"""A drawn human sample as a pair file carries it: each main pair's recorded inclusion probability.

``annotator export pairs`` writes, for a study whose human sample the tool drew, a ``human_sample``
object on every main pair: ``{"probability": p, "drawn": true | false}``. ``annotator analyze --labels
LABELS --judges FILE --pairs PAIRS`` reads it back, so the prediction-powered verdicts from files weight
each rated pair by 1 / p as the database's report does (a pair file from another tool can carry the
same object).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from annotator import textguard
from annotator.errors import UserError

__all__ = ["SAMPLE_KEY", "file_probabilities", "sample_object"]

SAMPLE_KEY = "human_sample"


def sample_object(probability: float | None, drawn: bool | None) -> dict[str, Any] | None:
    """The ``human_sample`` object of one exported pair, or None for a pair outside a drawn design."""
    if probability is None:
        return None
    return {"probability": float(probability), "drawn": bool(drawn)}


def _sample(record: dict[str, Any]) -> Any:
    """The ``human_sample`` value of one loaded pair record (its extra keys are kept as JSON metadata;
    a CSV cell holds the object as JSON text), or None when it has none."""
    try:
        meta = json.loads(record.get("metadata") or "{}")
    except (TypeError, ValueError):
        return None
    sample = meta.get(SAMPLE_KEY) if isinstance(meta, dict) else None
    if isinstance(sample, str):
        try:
            sample = json.loads(sample)
        except ValueError:
            pass
    return sample


def _problem(sample: Any) -> str | None:
    """What is wrong with one pair's ``human_sample`` value, or None."""
    if not isinstance(sample, dict):
        return f"field {SAMPLE_KEY}: expected an object with a probability, got {textguard.shown(sample)}"
    p = sample.get("probability")
    if isinstance(p, int | float) and not isinstance(p, bool) and math.isfinite(p) and 0 < p <= 1:
        return None
    return f"field {SAMPLE_KEY}.probability: expected a number in (0, 1], got {textguard.shown(p)}"


def file_probabilities(path: Path, records: list[dict[str, Any]]) -> pd.Series | None:
    """Each main pair's recorded inclusion probability by pair id, from the records of the pair file at
    `path` (:func:`annotator.intake.ingest.load_pairs`); None when no record carries one. Raises
    UserError naming the pair and field when some main pairs carry one and others do not, or when one
    is not a number in (0, 1]."""
    found = {str(r["external_id"]): _sample(r) for r in records if not r.get("control")}
    given = {pair: sample for pair, sample in found.items() if sample is not None}
    if not given:
        return None
    lacking = [pair for pair, sample in found.items() if sample is None]
    if lacking:
        raise UserError(
            f"{path}: pair {textguard.quoted(lacking[0])}, field {SAMPLE_KEY}: missing ({len(lacking):,} of "
            f"{len(found):,} pairs lack it); a drawn sample records every main pair's probability"
        )
    for pair, sample in given.items():
        problem = _problem(sample)
        if problem:
            raise UserError(f"{path}: pair {textguard.quoted(pair)}, {problem}")
    return pd.Series({pair: float(sample["probability"]) for pair, sample in given.items()}, dtype=float)
