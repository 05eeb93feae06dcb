"""An annotator's own record of work, for "My work": every item they submitted (with each revision's
answers), skipped or flagged (with the reason), in the A/B terms of their own display, never which
response is `chosen`."""

from dataclasses import dataclass, field
from datetime import datetime

from sqlmodel import Session, col, or_, select

from analysis.vocabulary import SUPPORT_PREFIX
from annotator.people.authorization import Account, require_active
from annotator.rating.blinding import preference_index, side_of
from annotator.store.models import DONE, FLAGGED, PENDING, Assignment, Judgment, Pair, Score, Study

SUBMITTED, SKIPPED, FLAGGED_STATE = "submitted", "skipped", "flagged"


@dataclass(frozen=True)
class Answers:
    """One submission (revision) of an item as the annotator saw it: the preference as the index of
    the study's preference labels (0 = "A much better" ... 4 = "B much better"), scores per side."""

    revision: int
    submitted_at: datetime
    preference: int
    confidence: int | None
    comment: str
    scores: dict[str, dict[str, float]]  # "A"/"B" -> {item: value}
    support: dict[str, float]


@dataclass(frozen=True)
class WorkItem:
    """One item of the annotator's: submitted, skipped (still in the queue) or flagged as broken."""

    assignment_id: int
    study_id: int
    study: str
    question: str
    state: str  # SUBMITTED, SKIPPED or FLAGGED_STATE
    when: datetime | None
    reason: str  # why it was skipped or flagged ("" for a submitted item)
    skips: int
    revisions: list[Answers]  # oldest first; the last one is the current answer
    aspects: list[str] = field(default_factory=list)  # the pair's rubric aspects, in the form's order


def _as_shown(judgment: Judgment, scores: list[Score], chosen_side: str) -> Answers:
    by_side: dict[str, dict[str, float]] = {"A": {}, "B": {}}
    support: dict[str, float] = {}
    for score in scores:
        if score.value is None:
            continue
        if score.item.startswith(SUPPORT_PREFIX):
            support[score.item] = score.value
        else:
            by_side[side_of(score.response, chosen_side=chosen_side)][score.item] = score.value
    return Answers(
        revision=judgment.revision,
        submitted_at=judgment.submitted_at,
        preference=preference_index(judgment.preference, chosen_side=chosen_side),
        confidence=judgment.confidence,
        comment=judgment.comment or "",
        scores=by_side,
        support=support,
    )


def my_work(session: Session, *, account: Account, limit: int = 200) -> list[WorkItem]:
    """The annotator's submitted, skipped and flagged items, newest first (at most `limit`): the
    active check and three queries, whatever the number of items."""
    require_active(session, account)
    rows = session.exec(
        select(Assignment, Pair.question, Study.name, Pair.rubric)
        .join(Pair, col(Pair.id) == Assignment.pair_id)
        .join(Study, col(Study.id) == Assignment.study_id)
        .where(
            Assignment.annotator_id == account.id,
            or_(
                col(Assignment.status).in_((DONE, FLAGGED)),
                (col(Assignment.status) == PENDING) & (col(Assignment.skip_count) > 0),
            ),
        )
        .order_by(col(Assignment.completed_at).desc().nulls_last(), col(Assignment.position))
        .limit(limit)
    ).all()
    ids = [a.id for a, _, _, _ in rows]
    judgments = list(
        session.exec(
            select(Judgment).where(col(Judgment.assignment_id).in_(ids)).order_by(col(Judgment.revision))
        )
    )
    scores: dict[int, list[Score]] = {}
    if judgments:
        found = session.exec(select(Score).where(col(Score.judgment_id).in_([j.id for j in judgments])))
        for score in found:
            scores.setdefault(score.judgment_id, []).append(score)
    items = []
    for assignment, question, study, rubric in rows:
        if assignment.status == DONE:
            state, reason = SUBMITTED, ""
        elif assignment.status == FLAGGED:
            state, reason = FLAGGED_STATE, assignment.flag_reason or ""
        else:
            state, reason = SKIPPED, assignment.skip_reason or ""
        revisions = [
            _as_shown(j, scores.get(j.id or 0, []), assignment.chosen_side)
            for j in judgments
            if j.assignment_id == assignment.id
        ]
        items.append(
            WorkItem(
                assignment_id=int(assignment.id or 0),
                study_id=assignment.study_id,
                study=study,
                question=question,
                state=state,
                when=assignment.completed_at,
                reason=reason,
                skips=assignment.skip_count,
                revisions=revisions,
                aspects=[str(a.get("aspect", "")) if isinstance(a, dict) else "" for a in rubric or []],
            )
        )
    return items
