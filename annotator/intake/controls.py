"""Control pairs: deriving them from a study's pairs and mixing them, unseen, into the queues.

Storage design (blinding): a control is an ordinary `Pair` row of the same study with
`Pair.control` set ("gold", "positive", "swap", "duplicate", "training") and `Pair.control_of`
naming the pair it derives from. It gets an ordinary `Assignment` with a counterbalanced side, so
the browser receives exactly what it receives for any item (question, profile, rubric, the texts of
A and B; never an id, a kind or a label). Kinds:

- ``swap``: a copy of a pair the annotator already rated, served with `chosen` on the other side
  (self-consistency). One copy per source pair, shared by every annotator who rated the source.
- ``positive`` (``controls make --kind degrade``): `chosen` is the source's intact `chosen`, and
  `rejected` is the source's `rejected` with a planted defect (a truncation, a contradicted fact, an
  off-topic paragraph); `meta["worse_on"]` names the quality dimensions the defect lowers.
- ``duplicate``: the same response as A and as B (a tie control).
- ``gold`` (from a pairs file): `meta["expected"]` holds the expected answers.

Controls never count toward a pair's overlap and are left out of the main analysis (the label
frame's `control` column).
"""

import hashlib
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import func, insert
from sqlmodel import Session, col, select

from analysis.vocabulary import DUPLICATE, GOLD, POSITIVE, SWAP
from analysis.wording import counted
from annotator.errors import UserError
from annotator.people.authorization import Account, record_event, require_role
from annotator.store import tallies
from annotator.store.models import DONE, FLAGGED, PENDING, Assignment, Pair, User, id_of
from annotator.study import get_study, parse_config, study_config

__all__ = [
    "MIXED_KINDS",
    "ControlSummary",
    "degrade",
    "held_back",
    "MAKE_KINDS",
    "make_controls",
    "make_controls_preview",
    "mix_controls",
    "pick_controls",
    "swap_sources",
]

MakeKind = Literal["swap", "degrade", "duplicate"]
#: What each kind `make_controls` takes makes, in words (the CLI's and the browser's choices).
MAKE_KINDS: dict[str, str] = {
    "degrade": "positive: a planted defect in the rejected response",
    SWAP: "swap: a rated pair again, sides exchanged",
    DUPLICATE: "duplicate: one response as A and as B",
}
#: Kinds mixed into every queue at the configured rate (swaps go to the annotator who rated the source).
MIXED_KINDS = (GOLD, POSITIVE, DUPLICATE)
DEFECTS = ("truncation", "contradiction", "off_topic")
#: The quality dimensions each planted defect lowers (by name; dimensions a study lacks are dropped).
DEFECT_LOWERS = {
    "truncation": ("helpfulness",),
    "contradiction": ("correctness",),
    "off_topic": ("relevance",),
}


@dataclass(frozen=True)
class ControlSummary:
    """What one `controls make` run added."""

    study: str
    kind: str
    pairs: int
    assignments: int

    def __str__(self) -> str:
        return (
            f"study {self.study!r}: {counted(self.pairs, f'new {self.kind} control pair')}, "
            f"{counted(self.assignments, 'control item')} mixed into queues"
        )


# ----------------------------------------------------------------------------------------- defects


def _truncate(text: str, rng: random.Random) -> str:
    """Cut the text at 35-55% of its words, mid-sentence and without an ellipsis."""
    words = text.split(" ")
    if len(words) < 8:
        return text[: max(1, len(text) // 2)]
    cut = max(3, int(len(words) * rng.uniform(0.35, 0.55)))
    return " ".join(words[:cut]).rstrip(" ,.;:")


_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]*\d)")
_VERB = re.compile(r"\b(is|are|can|should|will|does|do)\b")


def _contradict(text: str, rng: random.Random) -> str:
    """Change a fact: a number becomes a very different one, or else a claim is negated."""
    numbers = list(_NUMBER.finditer(text))
    if numbers:
        match = rng.choice(numbers)
        value = float(match.group(1))
        changed = value * rng.choice((3, 10)) if value else 7.0
        shown = f"{changed:g}" if "." in match.group(1) else str(int(changed))
        return text[: match.start()] + shown + text[match.end() :]
    verbs = list(_VERB.finditer(text))
    if verbs:
        match = rng.choice(verbs)
        return text[: match.end()] + " not" + text[match.end() :]
    return text + " None of the above is actually true."


