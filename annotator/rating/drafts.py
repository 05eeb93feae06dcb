"""The annotator's workspace around one item: server-side drafts, the item to resume after a reload,
and flagging a broken item with only a reason (it leaves the queue and goes to the researcher)."""

import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from annotator import textguard
from annotator.errors import AuthError, LabelError, UserError
from annotator.people.authorization import (
    NOT_YOURS,
    Account,
    check_owner,
    own_assignment,
    require_active,
    require_role,
)
from annotator.rating import crowd
from annotator.store import tallies
from annotator.store.db import lock_row
from annotator.store.models import (
    DONE,
    FLAGGED,
    PENDING,
    Assignment,
    Draft,
    Event,
    Pair,
    User,
    id_of,
    utcnow,
)
from annotator.study import get_study

if TYPE_CHECKING:  # pandas loads with the researcher's table, never for an annotator's draft
    import pandas as pd

#: The draft answers' key of the comment (the questions' keys are their names).
COMMENT = "comment"
#: The longest draft answer kept (a comment); longer text is cut, the draft is never refused.
MAX_TEXT = 20_000


@dataclass(frozen=True)
class DraftView:
    """The unsaved answers on an item: {question key: value} and the profile posts opened so far."""

    assignment_id: int
    answers: dict[str, Any]
    opened_posts: list[int]
    updated_at: datetime


def _clean(answers: dict[str, Any]) -> dict[str, Any]:
    """Only plain JSON values under text keys: finite numbers, short text, booleans, None. A key or a
    text that breaks the app's one input rule (textguard.input_problem: a NUL, a control character) is
    left out of the draft on both engines alike; submitting it gets the rule's message."""
    clean: dict[str, Any] = {}
    for key, value in answers.items():
        name = str(key)[:200]
        if textguard.input_problem(name, name=True) is not None:
            continue
        if isinstance(value, bool | int) or value is None:
            clean[name] = value
        elif isinstance(value, float) and math.isfinite(value):
            clean[name] = value
        elif isinstance(value, str) and textguard.input_problem(value[:MAX_TEXT], limit=MAX_TEXT) is None:
            clean[name] = value[:MAX_TEXT]
    return clean


def save_draft(
    session: Session,
    *,
    assignment_id: int,
    account: Account,
    answers: dict[str, Any] | None,
    opened_posts: list[int] | None = None,
) -> None:
    """Keep the answers given so far on an item (replacing the earlier draft); one short write, an
    upsert on the item's one draft, so two tabs saving at the same moment never collide. `None`
    keeps what the draft holds (answers, or the posts opened)."""
    check_owner(session, assignment_id, account)
    row: dict[str, Any] = {
        "assignment_id": assignment_id,
        "user_id": account.id,
        "answers": _clean(answers or {}),
        "opened_posts": sorted({int(k) for k in (opened_posts or [])}),
        "updated_at": utcnow(),
    }
    kept = (
        ("updated_at",)
        + (("answers",) if answers is not None else ())
        + (("opened_posts",) if opened_posts is not None else ())
    )
    builder = postgresql_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    try:
        session.execute(
            builder(Draft)
            .values(**row)
            .on_conflict_do_update(index_elements=["assignment_id"], set_={k: row[k] for k in kept})
        )
    except IntegrityError:  # the item was unassigned between the check and the write
        raise AuthError(NOT_YOURS) from None


def load_draft(session: Session, *, assignment_id: int, account: Account) -> DraftView | None:
    """The draft of an item, or None."""
    check_owner(session, assignment_id, account)
    draft = session.exec(select(Draft).where(Draft.assignment_id == assignment_id)).first()
    if draft is None:
        return None
    return DraftView(
        assignment_id=assignment_id,
        answers=dict(draft.answers),
        opened_posts=list(draft.opened_posts),
        updated_at=draft.updated_at,
    )


def clear_draft(session: Session, *, assignment_id: int, account: Account) -> None:
    """Forget the draft of an item (after it was submitted, skipped or flagged): one DELETE."""
    check_owner(session, assignment_id, account)
    session.execute(
        delete(Draft)
        .where(col(Draft.assignment_id) == assignment_id)
        .execution_options(synchronize_session=False)
    )


def resume_assignment(session: Session, *, account: Account, study_id: int) -> int | None:
    """The item the annotator last worked on in a study (its draft is the newest), if any: after a
    reload or a crash the same item comes back, pending or being revised."""
    require_active(session, account)
    row = session.exec(
        select(Draft.assignment_id)
        .join(Assignment, col(Assignment.id) == Draft.assignment_id)
        .where(
            Draft.user_id == account.id,
            Assignment.study_id == study_id,
            col(Assignment.status).in_((PENDING, DONE)),
        )
        .order_by(col(Draft.updated_at).desc())
        .limit(1)
    ).first()
    return int(row) if row is not None else None


def last_worked_study(session: Session, *, account: Account) -> int | None:
    """The study of the item the annotator last worked on (its draft is the newest of all their
    drafts), if any: a new page load opens that study, with that item."""
    require_active(session, account)
    row = session.exec(
        select(Assignment.study_id)
        .join(Draft, col(Draft.assignment_id) == Assignment.id)
        .where(Draft.user_id == account.id, col(Assignment.status).in_((PENDING, DONE)))
        .order_by(col(Draft.updated_at).desc())
        .limit(1)
    ).first()
    return int(row) if row is not None else None


def flag_item(session: Session, *, assignment_id: int, account: Account, reason: str) -> None:
    """Flag an item as broken with only a reason: it leaves the queue (status "flagged") and is listed
    for the researcher (:func:`flagged_items`); no rating is needed."""
    reason = reason.strip()
    textguard.check_input(reason, "The reason for the problem flag")
    if not reason:
        raise LabelError("Please say what is wrong with the item")
    assignment = own_assignment(session, assignment_id, account)
    crowd.enforce_time(session, account=account, study_id=assignment.study_id)
    lock_row(session, Assignment, id_of(assignment), "revisions")  # the status read, then written
    session.refresh(assignment)
    if assignment.status == DONE:
        raise UserError("this item is already submitted; use the comment of a revision instead")
    if assignment.status != FLAGGED:
        tallies.add(session, assignment.study_id, {(assignment.annotator_id, "flagged", 0): (1, 0.0)})
    assignment.status = FLAGGED
    assignment.flag_reason = reason[:MAX_TEXT]
    assignment.shown_at = None
    assignment.completed_at = utcnow()
    session.add(assignment)
    draft = session.exec(select(Draft).where(Draft.assignment_id == assignment_id)).first()
    if draft is not None:
        session.delete(draft)
    session.add(Event(user_id=account.id, action="flag", detail={"assignment": assignment.id}))


FLAGGED_COLUMNS = ["pair_id", "annotator", "reason", "flagged_at"]


def flagged_items(session: Session, *, study: str, account: Account) -> "pd.DataFrame":
    """Items annotators flagged as broken (for the researcher): pair_id, annotator, reason, flagged_at."""
    import pandas as pd

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
