"""Serving blinded items and saving judgments: atomic, idempotent, append-only revisions."""

import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import case, func, insert, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from analysis.vocabulary import CONFIDENCE_DOMAIN, RUBRIC_DOMAIN, SUPPORT_PREFIX, rubric_item
from annotator import textguard
from annotator.errors import AuthError, LabelError, UserError
from annotator.intake import controls
from annotator.intake.assign import extend_overlap
from annotator.people.authorization import NOT_YOURS, Account, own_assignment, require_active
from annotator.people.training import needs_training, qualified
from annotator.rating import crowd
from annotator.rating.blinding import preference_index, response_of, side_of, side_texts, signed_preference
from annotator.rating.guidelines import guideline_version
from annotator.store import tallies
from annotator.store.db import lock_row
from annotator.store.models import (
    DONE,
    FLAGGED,
    PENDING,
    Assignment,
    Event,
    Judgment,
    Pair,
    Score,
    Study,
    id_of,
    utcnow,
)
from annotator.study import StudyConfig, parse_config, study_config

SIDES = ("A", "B")
QUEUE_WINDOW = 256  # how far ahead next_assignment looks for the pair with the fewest judgments


@dataclass(frozen=True)
class ItemView:
    """What the browser may see of one assignment: texts of A and B, never which one is `chosen`."""

    assignment_id: int
    study: str
    question: str
    narrative: str
    profile: list[dict[str, Any]]
    rubric: list[dict[str, str]]
    text_a: str
    text_b: str
    revisions: int
    profile_shown: int = 10  # how many posts the study shows at first (`profile` holds them all)
    shown_at: datetime | None = None  # when the item's clock started (server time, UTC)
    ask_support: bool = False  # ask, per rubric aspect, whether what the user wrote supports it
    #: A random name for this display of the item: what the page may use to tell items apart (page
    #: script, body attribute, widget keys); it says nothing about the assignment, pair or control.
    token: str = ""


@dataclass(frozen=True)
class Submission:
    """One filled-in form, in the annotator's A/B terms.

    `preference` is the index of the chosen label on the preference scale (0 = "A much better" ...
    4 = "B much better"); `scores` maps "A"/"B" to {item: value}, items being the quality dimension
    names and "rubric:<k>" for rubric aspect k. `submission_id` makes a repeated submit a no-op.
    """

    submission_id: str
    preference: int | None
    scores: dict[str, dict[str, float | None]]
    confidence: int | None = None
    comment: str = ""
    flag: bool = False
    flag_reason: str = ""
    opened_posts: tuple[int, ...] = ()  # the profile posts (by index) the annotator opened
    # Rubric support: {"support:<k>": 0 no | 1 partly | 2 yes}, about the pair, not a side.
    support: dict[str, float | None] = field(default_factory=dict)


def next_assignment(session: Session, *, account: Account, study_id: int) -> Assignment | None:
    """The annotator's next pending item: among the next QUEUE_WINDOW items of the queue (in queue
    order), the one whose pair has the fewest completed judgments.

    The window keeps the work per call constant whatever the queue length (an index range scan of at
    most QUEUE_WINDOW rows, then one indexed `n_done` lookup each), on SQLite and PostgreSQL alike;
    queues are shuffled at assignment, so the window is a fair sample of the remaining pairs.
    """
    require_active(session, account)
    held = controls.held_back(session, account=account, study_id=study_id)  # min_gap for repeats
    best = _next_in_queue(session, account=account, study_id=study_id, held=held)
    if best is None and held:  # nothing else is left: a repeat held back comes now rather than never
        best = _next_in_queue(session, account=account, study_id=study_id, held=set())
    return session.get(Assignment, best) if best is not None else None