def _off_topic(text: str, other: str, rng: random.Random) -> str:
    """Insert a paragraph of another pair's response into the middle of the text."""
    paragraphs = [p for p in other.split("\n\n") if p.strip()] or [other]
    insert_at = text.split("\n\n")
    place = rng.randint(1, max(1, len(insert_at)))
    return "\n\n".join([*insert_at[:place], rng.choice(paragraphs).strip(), *insert_at[place:]])


def degrade(text: str, defect: str, *, rng: random.Random, other: str = "") -> str:
    """`text` with a planted quality defect: "truncation", "contradiction" or "off_topic".

    >>> degrade("It takes 20 minutes at 180 degrees.", "contradiction", rng=random.Random(0)) != (
    ...     "It takes 20 minutes at 180 degrees.")
    True
    """
    if defect == "truncation":
        return _truncate(text, rng)
    if defect == "contradiction":
        return _contradict(text, rng)
    if defect == "off_topic":
        return _off_topic(text, other or "", rng)
    raise UserError(f"unknown defect {defect!r}; use one of {', '.join(DEFECTS)}")


# ------------------------------------------------------------------------------------------- making


def _external_id(study: str, kind: str, source: str, salt: str = "") -> str:
    """An id that says nothing to an annotator (they never see ids) and is stable for a source."""
    digest = hashlib.sha256(f"{study}\x00{kind}\x00{source}\x00{salt}".encode()).hexdigest()[:12]
    return f"ctl-{digest}"


def _copy(
    source: Pair, *, kind: str, external_id: str, chosen: str, rejected: str, meta: dict[str, Any]
) -> Pair:
    return Pair(
        study_id=source.study_id,
        external_id=external_id,
        question=source.question,
        profile=list(source.profile),
        rubric=list(source.rubric),
        narrative=source.narrative,
        category=source.category,
        chosen=chosen,
        rejected=rejected,
        meta=meta,
        content_hash=hashlib.sha256(f"{external_id}\x00{chosen}\x00{rejected}".encode()).hexdigest(),
        control=kind,
        control_of=source.id,
    )


def make_controls(
    session: Session,
    *,
    study: str,
    kind: MakeKind,
    n: int,
    seed: int = 0,
    account: Account,
) -> ControlSummary:
    """Derive `n` control pairs of `kind` from the study's main pairs and mix them into the queues.

    `degrade` and `duplicate` create `n` new control pairs from `n` randomly drawn main pairs, then
    mix controls into every annotator's queue at the study's `[controls] rate` (see
    :func:`mix_controls`). `swap` gives every annotator up to `n` repeats of pairs they have already
    rated, sides exchanged, placed among their pending items. Only a researcher (or SYSTEM) may.
    """
    require_role(session, account, "researcher")
    if n < 1:
        raise UserError("--n must be at least 1")
    if kind not in (SWAP, "degrade", DUPLICATE):
        raise UserError(f"unknown control kind {kind!r}; use swap, degrade or duplicate")
    study_row = get_study(session, study)
    study_id = id_of(study_row)
    rng = random.Random(seed)
    main = [  # ids only: a control's source is read in full when it is used
        int(pair_id or 0)
        for pair_id in session.exec(
            select(col(Pair.id)).where(Pair.study_id == study_id, Pair.control == "").order_by(col(Pair.id))
        )
    ]
    if not main:
        raise UserError(f"study {study!r} has no pairs to derive controls from")
    if kind == SWAP:
        created, assigned = _make_swaps(session, study_row.name, study_id, main, n, rng)
    else:
        config = parse_config(study_row.config)
        created = _make_derived(session, study_row.name, study_id, main, kind, n, rng, config.dimension_names)
        session.flush()
        assigned = mix_controls(session, study=study, rate=config.controls.rate, seed=seed)
    record_event(
        session,
        account,
        "controls_make",
        {"study": study, "kind": kind, "pairs": created, "assignments": assigned, "seed": seed},
    )
    return ControlSummary(study, POSITIVE if kind == "degrade" else kind, created, assigned)


