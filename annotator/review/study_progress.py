"""Study progress for the researcher pages (a service): study list, progress per annotator and pair,
stalled items, judgments over time, the data version that keys the Validation cache, reassignment."""

import json
from datetime import timedelta
from typing import Any

import pandas as pd
from sqlalchemy import and_, case, func
from sqlalchemy import select as sql_select
from sqlmodel import Session, col, select

from annotator.errors import UserError
from annotator.people.authorization import Account, record_event, require_role
from annotator.store import tallies
from annotator.store.models import (
    PENDING,
    Adjudication,
    Assignment,
    Event,
    Judgment,
    ModelPrediction,
    Pair,
    Study,
    Tally,
    User,
    id_of,
    utcnow,
)
from annotator.study import get_study, study_config


def _researchers_study(session: Session, study: str, account: Account) -> Study:
    """The study; only a researcher (or SYSTEM) may read its numbers."""
    require_role(session, account, "researcher")
    return get_study(session, study)


def study_names(session: Session) -> list[str]:
    """Every study in use (archived ones are left out), by name."""
    return list(session.exec(select(Study.name).where(col(Study.archived_at).is_(None)).order_by(Study.name)))


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


def progress_version(session: Session, study: str, *, account: Account) -> tuple[Any, ...]:
    """Changes whenever the Progress page's counts may: a judgment saved, an assignment added or
    removed, anything logged (flags, skips, reassignments, account changes: every such write logs an
    event) or the study's settings changed; a few reads of whole tables' counts and newest ids, for
    caching the counts that read every assignment of the study."""
    study_row = _researchers_study(session, study, account)
    judged = session.exec(select(func.count(col(Judgment.id)), func.max(Judgment.id))).one()
    assigned = session.exec(select(func.count(col(Assignment.id)), func.max(Assignment.id))).one()
    logged = session.exec(select(func.max(Event.id))).one()
    settings = json.dumps(study_row.config, sort_keys=True, default=str)
    return (*(int(n or 0) for n in (*judged, *assigned, logged)), settings)


PROGRESS_COLUMNS = [
    "annotator",
    "active",
    "assigned",
    "done",
    "flagged",
    "skipped",
    "median_time_s",
    "open",
    "items_per_hour",
]


def annotator_progress(session: Session, *, study: str, account: Account) -> pd.DataFrame:
    """Per annotator: assigned, done, flagged, skipped, open, median time on task and items per hour of
    work, read from the study's tallies (O(annotators x bins of time), whatever the study's size). The
    median is read from bins of time on task whose edges are :data:`tallies.TIME_RATIO` apart (within 1%)."""
    study_id = id_of(_researchers_study(session, study, account))
    tallies.ensure(session)
    rows = session.execute(
        sql_select(
            col(User.username),
            col(User.active),
            col(Tally.kind),
            col(Tally.bucket),
            col(Tally.n),
            col(Tally.total),
        )
        .join(User, col(User.id) == Tally.annotator_id)
        .where(col(Tally.study_id) == study_id, col(Tally.kind).in_([*tallies.SCALAR_KINDS, "time"]))
    ).all()
    people: dict[str, dict[str, Any]] = {}
    bins: dict[str, dict[int, int]] = {}
    for name, active, kind, bucket, n, total in rows:
        row = people.setdefault(str(name), {"annotator": str(name), "active": bool(active)})
        if kind == "time":
            bins.setdefault(str(name), {})[int(bucket)] = int(n)
        elif kind == "timed":
            row["work_s"] = float(total)
        else:
            row[kind] = int(n)
    table = pd.DataFrame(
        [row for row in people.values() if row.get("assigned", 0) > 0],
        columns=["annotator", "active", "assigned", "done", "flagged", "skipped", "work_s"],
    )
    if table.empty:
        return pd.DataFrame(columns=PROGRESS_COLUMNS)
    table = table.fillna({"done": 0, "flagged": 0, "skipped": 0, "work_s": 0.0})
    table = table.sort_values("annotator", kind="stable").reset_index(drop=True)
    for column in ("assigned", "done", "flagged", "skipped"):
        table[column] = table[column].astype(int)
    table["median_time_s"] = [tallies.median_of(bins.get(name, {})) for name in table["annotator"]]
    table["open"] = table["assigned"] - table["done"] - table["flagged"]
    hours = (table["work_s"].astype(float) / 3600).where(table["work_s"] > 0)
    table["items_per_hour"] = table["done"] / hours
    return table[PROGRESS_COLUMNS]


def pair_counts(session: Session, *, study: str, account: Account) -> dict[str, int]:
    """The study's pairs and how many are complete, counted in the database: every assignment done
    and at least one. In a crowd study (items assigned as workers arrive) a main pair also needs the
    study's overlap of judgments; a pair nobody has yet is never complete. Each pair's assignments are
    counted in the pair index, one lookup per pair, once (a materialized CTE)."""
    study_id = id_of(_researchers_study(session, study, account))
    config = study_config(session, study_id)
    floor = config.analysis.overlap if config.crowd.platform else 1
    per_pair = (
        sql_select(
            col(Pair.n_done).label("done"),
            (col(Pair.control) != "").label("control"),
            sql_select(func.count())
            .select_from(Assignment)
            .where(col(Assignment.pair_id) == col(Pair.id))  # a pair's assignments are all in its study
            .correlate(Pair)
            .scalar_subquery()
            .label("assigned"),
        )
        .where(col(Pair.study_id) == study_id)
        .cte("per_pair")
        .prefix_with("MATERIALIZED")
    )
    assigned = per_pair.c.assigned
    needed = case(
        (assigned > floor, assigned),
        (and_(per_pair.c.control, assigned >= 1), assigned),
        else_=floor,
    )
    complete = func.coalesce(func.sum(case((per_pair.c.done >= needed, 1), else_=0)), 0)
    pairs, done = session.execute(sql_select(func.count(), complete).select_from(per_pair)).one()
    return {"pairs": int(pairs), "complete": int(done)}