def _next_in_queue(session: Session, *, account: Account, study_id: int, held: set[int]) -> int | None:
    window_rows = (
        select(Assignment.id, Assignment.pair_id, Assignment.position)
        .where(
            Assignment.annotator_id == account.id,
            Assignment.study_id == study_id,
            Assignment.status == PENDING,
        )
        .order_by(col(Assignment.position))
        .limit(QUEUE_WINDOW)
    )
    if held:
        window_rows = window_rows.where(col(Assignment.id).not_in(held))
    window = window_rows.subquery()
    # Control pairs are not ranked by need: one is served as soon as it comes before the main pair
    # picked (controls.mix_controls put it at a random place), so controls are spread over a session.
    best_main = session.exec(
        select(window.c.id, window.c.position)
        .join(Pair, col(Pair.id) == window.c.pair_id)
        .where(Pair.control == "")
        .order_by(col(Pair.n_done), window.c.position)
        .limit(1)
    ).first()
    control = select(window.c.id).join(Pair, col(Pair.id) == window.c.pair_id).where(Pair.control != "")
    if best_main is not None:
        control = control.where(window.c.position <= best_main[1])
    first_control = session.exec(control.order_by(window.c.position).limit(1)).first()
    best = first_control if first_control is not None else best_main[0] if best_main is not None else None
    return int(best) if best is not None else None


def show(session: Session, *, assignment_id: int, account: Account, resume: bool = False) -> ItemView:
    """The blinded view of an item; starts its server-side clock for time on task (`resume`: keep a
    clock that is already running, as after a reload)."""
    assignment = own_assignment(session, assignment_id, account)
    pair = session.get(Pair, assignment.pair_id)
    study = session.get(Study, assignment.study_id)
    if pair is None or study is None:
        raise UserError("this item no longer exists")
    config = parse_config(study.config)
    if needs_training(session, study_id=id_of(study), config=config.training) and not qualified(
        session, account=account, study_id=id_of(study)
    ):
        raise AuthError("please complete the training first; your items open once you pass it")
    if not resume or assignment.shown_at is None:
        assignment.shown_at = utcnow()
    session.add(assignment)
    return item_view(
        config,
        study=study.name,
        pair=pair,
        chosen_side=assignment.chosen_side,
        arm=assignment.arm,
        assignment_id=id_of(assignment),
        revisions=assignment.revisions,
        shown_at=assignment.shown_at,
    )


def item_view(
    config: StudyConfig,
    *,
    study: str,
    pair: Any,
    chosen_side: str,
    arm: str = "",
    assignment_id: int = 0,
    revisions: int = 0,
    shown_at: datetime | None = None,
) -> ItemView:
    """What an annotator in `arm` is shown of `pair` (a Pair, or any object with its fields: question,
    narrative, profile, rubric, chosen, rejected) with chosen on `chosen_side`: the one rule of what
    the rating page shows, also for a study's preview before it exists."""
    texts = side_texts(chosen_side, chosen=pair.chosen, rejected=pair.rejected)
    shown = config.display_for(arm)  # the annotator's study arm may hide parts
    return ItemView(
        assignment_id=assignment_id,
        study=study,
        question=pair.question,
        narrative=pair.narrative if shown.show_narrative else "",
        profile=list(pair.profile) if shown.show_profile else [],
        rubric=[
            {
                "aspect": str(a.get("aspect", "")),
                "reason": str(a.get("reason") or ""),
                "evidence": str(a.get("evidence") or ""),
            }
            for a in (pair.rubric if shown.show_rubric else [])
        ],
        text_a=texts[0],
        text_b=texts[1],
        revisions=revisions,
        profile_shown=config.display.profile_posts,
        shown_at=shown_at,
        ask_support=shown.ask_support and bool(pair.rubric),
        token="i" + secrets.token_hex(8),
    )


def missing_answers(
    config: StudyConfig, n_aspects: int, submission: Submission, *, ask_support: bool = False
) -> list[str]:
    """Every question of the form left unanswered or out of range, named as the annotator sees it
    (`ask_support`: the rubric-support question of every aspect too)."""
    problems = _support_problems(n_aspects if ask_support else 0, submission)
    unknown_sides = set(submission.scores) - set(SIDES)
    if unknown_sides:  # submit() would otherwise save them as `rejected` scores
        problems.append(f"unknown responses {sorted(unknown_sides)}; use A and B")
    for side in SIDES:
        problems += _side_problems(config, n_aspects, side, submission.scores.get(side, {}))
    return problems + _decision_problems(submission)


def _support_problems(n_asked: int, submission: Submission) -> list[str]:
    """The rubric-support answers of the first `n_asked` aspects (none asked: none may be given)."""
    problems = []
    for k in range(n_asked):
        value = submission.support.get(f"{SUPPORT_PREFIX}{k}")
        if value is None:
            problems.append(f"rubric aspect {k + 1}: is it supported by what the user wrote")
        elif value not in RUBRIC_DOMAIN:
            problems.append(f"rubric aspect {k + 1}: support must be no, partly or yes")
    unknown = set(submission.support) - {f"{SUPPORT_PREFIX}{k}" for k in range(n_asked)}
    if unknown:
        problems.append(f"unknown support items {sorted(unknown)}")
    return problems