def make_controls_preview(
    session: Session, *, study: str, kind: MakeKind, n: int, seed: int = 0, account: Account
) -> ControlSummary:
    """What :func:`make_controls` would add now, without adding it (`session` ends rolled back)."""
    try:
        return make_controls(session, study=study, kind=kind, n=n, seed=seed, account=account)
    finally:
        session.rollback()


def _make_derived(
    session: Session,
    study: str,
    study_id: int,
    main: list[int],
    kind: str,
    n: int,
    rng: random.Random,
    dimensions: list[str],
) -> int:
    """Add up to `n` `kind` controls of main pairs (ids in import order) that have none yet."""
    stored = POSITIVE if kind == "degrade" else kind
    existing = set(
        session.exec(select(Pair.control_of).where(Pair.study_id == study_id, Pair.control == stored))
    )
    sources = [pair_id for pair_id in main if pair_id not in existing]
    rng.shuffle(sources)
    if not sources:
        raise UserError(f"every pair of study {study!r} already has a {stored} control")
    place = {pair_id: k for k, pair_id in enumerate(main)}
    created = 0
    for index, source_id in enumerate(sources[:n]):
        source = _pair(session, source_id)
        if kind == DUPLICATE:
            text = source.chosen if rng.random() < 0.5 else source.rejected
            row = _copy(
                source,
                kind=DUPLICATE,
                external_id=_external_id(study, DUPLICATE, source.external_id),
                chosen=text,
                rejected=text,
                meta={"expected": {"preference": 0}},
            )
        else:
            defect = DEFECTS[index % len(DEFECTS)]
            other = _pair(
                session, main[(place[source_id] + 1 + rng.randrange(max(1, len(main) - 1))) % len(main)]
            )
            damaged = degrade(source.rejected, defect, rng=rng, other=other.chosen)
            if damaged == source.rejected:
                continue
            worse_on = [d for d in DEFECT_LOWERS[defect] if d in dimensions] or list(dimensions)
            row = _copy(
                source,
                kind=POSITIVE,
                external_id=_external_id(study, POSITIVE, source.external_id),
                chosen=source.chosen,
                rejected=damaged,
                meta={"defect": defect, "worse_on": worse_on},
            )
        session.add(row)
        created += 1
    return created


def _pair(session: Session, pair_id: int) -> Pair:
    """A pair read in full by its id (one just read from the study, in the same transaction)."""
    found = session.get(Pair, pair_id)
    if found is None:
        raise UserError(f"pair {pair_id} no longer exists")
    return found


def _make_swaps(
    session: Session, study: str, study_id: int, main: list[int], n: int, rng: random.Random
) -> tuple[int, int]:
    main_ids = set(main)
    rows = session.exec(
        select(Assignment.annotator_id, Assignment.pair_id, Assignment.chosen_side, Assignment.status).where(
            Assignment.study_id == study_id
        )
    ).all()
    copies = {
        int(p.control_of or 0): p
        for p in session.exec(select(Pair).where(Pair.study_id == study_id, Pair.control == SWAP))
    }
    queue: dict[int, dict[int, tuple[str, str]]] = defaultdict(dict)
    for annotator_id, pair_id, side, status in rows:
        queue[annotator_id][pair_id] = (side, status)
    copy_ids = {id_of(p): source for source, p in copies.items()}
    created = 0
    plan: list[tuple[int, int, str]] = []
    for annotator_id in sorted(queue):
        mine = queue[annotator_id]
        have = sum(1 for pair_id in mine if pair_id in copy_ids)
        done = sorted(
            pid
            for pid, (_, status) in mine.items()
            if status == DONE and pid in main_ids and (pid not in copies or copies[pid].id not in mine)
        )
        rng.shuffle(done)
        for source_id in done[: max(0, n - have)]:
            if source_id not in copies:
                source = _pair(session, source_id)
                copy = _copy(
                    source,
                    kind=SWAP,
                    external_id=_external_id(study, SWAP, source.external_id),
                    chosen=source.chosen,
                    rejected=source.rejected,
                    meta={},
                )
                session.add(copy)
                session.flush()
                copies[source_id] = copy
                created += 1
            side = "B" if mine[source_id][0] == "A" else "A"
            plan.append((annotator_id, id_of(copies[source_id]), side))
    assigned = _insert_mixed(session, study_id, plan, rng)
    return created, assigned


