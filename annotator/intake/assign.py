"""Who rates what: overlap, balanced load, counterbalanced sides for `chosen`, shuffled queues."""

import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, case, func, insert, or_
from sqlmodel import Session, col, select

from analysis.wording import counted
from annotator.errors import UserError
from annotator.intake.controls import mix_controls
from annotator.people.authorization import Account, record_event, require_role
from annotator.store import tallies
from annotator.store.db import lock_study
from annotator.store.models import PENDING, Assignment, Event, Judgment, Pair, Study, User, id_of
from annotator.study import StudyConfig, get_study, parse_config, study_config


@dataclass(frozen=True)
class AssignSummary:
    """What an assignment run added."""

    study: str
    created: int
    pairs: int
    annotators: int
    unfilled: int = 0  # pairs that wanted another annotator and found none free

    def __str__(self) -> str:
        text = (
            f"study {self.study!r}: {counted(self.created, 'new assignment')} "
            f"({counted(self.pairs, 'pair')}, {counted(self.annotators, 'annotator')})"
        )
        if self.unfilled:
            text += f"; {counted(self.unfilled, 'pair')} found no further active annotator"
        return text


def _annotators(session: Session, names: list[str] | None) -> list[User]:
    query = select(User).where(User.role == "annotator", User.active == True)  # noqa: E712
    users = list(session.exec(query.order_by(User.username)))
    if names is None:
        return users
    by_name = {user.username: user for user in users}
    missing = [name for name in names if name not in by_name]
    if missing:
        raise UserError(f"not an active annotator: {', '.join(missing)}")
    return [by_name[name] for name in dict.fromkeys(names)]


def _even_out_sides(new: dict[int, list[tuple[int, str]]], balance: Counter[int]) -> None:
    """Swap the sides of two new slots on one pair (A <-> B) while the balance (times `chosen` on A
    minus times on B) of the annotator with it on A exceeds that of the one with it on B by more than
    two. A pair's sides stay as they are; every swap lowers the sum of the squared balances, so this
    ends. (The greedy choice alone left an annotator three off even: 34 pairs, 8 annotators, overlap 2,
    seed 63, found by the property test.)"""
    slots: dict[int, dict[int, str]] = defaultdict(dict)  # pair -> annotator -> side of `chosen`
    for uid, items in new.items():
        for pair_id, side in items:
            slots[pair_id][uid] = side
    swapped = True
    while swapped:
        swapped = False
        for on_pair in slots.values():
            for a in [uid for uid, side in on_pair.items() if side == "A"]:
                b = min(
                    (uid for uid, side in on_pair.items() if side == "B"),
                    key=balance.__getitem__,
                    default=None,
                )
                if b is not None and balance[a] - balance[b] > 2:
                    on_pair[a], on_pair[b] = "B", "A"
                    balance[a] -= 2
                    balance[b] += 2
                    swapped = True
    for uid, items in new.items():
        new[uid] = [(pair_id, slots[pair_id][uid]) for pair_id, _ in items]


