"""Undoing set-up work: unassign items not yet started, archive / restore a study, delete an unrated one.

Each is one serialized step on both engines and leaves an event in the audit log.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import delete, func
from sqlmodel import Session, col, select

from annotator.errors import UserError
from annotator.people.authorization import Account, record_event, require_role
from annotator.store import tallies
from annotator.store.db import lock_study
from annotator.store.models import (
    PENDING,
    Adjudication,
    Assignment,
    CrowdLink,
    Draft,
    JudgeRating,
    Judgment,
    ModelPrediction,
    OwnerJudgment,
    OwnerLink,
    Pair,
    Study,
    Tally,
    TrainingAnswer,
    User,
    id_of,
    utcnow,
)
from annotator.study import get_study


@dataclass(frozen=True)
class UnassignSummary:
    """What an unassign removed, and the started items it kept (annotator, pair id, why)."""

    study: str
    removed: int
    kept: list[tuple[str, str, str]] = field(default_factory=list)

    def __str__(self) -> str:
        text = f"study {self.study!r}: {self.removed} assignments not yet started removed"
        if self.kept:
            text += f"; {len(self.kept)} started kept"
        return text


def _lock_rows(session: Session, study_id: int) -> None:
    """PostgreSQL: row locks on the study's assignments (a concurrent submit or first draft waits for
    them, and the rows a concurrent one wrote are read after it commits). SQLite: the study lock
    already holds the database's write lock."""
    if session.get_bind().dialect.name != "sqlite":
        session.execute(select(col(Assignment.id)).where(Assignment.study_id == study_id).with_for_update())


def _started(session: Session, study_id: int) -> tuple[set[int], set[int], dict[int, str]]:
    """The study's assignments with a judgment, those with a draft, and every assignment's status."""
    judged = session.exec(
        select(Judgment.assignment_id)
        .join(Assignment, col(Assignment.id) == Judgment.assignment_id)
        .where(Assignment.study_id == study_id)
    ).all()
    drafted = session.exec(
        select(Draft.assignment_id)
        .join(Assignment, col(Assignment.id) == Draft.assignment_id)
        .where(Assignment.study_id == study_id)
    ).all()
    status = session.exec(
        select(Assignment.id, Assignment.status).where(Assignment.study_id == study_id)
    ).all()
    return set(judged), set(drafted), {int(i or 0): s for i, s in status}


def unassign(
    session: Session, *, study: str, annotators: Sequence[str] | None = None, account: Account
) -> UnassignSummary:
    """Remove the named annotators' items of `study` (all annotators' without names) that are not
    started: pending, with no judgment and no draft. Started items are kept and listed.

    One serialized step: the study is locked first, the candidate rows are locked, and only then is
    each checked for a judgment or a draft, so an item started concurrently is never removed.
    """
    require_role(session, account, "researcher")
    study_row = get_study(session, study)
    study_id = id_of(study_row)
    lock_study(session, study_id)
    query = (
        select(Assignment.id, User.username, Pair.external_id, Assignment.status)
        .join(User, col(User.id) == Assignment.annotator_id)
        .join(Pair, col(Pair.id) == Assignment.pair_id)
        .where(Assignment.study_id == study_id)
    )
    if annotators is not None:
        names = list(dict.fromkeys(annotators))
        known = set(session.exec(select(User.username).where(col(User.username).in_(names))))
        missing = [name for name in names if name not in known]
        if missing:
            raise UserError(f"no user called {', '.join(repr(n) for n in missing)}")
        query = query.where(col(User.username).in_(names))
    _lock_rows(session, study_id)
    rows = session.exec(query.order_by(User.username, col(Assignment.position))).all()
    judged, drafted, status = _started(session, study_id)
    removable, kept = [], []
    for assignment_id, username, pair, _ in rows:
        key = int(assignment_id or 0)
        if key in judged or status.get(key) != PENDING:
            kept.append((username, pair, "judged" if key in judged else str(status.get(key))))
        elif key in drafted:
            kept.append((username, pair, "draft"))
        else:
            removable.append(key)
    for start in range(0, len(removable), 500):
        session.execute(delete(Assignment).where(col(Assignment.id).in_(removable[start : start + 500])))
    if removable:
        tallies.recount(session, study_id)
    record_event(
        session,
        account,
        "unassign",
        {
            "study": study,
            "annotators": list(annotators) if annotators is not None else "all",
            "removed": len(removable),
            "kept": len(kept),
        },
    )
    return UnassignSummary(study, len(removable), kept)


