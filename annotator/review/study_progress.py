"""Study progress for the researcher pages (a service): study list, progress per annotator and pair,
stalled items, judgments over time, the data version that keys the Validation cache, reassignment."""

from datetime import timedelta

import pandas as pd
from sqlalchemy import func
from sqlalchemy import select as sql_select
from sqlmodel import Session, col, select

from annotator.errors import UserError
from annotator.people.authorization import Account, require_role
from annotator.store.models import (
    PENDING,
    Adjudication,
    Assignment,
    Event,
    Judgment,
    ModelPrediction,
    Pair,
    Study,
    User,
    id_of,
    utcnow,
)
from annotator.study import get_study


def _researchers_study(session: Session, study: str, account: Account) -> Study:
    """The study; only a researcher (or SYSTEM) may read its numbers."""
    require_role(session, account, "researcher")
    return get_study(session, study)


def study_names(session: Session) -> list[str]:
    """Every study, by name."""
    return list(session.exec(select(Study.name).order_by(Study.name)))


def data_version(session: Session, study: str, *, account: Account) -> tuple[int, ...]:
    """Changes whenever a judgment is saved (judgments are append-only: count and newest id), a decision
    is recorded or model predictions or judge ratings are imported (newest ids: the report compares
    models and judges with people), for caching.

    Read from whole tables (cheap: no join), so a change in another study also counts as a change;
    that only costs a recomputation.
    """
    _researchers_study(session, study, account)
    count, newest = session.exec(select(func.count(col(Judgment.id)), func.max(Judgment.id))).one()
    decided = session.exec(select(func.max(Adjudication.id))).one()
    predicted = session.exec(select(func.max(ModelPrediction.id))).one()
    # LLM judges: every import that writes (new or replaced ratings) logs an event
    judged = session.exec(select(func.max(Event.id)).where(col(Event.action) == "judges_import")).one()
    return int(count or 0), int(newest or 0), int(decided or 0), int(predicted or 0), int(judged or 0)


def annotator_progress(session: Session, *, study: str, account: Account) -> pd.DataFrame:
    """Per annotator: assigned, done, skipped, open, items per hour of work, median time on task."""
    study_id = _researchers_study(session, study, account).id
    rows = session.execute(
        sql_select(
            col(User.username),
            col(User.active),
            col(Assignment.status),
            col(Assignment.skip_count),
            col(Judgment.time_on_task_s),
        )
        .join(User, col(User.id) == Assignment.annotator_id)
        .outerjoin(Judgment, col(Judgment.id) == Assignment.current_judgment_id)
        .where(col(Assignment.study_id) == study_id)
    ).all()
    frame = pd.DataFrame(rows, columns=["annotator", "active", "status", "skip_count", "time_s"])
    if frame.empty:
        return pd.DataFrame(
            columns=[
                "annotator",
                "active",
                "assigned",
                "done",
                "skipped",
                "flagged",
                "open",
                "items_per_hour",
                "median_time_s",
            ]
        )
    frame["time_s"] = pd.to_numeric(frame["time_s"], errors="coerce").astype(float)
    grouped = frame.groupby("annotator")
    table = pd.DataFrame(
        {
            "active": grouped["active"].first(),
            "assigned": grouped.size(),
            "done": grouped["status"].apply(lambda s: int((s == "done").sum())),
            "flagged": grouped["status"].apply(lambda s: int((s == "flagged").sum())),
            "skipped": grouped["skip_count"].apply(lambda s: int((s > 0).sum())),
            "median_time_s": grouped["time_s"].median(),
            "work_s": grouped["time_s"].sum(),
        }
    )
    table["open"] = table["assigned"] - table["done"] - table["flagged"]
    hours = (table["work_s"] / 3600).where(table["work_s"] > 0)
    table["items_per_hour"] = table["done"] / hours
    return table.drop(columns="work_s").reset_index()


def pair_completion(session: Session, *, study: str, account: Account) -> pd.DataFrame:
    """Per pair: assigned and completed judgments."""
    study_id = _researchers_study(session, study, account).id
    rows = session.exec(
        select(Pair.external_id, Pair.category, func.count(col(Assignment.id)), Pair.n_done)
        .outerjoin(Assignment, col(Assignment.pair_id) == Pair.id)
        .where(Pair.study_id == study_id)
        .group_by(col(Pair.id))
    ).all()
    return pd.DataFrame(rows, columns=["pair_id", "category", "assigned", "done"])


