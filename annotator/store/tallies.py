"""The Progress page's counts, kept per study and annotator in the `tally` table in the same transaction
as every write they count, so that reading them costs O(annotators + bins), not O(judgments).

Kinds (one row per study, annotator, kind and bucket; `n` a count, `total` a sum):
- ``assigned``, ``done``, ``flagged``, ``skipped``: the annotator's assignments, those done, flagged,
  and skipped at least once (bucket 0). The ``assigned`` row is also the annotator's lock: every write
  of an annotator's tallies touches it first (a row lock on PostgreSQL, the write lock on SQLite).
- ``timed``: the current judgments of the annotator's items (n) and their time on task (total, s).
- ``time``: the same judgments per bin of time on task (bucket :func:`time_bin`), for the median.
- ``minute``, ``hour``: judgments submitted (revisions included) per minute and per hour since 1970
  (UTC), for the judgments-over-time chart.

Every write that changes an assignment or adds a judgment applies its change here (:func:`add`,
:func:`submitted`, :func:`assigned`) or recounts the annotators it touched (:func:`recount`).
Writes made outside the tool (bulk loads, hand edits) are caught by :func:`ensure` where the rows'
totals show them, and repaired by :func:`rebuild` (also `annotator recount`).
"""

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, Integer, cast, func, update
from sqlalchemy import select as sql_select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, col, select

from annotator.store.models import DONE, FLAGGED, Assignment, Judgment, Study, Tally

#: Ratio between the edges of two neighbouring bins of time on task: the median is read to this
#: resolution (the bin's geometric middle is within 1% of every time in the bin).
TIME_RATIO = 1.02
SCALAR_KINDS = ("assigned", "done", "flagged", "skipped", "timed")

Key = tuple[int, str, int]  # annotator, kind, bucket
Delta = dict[Key, tuple[int, float]]


def time_bin(seconds: float) -> int:
    """The bin of a time on task: 0 below one second, then k for [TIME_RATIO^(k-1), TIME_RATIO^k)."""
    if seconds < 1.0:
        return 0
    return 1 + int(math.floor(math.log(seconds) / math.log(TIME_RATIO)))


def bin_seconds(bucket: int) -> float:
    """The time a bin stands for: its geometric middle (0.5 s for the bin under one second)."""
    if bucket <= 0:
        return 0.5
    return float(TIME_RATIO ** (bucket - 0.5))