def unassign_preview(
    session: Session, *, study: str, annotators: Sequence[str] | None = None, account: Account
) -> UnassignSummary:
    """What :func:`unassign` would do now, without doing it (`session` ends rolled back)."""
    try:
        return unassign(session, study=study, annotators=annotators, account=account)
    finally:
        session.rollback()


def archived_studies(session: Session) -> list[str]:
    """The names of the archived studies."""
    return list(
        session.exec(select(Study.name).where(col(Study.archived_at).is_not(None)).order_by(Study.name))
    )


def set_archived(session: Session, *, study: str, archived: bool, account: Account) -> str:
    """Archive a study (hidden from every picker; nothing deleted) or restore it; a line saying so."""
    require_role(session, account, "researcher")
    study_row = get_study(session, study)
    lock_study(session, id_of(study_row))
    session.refresh(study_row)
    if (study_row.archived_at is not None) == archived:
        return f"study {study!r} is already {'archived' if archived else 'in use'}"
    study_row.archived_at = utcnow() if archived else None
    session.add(study_row)
    action = "study_archive" if archived else "study_restore"
    record_event(session, account, action, {"study": study})
    done = "archived: hidden from every picker, its data kept" if archived else "restored"
    return f"study {study!r} {done}"


def _work(session: Session, study_id: int) -> dict[str, int]:
    """What people have done in a study that a delete would lose (kind -> count, zero kinds left out)."""
    counts = {
        "judgments": select(func.count())
        .select_from(Judgment)
        .join(Assignment, col(Assignment.id) == Judgment.assignment_id)
        .where(Assignment.study_id == study_id),
        "owner judgments": select(func.count()).where(OwnerJudgment.study_id == study_id),
        "training answers": select(func.count()).where(TrainingAnswer.study_id == study_id),
        "adjudications": select(func.count())
        .select_from(Adjudication)
        .join(Pair, col(Pair.id) == Adjudication.pair_id)
        .where(Pair.study_id == study_id),
    }
    found = {kind: int(session.exec(query).one()) for kind, query in counts.items()}
    return {kind: n for kind, n in found.items() if n}


def delete_study(session: Session, *, study: str, confirm: str, account: Account) -> str:
    """Delete a study nobody has rated: its pairs, assignments, drafts, links and imported model
    ratings. `confirm` must be the study's name, typed again. A study with judgments (or owner
    judgments, training answers, adjudications) is refused: archive it instead."""
    require_role(session, account, "researcher")
    study_row = get_study(session, study)
    if confirm != study:
        raise UserError(f"type the study's name {study!r} exactly to delete it; nothing was deleted")
    study_id = id_of(study_row)
    lock_study(session, study_id)
    _lock_rows(session, study_id)
    work = _work(session, study_id)
    if work:
        done = ", ".join(f"{n} {kind}" for kind, n in work.items())
        raise UserError(f"study {study!r} has {done}; it cannot be deleted (archive it instead)")
    in_study = select(Assignment.id).where(Assignment.study_id == study_id)
    session.execute(delete(Draft).where(col(Draft.assignment_id).in_(in_study)))
    for table in (Assignment, ModelPrediction, JudgeRating, CrowdLink, OwnerLink):
        session.execute(delete(table).where(col(table.study_id) == study_id))
    # control pairs first: they point at main pairs (control_of)
    session.execute(delete(Pair).where(col(Pair.study_id) == study_id, col(Pair.control) != ""))
    session.execute(delete(Pair).where(col(Pair.study_id) == study_id))
    session.execute(delete(Tally).where(col(Tally.study_id) == study_id))
    session.execute(delete(Study).where(col(Study.id) == study_id))
    record_event(session, account, "study_delete", {"study": study})
    return f"study {study!r} deleted"
