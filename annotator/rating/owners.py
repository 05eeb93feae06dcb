"""The profile owner as a rater: which pairs are an owner's, and recording the owner's own judgment.

A pair's owner is named by the pairs file (an ``owner`` or ``user_id`` key, stored on the pair). An
owner's judgments live in their own table (:class:`OwnerJudgment`), so no third-party service (queues,
adjudication, quality control, exports of labels) ever reads them; the report adds them as the owners'
rows (:func:`annotator.review.owner_rows.owner_rows`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlmodel import Session, select

from analysis.vocabulary import CONFIDENCE_DOMAIN, PREFERENCE_DOMAIN, SIDES, SUPPORT_DOMAIN
from annotator.errors import UserError
from annotator.store.models import OwnerJudgment, Pair, id_of
from annotator.study import StudyConfig, get_study, study_config

__all__ = [
    "OwnerItem",
    "check_scores",
    "owner_items",
    "owner_pairs",
    "study_owners",
    "record_owner_judgment",
    "submit_owner_answer",
]


def owner_pairs(session: Session, *, study: str, owner: str) -> list[Pair]:
    """The main pairs of `study` whose profile belongs to `owner` (never another owner's), by id."""
    if not owner:
        return []
    study_id = id_of(get_study(session, study))
    mine = select(Pair).where(Pair.study_id == study_id, Pair.owner == owner, Pair.control == "")
    return sorted(session.exec(mine).all(), key=id_of)


def study_owners(session: Session, *, study: str) -> list[str]:
    """The owners the pairs of `study` name, sorted."""
    study_id = id_of(get_study(session, study))
    named = (
        select(Pair.owner).where(Pair.study_id == study_id, Pair.control == "", Pair.owner != "").distinct()
    )
    return sorted(session.exec(named).all())


def record_owner_judgment(
    session: Session,
    *,
    study: str,
    owner: str,
    pair_external_id: str,
    preference: int,
    aspects: Sequence[int] = (),
    confidence: int | None = None,
    side_chosen: str = "",
    scores: Mapping[str, Mapping[str, int]] | None = None,
) -> OwnerJudgment:
    """Store (or replace) `owner`'s judgment of one of their own pairs.

    `scores` are the owner's quality ratings, {"chosen" | "rejected": {dimension: point}} (every
    dimension of the study for both, on its scale), or none. Raises UserError when the pair is not the
    owner's, or an answer is outside its domain (preference -2..2, confidence 1..3, one aspect answer
    0..2 per rubric aspect, a quality point on the study's scale)."""
    pair = next(
        (p for p in owner_pairs(session, study=study, owner=owner) if p.external_id == pair_external_id), None
    )
    if pair is None:
        raise UserError(f"pair {pair_external_id!r} of study {study!r} is not a pair of this owner")
    if preference not in PREFERENCE_DOMAIN:
        raise UserError(f"preference must be -2..2, got {preference!r}")
    if confidence is not None and confidence not in CONFIDENCE_DOMAIN:
        raise UserError(f"confidence must be 1..3, got {confidence!r}")
    if aspects and (len(aspects) != len(pair.rubric) or any(a not in SUPPORT_DOMAIN for a in aspects)):
        raise UserError(f"aspects must be one answer 0..2 per rubric aspect ({len(pair.rubric)})")
    if side_chosen not in ("", "A", "B"):
        raise UserError(f"side_chosen must be A or B, got {side_chosen!r}")
    checked = check_scores(study_config(session, study), scores) if scores else {}
    row = session.exec(
        select(OwnerJudgment).where(OwnerJudgment.pair_id == id_of(pair), OwnerJudgment.owner == owner)
    ).first() or OwnerJudgment(study_id=pair.study_id, pair_id=id_of(pair), owner=owner, preference=0)
    row.preference, row.confidence, row.aspects, row.side_chosen, row.scores = (
        preference,
        confidence,
        list(aspects),
        side_chosen,
        checked,
    )
    session.add(row)
    session.flush()
    return row


def check_scores(config: StudyConfig, scores: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """The owner's quality ratings as stored, {"chosen" | "rejected": {dimension: point}}: every quality
    dimension of the study for both responses, each a whole point on the dimension's scale (UserError
    naming the first that is not)."""
    scales = config.quality.scales
    names = config.dimension_names
    checked: dict[str, dict[str, int]] = {}
    for response in ("chosen", "rejected"):
        given = scores.get(response, {})
        if set(given) != set(names):
            raise UserError(
                f"quality ratings of {response} must cover {', '.join(names)}, got {sorted(given)}"
            )
        for name in names:
            point, scale = given[name], scales[name]
            if isinstance(point, bool) or not isinstance(point, int) or point not in scale:
                raise UserError(
                    f"quality rating {name} of {response} must be {scale.low}..{scale.high}, got {point!r}"
                )
        checked[response] = {name: int(given[name]) for name in names}
    return checked


@dataclass(frozen=True)
class OwnerItem:
    """One of an owner's pairs as the owner's page shows it: blinded (texts A and B only)."""

    pair_id: str
    question: str
    aspects: list[str]
    text_a: str
    text_b: str
    answered: bool


def _side_chosen(owner: str, position: int) -> str:
    """The side chosen is shown on for the owner's `position`-th pair: alternating from a start drawn
    from the owner's name, so each owner sees chosen on A about half the time."""
    start = hashlib.sha256(owner.encode("utf-8", "surrogatepass")).digest()[0] % 2
    return SIDES[(position + start) % 2]


def owner_items(session: Session, *, study: str, owner: str) -> list[OwnerItem]:
    """The owner's own pairs, blinded and counterbalanced, with whether each is answered."""
    pairs = owner_pairs(session, study=study, owner=owner)
    study_id = id_of(get_study(session, study))
    answered = select(OwnerJudgment.pair_id).where(
        OwnerJudgment.owner == owner, OwnerJudgment.study_id == study_id
    )
    done = set(session.exec(answered).all())
    items = []
    for k, pair in enumerate(pairs):
        chosen_on_a = _side_chosen(owner, k) == SIDES[0]
        items.append(
            OwnerItem(
                pair_id=pair.external_id,
                question=pair.question,
                aspects=[str(a.get("aspect", "")) for a in pair.rubric],
                text_a=pair.chosen if chosen_on_a else pair.rejected,
                text_b=pair.rejected if chosen_on_a else pair.chosen,
                answered=id_of(pair) in done,
            )
        )
    return items


def submit_owner_answer(
    session: Session,
    *,
    study: str,
    owner: str,
    pair_external_id: str,
    preference_ab: int,
    aspects: Sequence[int] = (),
    confidence: int | None = None,
    scores_ab: Mapping[str, Mapping[str, int]] | None = None,
) -> OwnerJudgment:
    """Save the owner's answer given on the blinded page: `preference_ab` -2..2 with positive = B
    better, and the quality ratings of answers "A" and "B", are mapped to chosen/rejected through the
    side the page showed chosen on."""
    positions = [p.external_id for p in owner_pairs(session, study=study, owner=owner)]
    if pair_external_id not in positions:
        raise UserError(f"pair {pair_external_id!r} of study {study!r} is not a pair of this owner")
    side = _side_chosen(owner, positions.index(pair_external_id))
    preference = -preference_ab if side == SIDES[0] else preference_ab
    other = SIDES[1] if side == SIDES[0] else SIDES[0]
    scores = (
        None if not scores_ab else {"chosen": scores_ab.get(side, {}), "rejected": scores_ab.get(other, {})}
    )
    return record_owner_judgment(
        session, study=study, owner=owner, pair_external_id=pair_external_id, preference=preference,
        aspects=aspects, confidence=confidence, side_chosen=side, scores=scores,
    )  # fmt: skip
