"""Who rates what: overlap, balanced load, counterbalanced sides for `chosen`, shuffled queues."""

import random
from collections import Counter, defaultdict
from dataclasses import dataclass

from sqlalchemy import func, insert
from sqlmodel import Session, select

from annotator.errors import UserError
from annotator.models import Assignment, Event, Pair, Study, User


@dataclass(frozen=True)
class AssignSummary:
    """What an assignment run added."""

    study: str
    created: int
    pairs: int
    annotators: int

    def __str__(self) -> str:
        return (
            f"study {self.study!r}: {self.created} new assignments "
            f"({self.pairs} pairs, {self.annotators} annotators)"
        )


def get_study(session: Session, name: str) -> Study:
    """The study called `name`, or a clear error listing the studies there are."""
    study = session.exec(select(Study).where(Study.name == name)).first()
    if study is None:
        names = list(session.exec(select(Study.name).order_by(Study.name)))
        known = f"; studies: {', '.join(names)}" if names else "; import pairs first"
        raise UserError(f"no study called {name!r}{known}")
    return study


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


def assign(
    session: Session,
    *,
    study: str,
    overlap: int,
    annotators: list[str] | None = None,
    seed: int = 0,
) -> AssignSummary:
    """Give every pair of `study` to `overlap` distinct annotators; idempotent, deterministic per seed.

    Existing assignments are kept; only what is missing is added (new pairs, new annotators, a raised
    overlap). Each new slot goes to the least-loaded annotator not yet on the pair (ties broken at
    random), so loads differ by at most one. The side of `chosen` takes the pair's minority side and,
    on a tie, the side the annotator has seen `chosen` on less often. New items are appended to each
    queue in shuffled order.
    """
    if overlap < 1:
        raise UserError("overlap must be at least 1")
    study_row = get_study(session, study)
    users = _annotators(session, annotators)
    if len(users) < overlap:
        names = ", ".join(user.username for user in users) or "none"
        raise UserError(
            f"overlap {overlap} needs at least {overlap} active annotators; found {len(users)} ({names})"
        )
    rng = random.Random(seed)
    user_ids = [int(user.id or 0) for user in users]
    pair_ids = list(session.exec(select(Pair.id).where(Pair.study_id == study_row.id).order_by(Pair.id)))
    existing = session.exec(
        select(Assignment.pair_id, Assignment.annotator_id, Assignment.chosen_side).where(
            Assignment.study_id == study_row.id
        )
    ).all()
    on_pair: dict[int, set[int]] = defaultdict(set)
    pair_sides: dict[int, Counter[str]] = defaultdict(Counter)
    load: Counter[int] = Counter(dict.fromkeys(user_ids, 0))
    user_a: Counter[int] = Counter()
    for pair_id, annotator_id, side in existing:
        on_pair[pair_id].add(annotator_id)
        pair_sides[pair_id][side] += 1
        load[annotator_id] += 1
        user_a[annotator_id] += side == "A"
    tiebreak = {uid: rng.random() for uid in user_ids}
    new: dict[int, list[tuple[int, str]]] = defaultdict(list)
    order = list(pair_ids)
    rng.shuffle(order)
    for pair_id in order:
        for _ in range(overlap - len(on_pair[pair_id])):
            free = [uid for uid in user_ids if uid not in on_pair[pair_id]]
            if not free:
                break
            uid = min(free, key=lambda u: (load[u], tiebreak[u]))
            sides = pair_sides[pair_id]
            if sides["A"] != sides["B"]:
                side = "A" if sides["A"] < sides["B"] else "B"
            else:
                share_a = user_a[uid] - (load[uid] - user_a[uid])
                side = "B" if share_a > 0 else "A" if share_a < 0 else rng.choice("AB")
            on_pair[pair_id].add(uid)
            sides[side] += 1
            load[uid] += 1
            user_a[uid] += side == "A"
            new[uid].append((pair_id, side))
            tiebreak[uid] = rng.random()
    rows = []
    last = dict(
        session.exec(
            select(Assignment.annotator_id, func.max(Assignment.position))
            .where(Assignment.study_id == study_row.id)
            .group_by(Assignment.annotator_id)
        ).all()
    )
    for uid, items in new.items():
        rng.shuffle(items)
        start = (last.get(uid) or 0) + 1
        for offset, (pair_id, side) in enumerate(items):
            rows.append(
                {
                    "study_id": study_row.id,
                    "pair_id": pair_id,
                    "annotator_id": uid,
                    "chosen_side": side,
                    "position": start + offset,
                }
            )
    if rows:
        session.execute(insert(Assignment), rows)
    session.add(
        Event(
            action="assign", detail={"study": study, "overlap": overlap, "created": len(rows), "seed": seed}
        )
    )
    return AssignSummary(study, len(rows), len(pair_ids), len(user_ids))


def study_overlap(session: Session, study: str) -> int:
    """The overlap the study's configuration asks for."""
    return int(get_study(session, study).config.get("analysis", {}).get("overlap", 3))