def _side_problems(
    config: StudyConfig, n_aspects: int, side: str, given: dict[str, float | None]
) -> list[str]:
    """One response's quality dimensions and rubric aspects, and any item the study does not ask."""
    problems = []
    quality = config.quality
    for dimension in quality.dimensions:
        value = given.get(dimension.name)
        scale = quality.scale_of(dimension)
        if value is None:
            problems.append(f"Response {side}: {dimension.name}")
        elif value not in scale:
            problems.append(f"Response {side}: {dimension.name} must be {scale.text()}")
    for k in range(n_aspects):
        value = given.get(rubric_item(k))
        if value is None:
            problems.append(f"Response {side}: rubric aspect {k + 1}")
        elif value not in RUBRIC_DOMAIN:
            problems.append(f"Response {side}: rubric aspect {k + 1} must be 0, 1 or 2")
    unknown = set(given) - set(config.dimension_names) - {rubric_item(k) for k in range(n_aspects)}
    if unknown:
        problems.append(f"Response {side}: unknown items {sorted(unknown)}")
    return problems


def _decision_problems(submission: Submission) -> list[str]:
    """The preference, the confidence, and the reason a problem flag needs."""
    problems = []
    if submission.preference is None:
        problems.append("which response better fits this user")
    elif submission.preference not in range(5):
        problems.append("preference must be one of the five choices")
    if submission.confidence is None:
        problems.append("confidence")
    elif submission.confidence not in CONFIDENCE_DOMAIN:
        problems.append("confidence must be 1, 2 or 3")
    if submission.flag and not submission.flag_reason.strip():
        problems.append("a reason for the problem flag")
    return problems


def submit(session: Session, *, assignment_id: int, account: Account, submission: Submission) -> Judgment:
    """Save a judgment and its scores in one transaction; A/B are mapped to chosen/rejected here.

    A repeated `submission_id` returns the judgment saved the first time. Submitting an item that
    already has a judgment adds a revision (the newest is current); earlier revisions are kept.
    Concurrent submits of one item (two tabs, a double click in two processes) are serialized by
    `_lock_assignment`, so each gets the next revision number and the newest is current.
    """
    earlier = _saved(session, submission.submission_id)
    if earlier is not None:
        own_assignment(session, earlier.assignment_id, account)
        return earlier
    assignment = own_assignment(session, assignment_id, account)
    pair_id = assignment.pair_id
    config = _checked_config(session, assignment, account, submission)
    _lock_assignment(session, id_of(assignment))
    earlier = _saved(session, submission.submission_id)  # saved by another process while we waited
    if earlier is not None:
        own_assignment(session, earlier.assignment_id, account)
        return earlier
    current = session.exec(
        select(Assignment.status, Judgment.time_on_task_s)
        .outerjoin(Judgment, col(Judgment.id) == col(Assignment.current_judgment_id))
        .where(col(Assignment.id) == assignment.id)
    ).first()
    if current is None:  # unassigned by the researcher while this submit waited for the lock
        raise AuthError(NOT_YOURS)
    status, before = current
    now = utcnow()
    shown = assignment.shown_at or now
    if shown.tzinfo is None:
        shown = shown.replace(tzinfo=now.tzinfo)
    revision = (
        int(
            session.exec(
                select(func.coalesce(func.max(Judgment.revision), 0)).where(
                    Judgment.assignment_id == assignment.id
                )
            ).one()
        )
        + 1
    )
    judgment = Judgment(
        assignment_id=id_of(assignment),
        revision=revision,
        submission_id=submission.submission_id,
        submitted_at=now,
        time_on_task_s=max(0.0, (now - shown).total_seconds()),
        preference=signed_preference(int(submission.preference or 0), chosen_side=assignment.chosen_side),
        confidence=submission.confidence,
        comment=submission.comment.strip(),
        flag=submission.flag,
        flag_reason=submission.flag_reason.strip() if submission.flag else "",
        opened_posts=sorted({int(k) for k in submission.opened_posts}) or None,
        guideline_version=guideline_version(),
    )
    session.add(judgment)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        same = session.exec(
            select(Judgment).where(Judgment.submission_id == submission.submission_id)
        ).first()
        if same is not None:
            return same
        raise UserError("this item was just saved from another window; reload to see it") from None
    _add_scores(session, id_of(judgment), submission, chosen_side=assignment.chosen_side)
    first = status != DONE
    session.execute(
        update(Assignment)
        .where(col(Assignment.id) == assignment.id)
        .values(
            status=DONE,
            completed_at=now,
            current_judgment_id=judgment.id,
            revisions=revision,
            shown_at=None,
        )
    )
    if first:
        session.execute(update(Pair).where(col(Pair.id) == pair_id).values(n_done=Pair.n_done + 1))
    session.add(
        Event(user_id=account.id, action="submit", detail={"judgment": judgment.id, "revision": revision})
    )
    session.flush()
    extended = None
    if config.dynamic_overlap.max_overlap > 0:  # disagreeing pairs get another annotator
        extended = extend_overlap(session, pair_id=pair_id, config=config)
        session.flush()
    tallies.submitted(  # one update of both annotators' tallies, in id order: no lock waits in a circle
        session,
        study_id=assignment.study_id,
        annotator_id=assignment.annotator_id,
        status=status,
        before=before,
        seconds=judgment.time_on_task_s,
        at=now,
        also_assigned=[] if extended is None else [extended],
    )
    return judgment