def stalled_assignments(
    session: Session, *, study: str, hours: float = 24.0, account: Account
) -> pd.DataFrame:
    """Open items shown to an annotator more than `hours` ago and never submitted."""
    study_id = _researchers_study(session, study, account).id
    cutoff = utcnow() - timedelta(hours=hours)
    rows = session.exec(
        select(User.username, Pair.external_id, Assignment.shown_at)
        .join(User, col(User.id) == Assignment.annotator_id)
        .join(Pair, col(Pair.id) == Assignment.pair_id)
        .where(
            Assignment.study_id == study_id, Assignment.status == PENDING, col(Assignment.shown_at) < cutoff
        )
    ).all()
    return pd.DataFrame(rows, columns=["annotator", "pair_id", "shown_at"])


def judgments_over_time(session: Session, *, study: str, account: Account) -> pd.DataFrame:
    """Every judgment's submission time (revisions included), for the activity plot."""
    study_id = _researchers_study(session, study, account).id
    rows = session.exec(
        select(Judgment.submitted_at, User.username)
        .join(Assignment, col(Assignment.id) == Judgment.assignment_id)
        .join(User, col(User.id) == Assignment.annotator_id)
        .where(Assignment.study_id == study_id)
    ).all()
    return pd.DataFrame(rows, columns=["submitted_at", "annotator"])


def reassign_open(session: Session, *, account: Account, study: str, username: str) -> int:
    """Move an annotator's open items to the least-loaded other active annotators not on the pair."""
    require_role(session, account, "researcher")
    study_row = get_study(session, study)
    source = session.exec(select(User).where(User.username == username)).first()
    if source is None:
        raise UserError(f"no user called {username!r}")
    others = list(
        session.exec(
            select(User).where(User.role == "annotator", User.active == True, User.id != source.id)  # noqa: E712
        )
    )
    open_items = list(
        session.exec(
            select(Assignment).where(
                Assignment.study_id == study_row.id,
                Assignment.annotator_id == source.id,
                Assignment.status == PENDING,
            )
        )
    )
    if not open_items:
        return 0
    taken = {
        (a.pair_id, a.annotator_id)
        for a in session.exec(select(Assignment).where(Assignment.study_id == study_row.id))
    }
    load = {u.id: sum(1 for _, uid in taken if uid == u.id) for u in others}
    moved = 0
    for item in open_items:
        free = [u for u in others if (item.pair_id, u.id) not in taken]
        if not free:
            continue
        target = min(free, key=lambda u: (load[u.id], u.username))
        last = session.exec(
            select(func.max(Assignment.position)).where(Assignment.annotator_id == target.id)
        ).one()
        item.annotator_id = id_of(target)
        item.position = int(last or 0) + 1
        item.shown_at = None
        session.add(item)
        taken.add((item.pair_id, id_of(target)))
        load[id_of(target)] += 1
        moved += 1
    session.add(
        Event(
            user_id=account.id, action="reassign", detail={"study": study, "from": username, "moved": moved}
        )
    )
    return moved


def filter_options(session: Session, *, study: str, account: Account) -> tuple[list[str], list[str]]:
    """The categories of a study's pairs and the annotators with items in it, for the report filters."""
    study_id = _researchers_study(session, study, account).id
    categories = session.exec(select(Pair.category).where(Pair.study_id == study_id).distinct()).all()
    names = session.exec(
        select(User.username)
        .join(Assignment, col(Assignment.annotator_id) == User.id)
        .where(Assignment.study_id == study_id)
        .distinct()
    ).all()
    return sorted(c for c in categories if c), sorted(names)


def cumulative_judgments(timeline: pd.DataFrame) -> pd.DataFrame:
    """Per annotator, the running count of judgments over time (from :func:`judgments_over_time`):
    columns submitted_at, annotator, judgments."""
    out = timeline.sort_values("submitted_at", kind="stable").assign(judgments=1)
    out["judgments"] = out.groupby("annotator")["judgments"].cumsum()
    return out.reset_index(drop=True)


def study_summary(people: pd.DataFrame, pairs: pd.DataFrame, stalled: pd.DataFrame) -> dict[str, int]:
    """The headline numbers of the Progress page: pairs, judgments done and assigned, complete pairs,
    stalled and flagged items."""
    return {
        "pairs": len(pairs),
        "done": int(people["done"].sum()) if len(people) else 0,
        "assigned": int(people["assigned"].sum()) if len(people) else 0,
        "complete": int((pairs["done"] >= pairs["assigned"]).sum()) if len(pairs) else 0,
        "stalled": len(stalled),
        "flagged": int(people["flagged"].sum()) if "flagged" in people and len(people) else 0,
    }
