"""The annotator's workspace around one item: server-side drafts, the item to resume after a reload,
and flagging a broken item with only a reason (it leaves the queue and goes to the researcher)."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import delete, update
from sqlmodel import Session, col, select

from annotator.accounts import Account, require_role
from annotator.errors import AuthError, LabelError, UserError
from annotator.store.models import DONE, FLAGGED, PENDING, Assignment, Draft, Event, Pair, User, utcnow
from annotator.study import get_study

#: The longest draft answer kept (a comment); longer text is cut, the draft is never refused.
MAX_TEXT = 20_000


@dataclass(frozen=True)
class DraftView:
    """The unsaved answers on an item: {question key: value} and the profile posts opened so far."""

    assignment_id: int
    answers: dict[str, Any]
    opened_posts: list[int]
    updated_at: datetime


def _own(session: Session, assignment_id: int, user_id: int) -> Assignment:
    assignment = session.get(Assignment, assignment_id)
    if assignment is None or assignment.annotator_id != user_id:
        raise AuthError("this item is not in your queue")
    return assignment


def _check_own(session: Session, assignment_id: int, user_id: int) -> None:
    """Refuse an item that is not the user's (one indexed read of one column)."""
    owner = session.exec(select(Assignment.annotator_id).where(col(Assignment.id) == assignment_id)).first()
    if owner is None or owner != user_id:
        raise AuthError("this item is not in your queue")


def _clean(answers: dict[str, Any]) -> dict[str, Any]:
    """Only plain JSON values under text keys: numbers, short text, booleans, None."""
    clean: dict[str, Any] = {}
    for key, value in answers.items():
        if isinstance(value, bool | int | float) or value is None:
            clean[str(key)[:200]] = value
        elif isinstance(value, str):
            clean[str(key)[:200]] = value[:MAX_TEXT]
    return clean


def save_draft(
    session: Session,
    *,
    assignment_id: int,
    user_id: int,
    answers: dict[str, Any],
    opened_posts: list[int] | None = None,
) -> None:
    """Keep the answers given so far on an item (replacing the earlier draft): an ownership read and
    one UPDATE (an INSERT for the item's first draft), without loading the draft (it is saved on
    every answer)."""
    _check_own(session, assignment_id, user_id)
    values: dict[str, Any] = {"answers": _clean(answers), "updated_at": utcnow()}
    if opened_posts is not None:
        values["opened_posts"] = sorted({int(k) for k in opened_posts})
    updated = session.execute(
        update(Draft)
        .where(col(Draft.assignment_id) == assignment_id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if not updated.rowcount:  # type: ignore[attr-defined]
        draft = Draft(
            assignment_id=assignment_id, user_id=user_id, answers=values["answers"], opened_posts=[]
        )
        draft.opened_posts = values.get("opened_posts", [])
        draft.updated_at = values["updated_at"]
        session.add(draft)


def load_draft(session: Session, *, assignment_id: int, user_id: int) -> DraftView | None:
    """The draft of an item, or None."""
    _check_own(session, assignment_id, user_id)
    draft = session.exec(select(Draft).where(Draft.assignment_id == assignment_id)).first()
    if draft is None:
        return None
    return DraftView(
        assignment_id=assignment_id,
        answers=dict(draft.answers),
        opened_posts=list(draft.opened_posts),
        updated_at=draft.updated_at,
    )


def clear_draft(session: Session, *, assignment_id: int, user_id: int) -> None:
    """Forget the draft of an item (after it was submitted, skipped or flagged): one DELETE."""
    _check_own(session, assignment_id, user_id)
    session.execute(
        delete(Draft)
        .where(col(Draft.assignment_id) == assignment_id)
        .execution_options(synchronize_session=False)
    )


def resume_assignment(session: Session, *, user_id: int, study_id: int) -> int | None:
    """The item the annotator last worked on in a study (its draft is the newest), if any: after a
    reload or a crash the same item comes back, pending or being revised."""
    row = session.exec(
        select(Draft.assignment_id)
        .join(Assignment, col(Assignment.id) == Draft.assignment_id)
        .where(
            Draft.user_id == user_id,
            Assignment.study_id == study_id,
            col(Assignment.status).in_((PENDING, DONE)),
        )
        .order_by(col(Draft.updated_at).desc())
        .limit(1)
    ).first()
    return int(row) if row is not None else None


def flag_item(session: Session, *, assignment_id: int, user_id: int, reason: str) -> None:
    """Flag an item as broken with only a reason: it leaves the queue (status "flagged") and is listed
    for the researcher (:func:`flagged_items`); no rating is needed."""
    reason = reason.strip()
    if not reason:
        raise LabelError("Please say what is wrong with the item")
    assignment = _own(session, assignment_id, user_id)
    if assignment.status == DONE:
        raise UserError("this item is already submitted; use the comment of a revision instead")
    assignment.status = FLAGGED
    assignment.flag_reason = reason[:MAX_TEXT]
    assignment.shown_at = None
    assignment.completed_at = utcnow()
    session.add(assignment)
    draft = session.exec(select(Draft).where(Draft.assignment_id == assignment_id)).first()
    if draft is not None:
        session.delete(draft)
    session.add(Event(user_id=user_id, action="flag", detail={"assignment": assignment.id}))


FLAGGED_COLUMNS = ["pair_id", "annotator", "reason", "flagged_at"]


def flagged_items(session: Session, *, study: str, account: Account) -> pd.DataFrame:
    """Items annotators flagged as broken (for the researcher): pair_id, annotator, reason, flagged_at."""
    require_role(session, account, "researcher", "adjudicator")
    study_row = get_study(session, study)
    rows = session.exec(
        select(Pair.external_id, User.username, Assignment.flag_reason, Assignment.completed_at)
        .join(Pair, col(Pair.id) == Assignment.pair_id)
        .join(User, col(User.id) == Assignment.annotator_id)
        .where(Assignment.study_id == study_row.id, Assignment.status == FLAGGED)
        .order_by(col(Pair.external_id))
    ).all()
    return pd.DataFrame([tuple(r) for r in rows], columns=FLAGGED_COLUMNS)