def _insert_mixed(
    session: Session, study_id: int, plan: list[tuple[int, int, str]], rng: random.Random
) -> int:
    """Add (annotator, pair, side) items, each at a random place among the annotator's pending items."""
    if not plan:
        return 0
    annotators = {a for a, _, _ in plan}
    pending: dict[int, list[int]] = defaultdict(list)
    last: dict[int, int] = {}
    for annotator_id, position, status in session.exec(
        select(Assignment.annotator_id, Assignment.position, Assignment.status).where(
            Assignment.study_id == study_id, col(Assignment.annotator_id).in_(annotators)
        )
    ).all():
        last[annotator_id] = max(last.get(annotator_id, 0), position)
        if status == PENDING:
            pending[annotator_id].append(position)
    rows = []
    for annotator_id, pair_id, side in plan:
        spots = pending[annotator_id]
        if spots:
            position = rng.choice(spots)
        else:
            last[annotator_id] = last.get(annotator_id, 0) + 1
            position = last[annotator_id]
        rows.append(
            {
                "study_id": study_id,
                "pair_id": pair_id,
                "annotator_id": annotator_id,
                "chosen_side": side,
                "position": position,
            }
        )
    session.execute(insert(Assignment), rows)
    tallies.assigned(session, rows)
    return len(rows)


# ------------------------------------------------------------------------------------------- mixing


def mix_controls(session: Session, *, study: str, rate: float, seed: int = 0) -> int:
    """Top up every annotator's queue with gold, positive and duplicate controls to `rate` of it.

    An annotator with M main items gets round(rate * M / (1 - rate)) such controls in all (so
    controls are `rate` of the queue), least-used controls first, never one twice, each on a side
    that keeps the control pair within one of even, at random places among their pending items
    (served in turn, not by need, so they arrive spread over the session). Idempotent; returns the
    number of items added.
    """
    if rate <= 0:
        return 0
    if rate >= 1:
        raise UserError("the control rate must be below 1")
    study_row = get_study(session, study)
    study_id = id_of(study_row)
    pool = list(
        session.exec(
            select(Pair.id)
            .where(Pair.study_id == study_id, col(Pair.control).in_(MIXED_KINDS))
            .order_by(col(Pair.id))
        )
    )
    if not pool:
        return 0
    pool_ids = {int(p or 0) for p in pool}
    rows = session.exec(
        select(Assignment.annotator_id, Assignment.pair_id, Assignment.chosen_side, Pair.control)
        .join(Pair, col(Pair.id) == col(Assignment.pair_id))
        .where(Assignment.study_id == study_id)
    ).all()
    n_main: Counter[int] = Counter()
    mine: dict[int, set[int]] = defaultdict(set)
    uses: Counter[int] = Counter(dict.fromkeys(pool_ids, 0))
    sides: dict[int, Counter[str]] = defaultdict(Counter)
    for annotator_id, pair_id, side, control in rows:
        if control == "":
            n_main[annotator_id] += 1
        if pair_id in pool_ids:
            mine[annotator_id].add(pair_id)
            uses[pair_id] += 1
            sides[pair_id][side] += 1
    active = set(session.exec(select(User.id).where(User.active == True)))  # noqa: E712
    rng = random.Random(seed)
    plan: list[tuple[int, int, str]] = []
    for annotator_id in sorted(a for a in n_main if a in active):
        target = round(rate * n_main[annotator_id] / (1 - rate))
        for _ in range(target - len(mine[annotator_id])):
            free = [p for p in pool_ids if p not in mine[annotator_id]]
            if not free:
                break
            pair_id = min(free, key=lambda p: (uses[p], rng.random()))
            count = sides[pair_id]
            side = "A" if count["A"] < count["B"] else "B" if count["B"] < count["A"] else rng.choice("AB")
            count[side] += 1
            uses[pair_id] += 1
            mine[annotator_id].add(pair_id)
            plan.append((annotator_id, pair_id, side))
    return _insert_mixed(session, study_id, plan, rng)