def _checked_config(
    session: Session, assignment: Assignment, account: Account, submission: Submission
) -> StudyConfig:
    """The study's config, once the submission passes every check before it is saved: the item still
    exists, a crowd worker's time is not over, every question is answered, and its texts keep the
    input rule."""
    # the pair's rubric only (not its long texts: the item on screen has them)
    rubric = session.exec(select(Pair.rubric).where(col(Pair.id) == assignment.pair_id)).first()
    if rubric is None:
        raise UserError("this item no longer exists")
    config = study_config(session, assignment.study_id)
    crowd.check_time(  # a crowd worker's session limit holds on submit too, not only on the page
        session, account=account, study_id=assignment.study_id, session_minutes=config.crowd.session_minutes
    )
    arm = config.display_for(assignment.arm)  # an arm without the rubric asks no rubric questions
    n_aspects = len(rubric) if arm.show_rubric else 0
    problems = missing_answers(config, n_aspects, submission, ask_support=arm.ask_support)
    if problems:
        raise LabelError("Please answer: " + "; ".join(problems))
    textguard.check_input(submission.comment, "The comment")
    textguard.check_input(submission.flag_reason, "The reason for the problem flag")
    return config


def _add_scores(session: Session, judgment_id: int, submission: Submission, *, chosen_side: str) -> None:
    """The judgment's scores, A/B mapped to chosen/rejected; rubric support (about the pair) is stored
    on the `chosen` response. One multi-row INSERT (no ORM object per score)."""
    answers = [
        (response_of(side, chosen_side=chosen_side), given) for side, given in submission.scores.items()
    ]
    answers.append(("chosen", submission.support))
    rows = [
        {"judgment_id": judgment_id, "response": response, "item": item, "value": float(value or 0)}
        for response, items in answers
        for item, value in items.items()
    ]
    if rows:
        session.execute(insert(Score), rows)


def _saved(session: Session, submission_id: str) -> Judgment | None:
    return session.exec(select(Judgment).where(Judgment.submission_id == submission_id)).first()


def _lock_assignment(session: Session, assignment_id: int) -> None:
    """Hold the item until the transaction ends, so that the reads after it see every committed revision.

    PostgreSQL: a row lock (SELECT ... FOR UPDATE) on the assignment; reads in READ COMMITTED then see
    what a concurrent submit of the same item committed. SQLite: a no-op UPDATE of the row, which takes
    the database's write lock (waiting up to the busy timeout) before the revision number is read;
    without it two processes could read the same highest revision and collide on (assignment, revision).
    """
    lock_row(session, Assignment, assignment_id, "revisions")