def median_of(counts: Mapping[int, int]) -> float:
    """The median time of a histogram (bin -> judgments): the middle bin's time, or the mean of the two
    middle bins' times for an even count; NaN when empty."""
    size = sum(counts.values())
    if size <= 0:
        return math.nan
    ranks = [(size + 1) // 2, (size + 2) // 2]  # 1-based ranks of the one or two middle judgments
    found: list[float] = []
    seen = 0
    for bucket in sorted(counts):
        seen += counts[bucket]
        while ranks and ranks[0] <= seen:
            found.append(bin_seconds(bucket))
            ranks.pop(0)
    return sum(found) / len(found)


def epoch_seconds(session: Session, column: Any) -> Any:
    """A datetime column as whole seconds since 1970 (UTC), in the engine's own SQL."""
    if session.get_bind().dialect.name == "sqlite":
        return cast(func.strftime("%s", column), Integer)
    return cast(func.floor(func.extract("epoch", column)), BigInteger)


def _epoch(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp())


def _insert(session: Session) -> Any:
    return sqlite_insert if session.get_bind().dialect.name == "sqlite" else pg_insert


def add(session: Session, study_id: int, changes: Mapping[Key, tuple[int, float]]) -> None:
    """Add `changes` ((annotator, kind, bucket) -> (n, total)) to the study's tallies in one statement,
    after the annotators' locks (their ``assigned`` rows, in id order, so two writers never wait on
    each other in a circle)."""
    if not changes:
        return
    _lock(session, study_id, sorted({annotator for annotator, _, _ in changes}))
    rows = [
        {"study_id": study_id, "annotator_id": a, "kind": k, "bucket": b, "n": n, "total": t}
        for (a, k, b), (n, t) in sorted(changes.items())
        if n or t
    ]
    if rows:
        _upsert(session, rows)


def _upsert(session: Session, rows: list[dict[str, Any]]) -> None:
    statement = _insert(session)(Tally).values(rows)
    statement = statement.on_conflict_do_update(
        index_elements=["study_id", "annotator_id", "kind", "bucket"],
        set_={"n": Tally.n + statement.excluded.n, "total": Tally.total + statement.excluded.total},
    )
    session.execute(statement)


def assigned(session: Session, rows: Iterable[Mapping[str, Any]]) -> None:
    """New assignments (pending, never skipped): one more assigned item per row's annotator."""
    per_study: dict[int, Counter[int]] = defaultdict(Counter)
    for row in rows:
        per_study[int(row["study_id"])][int(row["annotator_id"])] += 1
    for study_id, counts in per_study.items():
        add(session, study_id, {(a, "assigned", 0): (n, 0.0) for a, n in counts.items()})


def submitted(
    session: Session,
    *,
    study_id: int,
    annotator_id: int,
    status: str,
    before: float | None,
    seconds: float,
    at: datetime,
    also_assigned: Iterable[int] = (),
) -> None:
    """A judgment saved on an item whose status was `status` and whose current judgment took `before`
    seconds (None: none yet); the new one took `seconds` and was submitted `at`. `also_assigned`: the
    annotators the same transaction gave one more item (dynamic overlap), counted in the same update."""
    changes: Delta = defaultdict(lambda: (0, 0.0))

    def bump(kind: str, bucket: int, n: int, total: float = 0.0) -> None:
        old = changes[(annotator_id, kind, bucket)]
        changes[(annotator_id, kind, bucket)] = (old[0] + n, old[1] + total)

    if status != DONE:
        bump("done", 0, 1)
    if status == FLAGGED:
        bump("flagged", 0, -1)
    bump("timed", 0, 0 if before is not None else 1, seconds - (before or 0.0))
    if before is not None:
        bump("time", time_bin(before), -1)
    bump("time", time_bin(seconds), 1)
    moment = _epoch(at)
    bump("minute", moment // 60, 1)
    bump("hour", moment // 3600, 1)
    for other in also_assigned:
        old = changes[(other, "assigned", 0)]
        changes[(other, "assigned", 0)] = (old[0] + 1, old[1])
    add(session, study_id, changes)


def counted(session: Session, study_id: int, annotators: list[int] | None) -> Delta:
    """Every tally of the study (of `annotators` only, when given), counted from the rows."""
    counts: Delta = {}

    def mine(query: Any) -> Any:
        query = query.where(col(Assignment.study_id) == study_id)
        return query if annotators is None else query.where(col(Assignment.annotator_id).in_(annotators))

    def is_(condition: Any) -> Any:
        return func.coalesce(func.sum(cast(condition, Integer)), 0)

    per_annotator = session.execute(
        mine(
            sql_select(
                col(Assignment.annotator_id),
                func.count(),
                is_(col(Assignment.status) == DONE),
                is_(col(Assignment.status) == FLAGGED),
                is_(col(Assignment.skip_count) > 0),
            )
        ).group_by(col(Assignment.annotator_id))
    ).all()
    for annotator, n, done, flagged, skipped in per_annotator:
        for kind, value in (("assigned", n), ("done", done), ("flagged", flagged), ("skipped", skipped)):
            counts[(int(annotator), kind, 0)] = (int(value), 0.0)
    times = session.execute(
        mine(
            sql_select(col(Assignment.annotator_id), col(Judgment.time_on_task_s)).join(
                Judgment, col(Judgment.id) == Assignment.current_judgment_id
            )
        )
    ).all()
    for annotator, seconds in times:
        for key, total in (
            ((int(annotator), "timed", 0), float(seconds)),
            ((int(annotator), "time", time_bin(seconds)), 0.0),
        ):
            n, t = counts.get(key, (0, 0.0))
            counts[key] = (n + 1, t + total)
    seconds = epoch_seconds(session, col(Judgment.submitted_at))
    for step, kind in ((60, "minute"), (3600, "hour")):
        bucket = (seconds // step).label("bucket")
        rows = session.execute(
            mine(
                sql_select(col(Assignment.annotator_id), bucket, func.count())
                .select_from(Judgment)
                .join(Assignment, col(Assignment.id) == Judgment.assignment_id)
            ).group_by(col(Assignment.annotator_id), bucket)
        ).all()
        for annotator, at, n in rows:
            counts[(int(annotator), kind, int(at))] = (int(n), 0.0)
    return counts


def recount(session: Session, study_id: int, annotators: Iterable[int] | None = None) -> None:
    """Count the study's tallies (of `annotators` only, when given) again from the rows, in this
    transaction: the annotators' locks first, then their rows set to zero, then the counts added.
    Used after writes that move or remove items (reassignment, unassignment) and to repair."""
    if annotators is None:
        held = set(session.exec(select(Tally.annotator_id).where(Tally.study_id == study_id).distinct()))
        held |= set(
            session.exec(select(Assignment.annotator_id).where(Assignment.study_id == study_id).distinct())
        )
        chosen = None
    else:
        held = set(annotators)
        chosen = sorted(held)
    _lock(session, study_id, sorted(held))
    zero = update(Tally).where(col(Tally.study_id) == study_id)
    if chosen is not None:
        zero = zero.where(col(Tally.annotator_id).in_(chosen))
    session.execute(zero.values(n=0, total=0.0).execution_options(synchronize_session=False))
    add(session, study_id, counted(session, study_id, chosen))


def _lock(session: Session, study_id: int, annotators: list[int]) -> None:
    """Hold the annotators' ``assigned`` rows until the transaction ends."""
    if not annotators:
        return
    rows = [
        {"study_id": study_id, "annotator_id": a, "kind": "assigned", "bucket": 0, "n": 0, "total": 0.0}
        for a in annotators
    ]
    _upsert(session, rows)


def assigned_counts(session: Session, study_id: int) -> dict[int, int]:
    """Per annotator with items in the study, how many (read from the tallies, after :func:`ensure`)."""
    ensure(session)
    rows = session.exec(
        select(Tally.annotator_id, Tally.n).where(
            Tally.study_id == study_id, Tally.kind == "assigned", col(Tally.n) > 0
        )
    ).all()
    return {int(annotator): int(n) for annotator, n in rows}


def totals(session: Session) -> tuple[int, int, int, int]:
    """Assignments and judgments in the whole database, and the same two numbers from the tallies, read
    in one statement (one snapshot on every engine)."""

    def tallied(kind: str) -> Any:
        return (
            sql_select(func.coalesce(func.sum(col(Tally.n)), 0))
            .where(col(Tally.kind) == kind)
            .scalar_subquery()
        )

    row = session.execute(
        sql_select(
            sql_select(func.count(col(Assignment.id))).scalar_subquery(),
            tallied("assigned"),
            sql_select(func.count(col(Judgment.id))).scalar_subquery(),
            tallied("minute"),
        )
    ).one()
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])


_CHECKED = "tallies_checked"  # session.info: the transaction in which ensure() last left the tallies agreeing


def ensure(session: Session) -> bool:
    """Rebuild every study's tallies when their totals disagree with the rows (assignments or judgments
    written outside the tool); True when it rebuilt. Two counts of whole tables and two sums, once per
    transaction: a later call in the same transaction returns False at once (the tool's own writes
    keep the tallies in step)."""
    checked = session.info.get(_CHECKED)
    if checked is not None and checked is session.get_transaction():
        return False
    assignments, tallied_assignments, judgments, tallied_judgments = totals(session)
    rebuilt = not (assignments == tallied_assignments and judgments == tallied_judgments)
    if rebuilt:
        rebuild(session)
    session.info[_CHECKED] = session.get_transaction()
    return rebuilt


def rebuild(session: Session) -> list[str]:
    """Count every study's tallies again from the rows; the names of the studies whose tallies differed."""
    changed = []
    for study_id, name in session.exec(select(Study.id, Study.name).order_by(col(Study.id))).all():
        if study_id is not None and not agrees(session, int(study_id)):
            recount(session, int(study_id))
            changed.append(name)
    return changed


def agrees(session: Session, study_id: int) -> bool:
    """Whether the study's stored tallies equal a count over its rows."""
    fresh = {key: (n, round(t, 6)) for key, (n, t) in counted(session, study_id, None).items() if n or t}
    return stored(session, study_id) == fresh


def stored(session: Session, study_id: int) -> Delta:
    """The study's tallies as stored, without rows that count nothing."""
    columns = (col(Tally.annotator_id), col(Tally.kind), col(Tally.bucket), col(Tally.n), col(Tally.total))
    rows = session.execute(sql_select(*columns).where(col(Tally.study_id) == study_id)).all()
    return {(a, k, b): (n, round(t, 6)) for a, k, b, n, t in rows if n or abs(t) > 1e-9}