def swap_sources(session: Session, *, study_id: int) -> dict[str, str]:
    """For every swap control of a study, the external id of the pair it repeats."""
    source = Pair.__table__.alias("source")  # type: ignore[attr-defined]
    rows = session.execute(
        select(Pair.external_id, source.c.external_id)
        .join(source, source.c.id == col(Pair.control_of))
        .where(Pair.study_id == study_id, Pair.control == SWAP)
    ).all()
    return {str(a): str(b) for a, b in rows}


def control_counts(session: Session, *, study_id: int) -> dict[str, int]:
    """How many control pairs of each kind a study has."""
    rows = session.exec(
        select(Pair.control, func.count())
        .where(Pair.study_id == study_id, Pair.control != "")
        .group_by(Pair.control)
    ).all()
    return {str(kind): int(n) for kind, n in rows}


def pick_controls(
    session: Session, *, study_id: int, n_main: int, rate: float, rng: random.Random
) -> list[tuple[int, str]]:
    """Gold, positive and duplicate controls for a newcomer with `n_main` main items, as (pair, side):
    round(rate * n_main / (1 - rate)) of them, least-used first, each on the side its pair has had
    less often. The caller shuffles them into the newcomer's queue together with the main items, so
    neither their places nor their row order tell them apart."""
    if rate <= 0 or n_main <= 0:
        return []
    if rate >= 1:
        raise UserError("the control rate must be below 1")
    pool = [
        int(p or 0)
        for p in session.exec(
            select(Pair.id).where(Pair.study_id == study_id, col(Pair.control).in_(MIXED_KINDS))
        )
    ]
    if not pool:
        return []
    uses: Counter[int] = Counter(dict.fromkeys(pool, 0))
    sides: dict[int, Counter[str]] = defaultdict(Counter)
    for pair_id, side in session.exec(
        select(Assignment.pair_id, Assignment.chosen_side).where(col(Assignment.pair_id).in_(pool))
    ).all():
        uses[pair_id] += 1
        sides[pair_id][side] += 1
    target = min(len(pool), round(rate * n_main / (1 - rate)))
    chosen = sorted(pool, key=lambda p: (uses[p], rng.random()))[:target]
    picked = []
    for pair_id in chosen:
        count = sides[pair_id]
        side = "A" if count["A"] < count["B"] else "B" if count["B"] < count["A"] else rng.choice("AB")
        picked.append((pair_id, side))
    return picked


def held_back(session: Session, *, account: Account, study_id: int) -> set[int]:
    """The annotator's pending swapped repeats that may not be served yet: their original is not
    finished, or was finished fewer than `[controls] min_gap` items ago (the next item served would
    come less than min_gap items after it). One indexed read when the queue holds no repeat: the
    queue's rows are tested against the set of the study's repeat pairs, never joined to their pairs
    one by one (the cost of a next item must not grow with the queue)."""
    repeat_pairs = select(Pair.id).where(Pair.study_id == study_id, Pair.control == SWAP)
    pending = session.exec(
        select(Assignment.id, Assignment.pair_id).where(
            Assignment.annotator_id == account.id,
            Assignment.study_id == study_id,
            Assignment.status == PENDING,
            col(Assignment.pair_id).in_(repeat_pairs),
        )
    ).all()
    if not pending:
        return set()
    source_of = dict(
        session.exec(
            select(Pair.id, Pair.control_of).where(col(Pair.id).in_({pair_id for _, pair_id in pending}))
        ).all()
    )
    repeats = [(assignment_id, source_of.get(pair_id)) for assignment_id, pair_id in pending]
    min_gap = study_config(session, study_id).controls.min_gap
    finished = session.exec(
        select(Assignment.pair_id)
        .where(
            Assignment.annotator_id == account.id,
            Assignment.study_id == study_id,
            col(Assignment.status).in_((DONE, FLAGGED)),
            col(Assignment.completed_at).is_not(None),
        )
        .order_by(col(Assignment.completed_at), col(Assignment.id))
    ).all()
    where = {int(pair_id): index for index, pair_id in enumerate(finished)}
    return {
        int(assignment_id or 0)
        for assignment_id, source in repeats
        if source is None or int(source) not in where or len(finished) - where[int(source)] < min_gap
    }