def skip(session: Session, *, assignment_id: int, account: Account, reason: str) -> None:
    """Move an item to the end of the annotator's queue, with a reason."""
    if not reason.strip():
        raise LabelError("Please give a reason for skipping")
    textguard.check_input(reason, "The reason for skipping")
    assignment = own_assignment(session, assignment_id, account)
    crowd.enforce_time(session, account=account, study_id=assignment.study_id)
    lock_row(session, Assignment, id_of(assignment), "revisions")  # the skip count read, then written
    session.refresh(assignment)
    if assignment.skip_count == 0:
        tallies.add(session, assignment.study_id, {(assignment.annotator_id, "skipped", 0): (1, 0.0)})
    last = session.exec(
        select(func.max(Assignment.position)).where(
            Assignment.annotator_id == account.id, Assignment.study_id == assignment.study_id
        )
    ).one()
    assignment.position = int(last or 0) + 1
    assignment.skip_count += 1
    assignment.skip_reason = reason.strip()
    assignment.shown_at = None
    session.add(assignment)
    session.add(Event(user_id=account.id, action="skip", detail={"assignment": assignment.id}))


@dataclass(frozen=True)
class Progress:
    """An annotator's progress in one study."""

    done: int
    total: int
    skipped: int
    flagged: int = 0  # flagged as broken: out of the queue, with the researcher


def progress(session: Session, *, account: Account, study_id: int) -> Progress:
    """How many of an annotator's items are done, in all and skipped (still pending)."""
    require_active(session, account)
    rows = session.exec(
        select(Assignment.status, func.count(), func.sum(case((col(Assignment.skip_count) > 0, 1), else_=0)))
        .where(Assignment.annotator_id == account.id, Assignment.study_id == study_id)
        .group_by(Assignment.status)
    ).all()
    done = sum(n for status, n, _ in rows if status == DONE)
    skipped = sum(int(s or 0) for status, _, s in rows if status == PENDING)
    flagged = sum(n for status, n, _ in rows if status == FLAGGED)
    return Progress(done=done, total=sum(n for _, n, _ in rows), skipped=skipped, flagged=flagged)


def finished_items(session: Session, *, account: Account, study_id: int) -> list[dict[str, Any]]:
    """The annotator's finished items (newest first), for "My work": no chosen/rejected information."""
    require_active(session, account)
    rows = session.exec(
        select(Assignment, Pair.question)
        .join(Pair, col(Pair.id) == Assignment.pair_id)
        .where(
            Assignment.annotator_id == account.id, Assignment.study_id == study_id, Assignment.status == DONE
        )
        .order_by(col(Assignment.completed_at).desc())
    ).all()
    return [
        {
            "assignment_id": a.id,
            "question": question,
            "completed_at": a.completed_at,
            "revisions": a.revisions,
        }
        for a, question in rows
    ]


def current_answers(session: Session, *, assignment_id: int, account: Account) -> Submission | None:
    """The current judgment of an item in the annotator's A/B terms, to prefill a revision."""
    assignment = own_assignment(session, assignment_id, account)
    if assignment.current_judgment_id is None:
        return None
    judgment = session.get(Judgment, assignment.current_judgment_id)
    if judgment is None:
        return None
    scores: dict[str, dict[str, float | None]] = {"A": {}, "B": {}}
    support: dict[str, float | None] = {}
    for score in session.exec(select(Score).where(Score.judgment_id == judgment.id)):
        if score.item.startswith(SUPPORT_PREFIX):
            support[score.item] = score.value
            continue
        scores[side_of(score.response, chosen_side=assignment.chosen_side)][score.item] = score.value
    return Submission(
        submission_id="",
        preference=preference_index(judgment.preference, chosen_side=assignment.chosen_side),
        scores=scores,
        confidence=judgment.confidence,
        comment=judgment.comment,
        flag=judgment.flag,
        flag_reason=judgment.flag_reason,
        support=support,
    )


def studies_with_open_items(session: Session, *, account: Account) -> set[int]:
    """The ids of the studies in which the annotator still has an item to rate."""
    rows = session.exec(
        select(Assignment.study_id)
        .where(Assignment.annotator_id == account.id, Assignment.status == PENDING)
        .distinct()
    ).all()
    return {int(i) for i in rows}


def annotator_studies(session: Session, *, account: Account) -> list[tuple[int, str]]:
    """The studies in use (not archived) in which the annotator has items, as (id, name)."""
    rows = session.exec(
        select(Study.id, Study.name)
        .join(Assignment, col(Assignment.study_id) == Study.id)
        .where(Assignment.annotator_id == account.id, col(Study.archived_at).is_(None))
        .distinct()
        .order_by(Study.name)
    ).all()
    return [(int(i or 0), name) for i, name in rows]