def pair_completion(
    session: Session, *, study: str, account: Account, offset: int = 0, limit: int | None = None
) -> pd.DataFrame:
    """Per pair (in import order): assigned and completed judgments; `limit` rows from `offset` (a page
    of the table), or every pair. The assignments are counted for the page's pairs only."""
    study_id = id_of(_researchers_study(session, study, account))
    page = (
        sql_select(col(Pair.id)).where(col(Pair.study_id) == study_id).order_by(col(Pair.id)).offset(offset)
    )
    if limit is not None:
        page = page.limit(limit)
    shown = page.subquery()
    assigned = (
        sql_select(col(Assignment.pair_id).label("pair_id"), func.count().label("n"))
        .where(col(Assignment.study_id) == study_id, col(Assignment.pair_id).in_(sql_select(shown.c.id)))
        .group_by(col(Assignment.pair_id))
        .subquery()
    )
    query = (
        sql_select(
            col(Pair.external_id), col(Pair.category), func.coalesce(assigned.c.n, 0), col(Pair.n_done)
        )
        .select_from(Pair)
        .join(shown, shown.c.id == Pair.id)
        .outerjoin(assigned, assigned.c.pair_id == Pair.id)
        .order_by(col(Pair.id))
    )
    rows = session.execute(query).all()
    return pd.DataFrame([tuple(row) for row in rows], columns=["pair_id", "category", "assigned", "done"])


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


TIMELINE_BINS = 200  # time bins of the judgments-over-time chart, whatever the study's length
#: The chart counts per minute while the study's judgments span at most this many minutes, else per hour.
MINUTE_SPAN = 24 * 60


def judgments_over_time(
    session: Session, *, study: str, account: Account, bins: int = TIMELINE_BINS
) -> pd.DataFrame:
    """Judgments submitted (revisions included) per annotator and time bin, read from the study's
    tallies per minute (per hour when the judgments span more than :data:`MINUTE_SPAN` minutes): at most
    `bins` equal bins from the first to the last minute (hour). Columns submitted_at (the bin's end, UTC),
    annotator, judgments (submitted in that bin)."""
    study_id = id_of(_researchers_study(session, study, account))
    tallies.ensure(session)

    def span(kind: str) -> tuple[Any, Any]:
        of_kind = (col(Tally.study_id) == study_id, col(Tally.kind) == kind, col(Tally.n) > 0)
        return session.execute(
            sql_select(func.min(col(Tally.bucket)), func.max(col(Tally.bucket))).where(*of_kind)
        ).one()

    kind, step = "minute", 60
    first, last = span(kind)
    if first is None:
        return pd.DataFrame(columns=["submitted_at", "annotator", "judgments"])
    if int(last) - int(first) + 1 > MINUTE_SPAN:
        kind, step = "hour", 3600
        first, last = span(kind)
    width = max(1, -(-(int(last) - int(first) + 1) // bins))  # steps per bin, rounded up
    bucket = ((col(Tally.bucket) - int(first)) // width).label("bucket")
    rows = session.execute(
        sql_select(bucket, col(User.username), func.sum(col(Tally.n)))
        .select_from(Tally)
        .join(User, col(User.id) == Tally.annotator_id)
        .where(col(Tally.study_id) == study_id, col(Tally.kind) == kind, col(Tally.n) != 0)
        .group_by(bucket, col(User.username))
    ).all()
    frame = pd.DataFrame([tuple(row) for row in rows], columns=["bucket", "annotator", "judgments"])
    frame["judgments"] = frame["judgments"].astype("int64")
    ends = (int(first) + (frame["bucket"].astype("int64") + 1) * width).clip(upper=int(last) + 1) * step
    frame["submitted_at"] = pd.to_datetime(ends, unit="s")
    return frame[["submitted_at", "annotator", "judgments"]]


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
    if moved:
        session.flush()
        tallies.recount(session, id_of(study_row), [id_of(source), *(id_of(u) for u in others)])
    record_event(session, account, "reassign", {"study": study, "from": username, "moved": moved})
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
    """Per annotator, the running count of judgments at each bin's end (from :func:`judgments_over_time`):
    columns submitted_at, annotator, judgments."""
    out = timeline.sort_values(["annotator", "submitted_at"], kind="stable").reset_index(drop=True)
    out["judgments"] = out.groupby("annotator")["judgments"].cumsum()
    return out.sort_values("submitted_at", kind="stable").reset_index(drop=True)


def study_summary(people: pd.DataFrame, pairs: dict[str, int], stalled: pd.DataFrame) -> dict[str, int]:
    """The headline numbers of the Progress page: pairs, judgments done and assigned, complete pairs,
    stalled and flagged items (`pairs` from :func:`pair_counts`)."""
    return {
        "pairs": pairs["pairs"],
        "done": int(people["done"].sum()) if len(people) else 0,
        "assigned": int(people["assigned"].sum()) if len(people) else 0,
        "complete": pairs["complete"],
        "stalled": len(stalled),
        "flagged": int(people["flagged"].sum()) if "flagged" in people and len(people) else 0,
    }