def _new_sides(
    picked: list[int], sides: Counter[str], balance: Counter[int], rng: random.Random
) -> list[tuple[int, str]]:
    """The side of `chosen` for each new slot of a pair, as (annotator, side): as many A as keeps the
    pair within one of even, given to the annotators who have seen `chosen` on B most; an odd slot
    follows its annotator's balance. Updates the pair's `sides` and the annotators' `balance`."""
    total = sides["A"] + sides["B"] + len(picked)
    low = min(len(picked), max(0, total // 2 - sides["A"]))
    high = min(len(picked), max(0, (total + 1) // 2 - sides["A"]))
    picked.sort(key=lambda u: (balance[u], rng.random()))
    out = []
    for rank, uid in enumerate(picked):
        if rank < low:
            side = "A"
        elif rank < high:
            side = "A" if balance[uid] < 0 else "B" if balance[uid] > 0 else rng.choice("AB")
        else:
            side = "B"
        sides[side] += 1
        balance[uid] += 1 if side == "A" else -1
        out.append((uid, side))
    return out


def _queue_rows(
    new: Mapping[int, list[tuple[int, str]]],
    last: Mapping[int, int | None],
    *,
    study_id: int,
    arm_of: Mapping[int, str],
    rng: random.Random,
) -> list[dict[str, Any]]:
    """Assignment rows for the new items, shuffled into each annotator's queue after its last position."""
    rows = []
    for uid, items in new.items():
        rng.shuffle(items)
        start = (last.get(uid) or 0) + 1
        for offset, (pair_id, side) in enumerate(items):
            rows.append(
                {
                    "study_id": study_id,
                    "pair_id": pair_id,
                    "annotator_id": uid,
                    "chosen_side": side,
                    "position": start + offset,
                    "arm": arm_of[uid],
                }
            )
    return rows


def _count_existing(
    existing: Sequence[tuple[int, int, str]],
    main_ids: set[int],
    panel: set[int] | None,
    *,
    on_pair: dict[int, set[int]],
    pair_sides: dict[int, Counter[str]],
    load: Counter[int],
    balance: Counter[int],
) -> None:
    """Tally the existing assignments of main pairs (only the `panel`'s, when given): who is on each
    pair, its sides, each annotator's load and side balance."""
    for pair_id, annotator_id, side in existing:
        if (panel is not None and annotator_id not in panel) or pair_id not in main_ids:
            continue
        on_pair[pair_id].add(annotator_id)
        pair_sides[pair_id][side] += 1
        load[annotator_id] += 1
        balance[annotator_id] += 1 if side == "A" else -1


def assign(
    session: Session,
    *,
    study: str,
    overlap: int | None = None,
    annotators: list[str] | None = None,
    seed: int = 0,
    overlap_among_named: bool = False,
    more_for: Sequence[str] | None = None,
    account: Account,
) -> AssignSummary:
    """Give every pair of `study` to `overlap` distinct annotators; idempotent, deterministic per seed.

    Without an `overlap`, the study's configured one is used. Existing assignments are kept; only what is
    missing is added (new pairs, new annotators, a raised overlap). Each new slot goes to the least-loaded
    annotator not yet on the pair (ties broken at random), so on a first run loads differ by at most one.
    With `overlap_among_named`, only the named annotators' assignments count toward the overlap (a
    separate panel, e.g. simulated annotators). The sides of `chosen` keep every pair within one of even,
    and the A slots go to the annotators who have seen `chosen` on B most, so on a first run each
    annotator's A and B counts differ by at most two (tested). New items are appended to each queue in
    shuffled order. A study with a drawn human sample (:mod:`annotator.intake.human_sample`) gives only
    the drawn pairs. With `more_for` (pair ids, e.g. the cleaning list's "needs more judgments"), only
    those pairs are assigned, each to one annotator more than it has (the overlap is not used). With an
    `account` (the app), only a researcher may assign.
    """
    require_role(session, account, "researcher")
    study_row, overlap = _open_study(session, study, overlap)
    users = _annotators(session, annotators)
    if more_for is None and len(users) < overlap:
        names = ", ".join(user.username for user in users) or "none"
        raise UserError(
            f"overlap {overlap} needs at least {overlap} active annotators; found {len(users)} ({names})"
        )
    if more_for is not None:
        more_for = _one_at_a_time(session, study_row, more_for)
    user_ids = [id_of(user) for user in users]
    covered = None if more_for is not None or overlap_among_named else _covered(session, study_row, overlap)
    if covered is not None:  # every pair has its overlap: nothing to plan, nothing to add
        _log_assign(session, account, study, overlap, 0, seed, users)
        return AssignSummary(study, 0, covered, len(user_ids), 0)
    rng = random.Random(seed)
    main_pairs = session.exec(  # control pairs are mixed in by controls.mix_controls, never given an overlap
        select(col(Pair.id), col(Pair.external_id))
        .where(_main_pairs(id_of(study_row)))
        .order_by(col(Pair.id))
    ).all()
    pair_ids = [int(pair_id or 0) for pair_id, _ in main_pairs]
    main_ids = set(pair_ids)
    wanted: dict[int, int] = dict.fromkeys(pair_ids, overlap)  # annotators wanted per pair
    existing = session.exec(
        select(Assignment.pair_id, Assignment.annotator_id, Assignment.chosen_side).where(
            Assignment.study_id == study_row.id
        )
    ).all()
    on_pair: dict[int, set[int]] = defaultdict(set)
    pair_sides: dict[int, Counter[str]] = defaultdict(Counter)
    load: Counter[int] = Counter(dict.fromkeys(user_ids, 0))
    balance: Counter[int] = Counter()  # per annotator: times `chosen` was on A minus times on B
    panel = set(user_ids) if overlap_among_named else None
    _count_existing(
        existing, main_ids, panel, on_pair=on_pair, pair_sides=pair_sides, load=load, balance=balance
    )
    if more_for is not None:
        pair_ids = _more_for(study, main_pairs, more_for)
        wanted = {pair_id: len(on_pair[pair_id]) + 1 for pair_id in pair_ids}
    tiebreak = {uid: rng.random() for uid in user_ids}
    arm_of = annotator_arms(session, study_id=id_of(study_row), user_ids=user_ids, seed=seed)
    pair_arms: dict[int, Counter[str]] = defaultdict(Counter)  # per pair: slots per arm (balanced)
    for pair_id, annotator_id, _ in existing:
        if annotator_id in arm_of and pair_id in on_pair and annotator_id in on_pair[pair_id]:
            pair_arms[pair_id][arm_of[annotator_id]] += 1
    new: dict[int, list[tuple[int, str]]] = defaultdict(list)
    order = list(pair_ids)
    rng.shuffle(order)
    unfilled = 0
    for pair_id in order:
        picked: list[int] = []
        for _ in range(wanted[pair_id] - len(on_pair[pair_id])):
            free = [uid for uid in user_ids if uid not in on_pair[pair_id]]
            if not free:
                unfilled += 1
                break
            uid = min(free, key=lambda u: (pair_arms[pair_id][arm_of[u]], load[u], tiebreak[u]))
            pair_arms[pair_id][arm_of[uid]] += 1
            on_pair[pair_id].add(uid)
            load[uid] += 1
            tiebreak[uid] = rng.random()
            picked.append(uid)
        for uid, side in _new_sides(picked, pair_sides[pair_id], balance, rng):
            new[uid].append((pair_id, side))
    _even_out_sides(new, balance)
    last = dict(
        session.exec(
            select(col(Assignment.annotator_id), func.max(Assignment.position))
            .where(Assignment.study_id == study_row.id)
            .group_by(col(Assignment.annotator_id))
        ).all()
    )
    rows = _queue_rows(new, last, study_id=id_of(study_row), arm_of=arm_of, rng=rng)
    if rows:
        session.execute(insert(Assignment), rows)
        tallies.assigned(session, rows)
        session.flush()
        mix_controls(session, study=study, rate=study_config(session, study).controls.rate, seed=seed)
    _log_assign(session, account, study, overlap if more_for is None else "one more", len(rows), seed, users)
    return AssignSummary(study, len(rows), len(pair_ids), len(user_ids), unfilled)


def _main_pairs(study_id: int) -> Any:
    """The condition for a study's main pairs that take an overlap (a drawn human sample only)."""
    return and_(
        col(Pair.study_id) == study_id,
        col(Pair.control) == "",
        or_(col(Pair.in_sample).is_(None), col(Pair.in_sample).is_(True)),
    )


def _covered(session: Session, study_row: Study, overlap: int) -> int | None:
    """The number of main pairs when every one of them already has `overlap` annotators (counted in
    the database), else None (then :func:`assign` plans the missing slots)."""
    study_id = id_of(study_row)
    on_pair = (
        select(col(Assignment.pair_id).label("pair_id"), func.count().label("n"))
        .where(col(Assignment.study_id) == study_id)
        .group_by(col(Assignment.pair_id))
        .subquery()
    )
    pairs, short = session.exec(
        select(
            func.count(col(Pair.id)),
            func.coalesce(func.sum(case((func.coalesce(on_pair.c.n, 0) < overlap, 1), else_=0)), 0),
        )
        .select_from(Pair)
        .outerjoin(on_pair, on_pair.c.pair_id == col(Pair.id))
        .where(_main_pairs(study_id))
    ).one()
    return int(pairs) if int(short) == 0 else None


def _log_assign(
    session: Session,
    account: Account,
    study: str,
    overlap: int | str,
    created: int,
    seed: int,
    users: list[User],
) -> None:
    record_event(
        session,
        account,
        "assign",
        {
            "study": study,
            "overlap": overlap,
            "created": created,
            "seed": seed,
            "annotators": [user.username for user in users],
        },
    )


def _open_study(session: Session, study: str, overlap: int | None) -> tuple[Study, int]:
    """The study to assign and its overlap (the configured one when none is given), or a UserError when
    the overlap is below 1 or the study is archived."""
    if overlap is None:
        overlap = study_overlap(session, study)
    if overlap < 1:
        raise UserError("overlap must be at least 1")
    study_row = get_study(session, study)
    if study_row.archived_at is not None:
        raise UserError(f"study {study!r} is archived; restore it first (`annotator study restore`)")
    return study_row, overlap


def _one_at_a_time(session: Session, study_row: Study, wanted: Sequence[str]) -> Sequence[str]:
    """Under a registered sequential design, the next judgment goes to one pair, and only once every
    main-pair judgment given out has come in (the procedure its verdict is calibrated for: picking
    several pairs from the same judgments passes broken studies far more often); other designs: all
    of `wanted`. The check and the insert that follows are one serialized step (the study's lock)."""
    if parse_config(study_row.config).allocation.design != "sequential" or not wanted:
        return wanted
    lock_study(session, id_of(study_row))
    pending = session.exec(
        select(func.count())
        .select_from(Assignment)
        .join(Pair, col(Pair.id) == col(Assignment.pair_id))
        .where(Assignment.study_id == study_row.id, Pair.control == "", Assignment.status == PENDING)
    ).one()
    if int(pending):
        raise UserError(
            f"study {study_row.name!r} registers a sequential design: one judgment at a time, and "
            f"{int(pending)} judgment(s) given out are still to come; give the next one when they are in"
        )
    return list(wanted)[:1]


def _more_for(study: str, main_pairs: Sequence[tuple[int | None, str]], wanted: Sequence[str]) -> list[int]:
    """The database ids of the study's main pairs named in `wanted`, or a UserError naming the others."""
    by_name = {name: int(pair_id or 0) for pair_id, name in main_pairs}
    unknown = [name for name in dict.fromkeys(wanted) if name not in by_name]
    if unknown:
        shown = ", ".join(repr(name) for name in unknown[:3]) + (" ..." if len(unknown) > 3 else "")
        raise UserError(f"study {study!r} has no main pair {shown} ({len(unknown)} unknown)")
    return [by_name[name] for name in dict.fromkeys(wanted)]


def assigned_annotators(session: Session, study: str) -> list[str]:
    """The active annotators who already have items in `study` (the accounts last used for it), by name;
    read from the study's tallies (one row per annotator)."""
    study_row = get_study(session, study)
    ids = list(tallies.assigned_counts(session, id_of(study_row)))
    return list(
        session.exec(
            select(User.username)
            .where(col(User.id).in_(ids), User.role == "annotator", User.active == True)  # noqa: E712
            .order_by(User.username)
        )
    )


def study_overlap(session: Session, study: str) -> int:
    """The overlap the study's configuration asks for."""
    return int(get_study(session, study).config.get("analysis", {}).get("overlap", 3))


def study_pair_ids(session: Session, study: str) -> list[int]:
    """The ids of a study's pairs, in import order."""
    study_row = get_study(session, study)
    return [
        int(i or 0)
        for i in session.exec(
            select(col(Pair.id)).where(Pair.study_id == study_row.id).order_by(col(Pair.id))
        )
    ]


def assign_pairs(
    session: Session,
    *,
    study: str,
    annotator: str,
    pair_ids: list[int],
    seed: int = 0,
    arm: str | None = None,
) -> int:
    """Put chosen pairs in one annotator's queue (skipping those already there), sides balanced per pair."""
    study_row = get_study(session, study)
    user = next((u for u in _annotators(session, [annotator])), None)
    if user is None:
        raise UserError(f"not an active annotator: {annotator}")
    existing = session.exec(
        select(
            Assignment.pair_id, Assignment.annotator_id, Assignment.chosen_side, Assignment.position
        ).where(Assignment.study_id == study_row.id)
    ).all()
    mine = {pair_id for pair_id, uid, _, _ in existing if uid == user.id}
    sides: dict[int, Counter[str]] = defaultdict(Counter)
    for pair_id, _, side, _ in existing:
        sides[pair_id][side] += 1
    position = max((p for _, uid, _, p in existing if uid == user.id), default=0)
    arms = (  # the annotator's study arm: given (by a caller that balanced arms), kept, or drawn
        {id_of(user): arm}
        if arm is not None
        else annotator_arms(session, study_id=id_of(study_row), user_ids=[id_of(user)], seed=seed)
    )
    rng = random.Random(seed)
    todo = [pair_id for pair_id in pair_ids if pair_id not in mine]
    rng.shuffle(todo)
    rows = []
    for offset, pair_id in enumerate(todo, start=1):
        count = sides[pair_id]
        side = "A" if count["A"] < count["B"] else "B" if count["B"] < count["A"] else "AB"[offset % 2]
        rows.append(
            {
                "study_id": study_row.id,
                "pair_id": pair_id,
                "annotator_id": user.id,
                "chosen_side": side,
                "position": position + offset,
                "arm": arms[id_of(user)],
            }
        )
    if rows:
        session.execute(insert(Assignment), rows)
        tallies.assigned(session, rows)
    return len(rows)


def annotator_arms(session: Session, *, study_id: int, user_ids: list[int], seed: int = 0) -> dict[int, str]:
    """The study arm of each annotator ("" for all in a study without arms).

    An annotator keeps the arm of their earlier assignments in the study; the others are randomized
    (deterministically per seed) so that the arms' sizes stay within one of each other.
    """
    arms = study_config(session, study_id).arms.names
    if not arms:
        return dict.fromkeys(user_ids, "")
    rows = session.exec(
        select(Assignment.annotator_id, Assignment.arm)
        .where(Assignment.study_id == study_id, Assignment.arm != "")
        .distinct()
    ).all()
    known = {int(uid): arm for uid, arm in rows if arm in arms}
    size = Counter(dict.fromkeys(arms, 0))
    for arm in known.values():
        size[arm] += 1
    rng = random.Random(f"arms:{seed}")
    out: dict[int, str] = {}
    newcomers = [uid for uid in user_ids if uid not in known]
    rng.shuffle(newcomers)
    for uid in newcomers:
        smallest = min(size.values())
        arm = rng.choice([a for a in arms if size[a] == smallest])
        known[uid] = arm
        size[arm] += 1
    for uid in user_ids:
        out[uid] = known[uid]
    return out


def extend_overlap(session: Session, *, pair_id: int, config: StudyConfig) -> int | None:
    """Dynamic overlap: give a main pair whose finished judgments disagree one more annotator.

    Under the study's `[dynamic_overlap]` rule, when every assignment of the pair is finished, two of
    its preferences lie more than `max_spread` points apart, and the pair has fewer than
    `max_overlap` annotators, the active annotator of the study with the fewest pending items who is
    not on the pair yet gets it at the front of their queue, on the side seen less often. Returns the
    id of that annotator (None: nobody added); called after each submit, which counts the new item in
    the annotator's tallies together with its own.
    """
    rule = config.dynamic_overlap
    if rule.max_overlap <= 0:
        return None
    pair = session.get(Pair, pair_id)
    if pair is None or pair.control != "":
        return None
    rows = session.exec(
        select(Assignment.annotator_id, Assignment.status, Assignment.chosen_side, Judgment.preference)
        .join(Judgment, col(Judgment.id) == col(Assignment.current_judgment_id), isouter=True)
        .where(Assignment.pair_id == pair_id)
    ).all()
    if len(rows) >= rule.max_overlap or any(status == PENDING for _, status, _, _ in rows):
        return None
    preferences = [int(p) for _, _, _, p in rows if p is not None]
    spread = max(preferences) - min(preferences) if len(preferences) >= 2 else 0
    if spread <= rule.max_spread:
        return None
    on_pair = {annotator_id for annotator_id, _, _, _ in rows}
    pending = func.sum(case((col(Assignment.status) == PENDING, 1), else_=0))
    candidates = session.exec(
        select(Assignment.annotator_id, pending, func.min(Assignment.position))
        .join(User, col(User.id) == col(Assignment.annotator_id))
        .where(Assignment.study_id == pair.study_id, User.role == "annotator")
        .where(User.active == True)  # noqa: E712
        .group_by(col(Assignment.annotator_id))
    ).all()
    free = sorted((int(n or 0), uid, int(first or 0)) for uid, n, first in candidates if uid not in on_pair)
    if not free:
        return None
    _, annotator_id, first_position = free[0]
    sides = Counter(side for _, _, side, _ in rows)
    side = "A" if sides["A"] <= sides["B"] else "B"
    session.add(
        Assignment(
            study_id=pair.study_id,
            pair_id=pair_id,
            annotator_id=annotator_id,
            chosen_side=side,
            position=first_position - 1,
        )
    )
    session.add(
        Event(
            action="extend_overlap",
            detail={"pair": pair_id, "annotator": annotator_id, "spread": spread},
        )
    )
    return annotator_id


def preview(
    session: Session,
    *,
    study: str,
    overlap: int | None = None,
    annotators: list[str] | None = None,
    seed: int = 0,
    account: Account,
) -> tuple[AssignSummary, list[dict[str, object]]]:
    """What :func:`assign` with these arguments would do, without doing it: its summary and, per
    annotator it would use, the arm, the items already queued, the new ones and the total.

    The very same :func:`assign` runs and everything it wrote is rolled back (`session` must hold no
    other pending work: it ends rolled back).
    """
    study_row = get_study(session, study)

    def queued() -> Counter[int]:  # items per annotator, from the tallies the writes keep
        return Counter(tallies.assigned_counts(session, id_of(study_row)))

    before = queued()
    try:
        summary = assign(
            session, study=study, overlap=overlap, annotators=annotators, seed=seed, account=account
        )
        after = queued()
        users = _annotators(session, annotators)
        arms = {  # one indexed row per annotator: an annotator's items share one arm
            id_of(user): session.exec(
                select(Assignment.arm)
                .where(Assignment.annotator_id == id_of(user), Assignment.study_id == study_row.id)
                .limit(1)
            ).first()
            or ""
            for user in users
        }
    finally:
        session.rollback()
    rows: list[dict[str, object]] = [
        {
            "annotator": user.username,
            "arm": arms.get(id_of(user), ""),
            "queued": before[id_of(user)],
            "new": after[id_of(user)] - before[id_of(user)],
            "total": after[id_of(user)],
        }
        for user in users
    ]
    return summary, rows
