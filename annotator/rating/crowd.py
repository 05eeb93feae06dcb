"""Crowd-platform links: Prolific, MTurk, or any platform that appends a worker id to a study link.

A worker opens ``<app>/?study=S&PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...`` (Prolific) or
``<app>/?study=S&workerId=...&assignmentId=...&hitId=...`` (MTurk; ``worker_id`` for "generic").
:func:`enter` creates (first visit) or resumes (later visits) a pseudonymous annotator account:

- the user name is derived from a keyed hash of the worker id (the study's secret
  `Study.pseudonym_key`), so the raw id is never stored nor shown on any page;
- the account has no usable password (its hash is not a hash), so it can only come back by its link;
- a link can create at most `[crowd] places` accounts per study (then it is refused): the place count
  and the insert are one serialized step (:func:`annotator.store.db.study_turn`), so parallel first
  visits never overrun the places, and one worker id gets one account whatever the number of tabs;
- `[crowd] session_minutes` limits how long after the first visit the worker may keep working;
- the new account gets up to `[crowd] items` of the pairs that still need judgments (under a registered
  two-stage or sequential design, those of the design's rule up to its budget:
  :mod:`annotator.rating.design_queue`), with the study's controls at its rate shuffled in among them
  (neither place nor row order tells a control apart);
- the completion code is given only for real work: at least `[crowd] min_rated` submitted items and at
  most `[crowd] max_flag_share` of the finished ones flagged; otherwise the worker gets a "no credit"
  screen and the reason goes to the audit log and the researcher's Progress page (:func:`outcomes`).

The browser login itself goes through the hardening work's session service (annotator.people.sessions),
like any other login. :func:`completion` gives the finished screen its completion code and URL.
"""

import hashlib
import hmac
import random
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sqlalchemy import func, insert
from sqlmodel import Session, col, select

from analysis.wording import counted
from annotator.errors import AuthError, ConfigError, TimeOver, UserError
from annotator.intake.assign import annotator_arms
from annotator.intake.controls import pick_controls
from annotator.people.authorization import Account, require_role
from annotator.people.pseudonyms import study_secret
from annotator.rating.design_queue import design_pairs
from annotator.store import tallies
from annotator.store.db import study_turn
from annotator.store.models import (
    DONE,
    FLAGGED,
    PENDING,
    Assignment,
    CrowdLink,
    Event,
    Pair,
    Study,
    User,
    id_of,
    utcnow,
)
from annotator.study import Crowd, StudyConfig, get_study, parse_config

if TYPE_CHECKING:  # pandas loads with the researcher's table, never at a login
    import pandas as pd

__all__ = [
    "TIME_OVER",
    "WORKER_PARAMS",
    "Completion",
    "check_time",
    "completion",
    "enforce_time",
    "enter",
    "may_redirect",
    "outcomes",
    "time_left",
]

#: The URL parameter holding the worker id on each platform.
WORKER_PARAMS = {"prolific": "PROLIFIC_PID", "mturk": "workerId", "generic": "worker_id"}
#: Platforms whose worker ids ignore case (Prolific's are hexadecimal): one worker, one account.
CASE_INSENSITIVE_IDS = frozenset({"prolific"})
#: The platform's study and session parameters (kept with the link entry for reconciliation).
STUDY_PARAMS = {"prolific": "STUDY_ID", "mturk": "hitId", "generic": "study_id"}
SESSION_PARAMS = {"prolific": "SESSION_ID", "mturk": "assignmentId", "generic": "session_id"}
_ID = re.compile(r"^[A-Za-z0-9_\-]{1,100}$")
NO_PASSWORD = "!crowd-link: no password login"
TIME_OVER = "the time for this study is over; thank you for taking part"
LATE = "the time for this study is over, so this was not saved; thank you for taking part"
#: What the public link says about a study it cannot use (it names no study, key or setting).
NO_SUCH_LINK = "this study link is not valid; please open the study from the platform again"
CLOSED = "this study link cannot be used at the moment; please contact the researcher"
#: A registered adaptive design has given out its budget (or waits for its first stage to come in).
NO_WORK = "this study has no items for you at the moment; please return the study on the platform"


@dataclass(frozen=True)
class Completion:
    """What the finished screen shows a crowd worker: the code and URL, or no credit and why."""

    code: str
    url: str
    credited: bool = True
    reason: str = ""  # for no credit: what was missing, in the worker's words


def _parameter(params: Mapping[str, str], name: str, *, required: bool) -> str:
    value = str(params.get(name, "") or "").strip()
    if not value:
        if required:
            raise UserError(f"this link has no {name}; please open the study from the platform again")
        return ""
    if not _ID.match(value):
        raise UserError(f"this link's {name} is not valid; please open the study from the platform again")
    return value


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _over(started: datetime, minutes: int) -> bool:
    return bool(minutes) and utcnow() - _utc(started) > timedelta(minutes=minutes)


def _linked_study(session: Session, name: str) -> tuple[Study, StudyConfig]:
    """The study behind a public link and its config; errors name nothing internal (no other study,
    no key, no setting). An archived study's link is closed."""
    study_row = session.exec(select(Study).where(Study.name == name)).first() if len(name) <= 200 else None
    if study_row is None:
        raise UserError(NO_SUCH_LINK)
    if study_row.archived_at is not None:  # archived: no new work, nobody resumes
        raise UserError(CLOSED)
    try:
        config = parse_config(study_row.config)
    except ConfigError:
        raise UserError(CLOSED) from None
    if not config.crowd.platform or config.crowd.places <= 0:
        raise UserError("this study does not take participants from a crowd platform")
    return study_row, config


def _worker_hash(secret: bytes, platform: str, worker: str) -> str:
    return hmac.new(secret, f"{platform}\x00{worker}".encode(), hashlib.sha256).hexdigest()


def _find(session: Session, study_id: int, worker_hash: str) -> CrowdLink | None:
    return session.exec(
        select(CrowdLink).where(CrowdLink.study_id == study_id, CrowdLink.worker_hash == worker_hash)
    ).first()


def enter(session: Session, *, study: str, params: Mapping[str, str]) -> Account:
    """The annotator account for a crowd link: created on the first visit, resumed afterwards.

    A returning worker is looked up first without any lock. A first visit waits for its turn on the
    study (:func:`study_turn`: holding no database connection while it waits, then the study's
    database lock) before it reads anything it writes by: the pseudonym key (created once), the
    worker's link (another tab may just have made it), the number of places taken and the assignment
    counts the newcomer's queue is planned from; so parallel first visits are served one after another
    and can neither overrun the places, make two accounts for one worker id, nor leave a pair unrated
    while others get more than their overlap; a first visit is committed by this call. Prolific's
    worker ids are compared without case. Raises UserError for a link that cannot be used (naming
    nothing internal), a missing or malformed worker id, or when all places are taken; AuthError
    when the worker's time is up (unless their work is finished: they may come back to their code) or
    the account was closed.
    """
    study_row, study_config = _linked_study(session, study)
    config = study_config.crowd
    worker = _parameter(params, config.worker_param or WORKER_PARAMS[config.platform], required=True)
    if config.platform in CASE_INSENSITIVE_IDS:
        worker = worker.lower()
    platform_study = _parameter(params, STUDY_PARAMS[config.platform], required=False)
    platform_session = _parameter(params, SESSION_PARAMS[config.platform], required=False)
    study_id = id_of(study_row)
    link = None
    if study_row.pseudonym_key:  # the usual return visit: no lock
        link = _find(
            session, study_id, _worker_hash(study_secret(session, study_row), config.platform, worker)
        )
    if link is None:
        # The queue is planned under the lock: it reads the assignment counts that the previous
        # newcomer has just written, so a burst of first visits covers every pair evenly.
        with study_turn(session, study_id):
            worker_hash = _worker_hash(study_secret(session, study_row), config.platform, worker)
            link = _find(session, study_id, worker_hash)
            if link is None:
                queue = _plan_work(session, study_id, study_config, random.Random(secrets.randbits(64)))
                return _new_worker(
                    session, study_row, config, queue, worker_hash, platform_study, platform_session
                )
    user = session.get(User, link.user_id)
    if user is None or not user.active:
        raise AuthError("this participation has been closed; please contact the researcher")
    if (
        _over(link.started_at, config.session_minutes)
        and link.completed_at is None
        and not _decided(session, id_of(user), study_row.name)
    ):
        raise AuthError(TIME_OVER)
    session.add(Event(user_id=user.id, action="crowd_resume", detail={"study": study_row.name}))
    return Account(id=id_of(user), username=user.username, role="annotator")


def _new_worker(
    session: Session,
    study_row: Study,
    config: Crowd,
    queue: list[tuple[int, str]],
    worker_hash: str,
    platform_study: str,
    platform_session: str,
) -> Account:
    """Count the places and create the account (the caller holds the study's lock)."""
    study_id = id_of(study_row)
    taken = session.exec(
        select(func.count()).select_from(CrowdLink).where(CrowdLink.study_id == study_id)
    ).one()
    if int(taken) >= config.places:
        raise UserError("all places in this study are taken; please return the study on the platform")
    user = User(
        username=f"{config.platform[:2]}-{worker_hash[:12]}", role="annotator", password_hash=NO_PASSWORD
    )
    session.add(user)
    session.flush()
    session.add(
        CrowdLink(
            study_id=study_id,
            user_id=id_of(user),
            platform=config.platform,
            worker_hash=worker_hash,
            platform_study=platform_study,
            platform_session=platform_session,
        )
    )
    arm = annotator_arms(session, study_id=study_id, user_ids=[id_of(user)], seed=len(queue))[id_of(user)]
    rows = [
        {
            "study_id": study_id,
            "pair_id": pair_id,
            "annotator_id": id_of(user),
            "chosen_side": side,
            "position": position,
            "arm": arm,
        }
        for position, (pair_id, side) in enumerate(queue, start=1)
    ]
    if rows:
        session.execute(insert(Assignment), rows)
        tallies.assigned(session, rows)
    session.add(
        Event(
            user_id=user.id,
            action="crowd_entry",
            detail={"study": study_row.name, "platform": config.platform},
        )
    )
    session.flush()
    return Account(id=id_of(user), username=user.username, role="annotator")


def _plan_work(
    session: Session, study_id: int, config: StudyConfig, rng: random.Random
) -> list[tuple[int, str]]:
    """A newcomer's queue as (pair, side of `chosen`): `[crowd] items` main pairs, each on its
    less-seen side, and the study's controls at its rate, shuffled into one order (positions 1..n,
    rows inserted in that order, so neither place nor id tells a control apart).

    The main pairs: under a registered two-stage or sequential design those of its rule
    (:func:`annotator.rating.design_queue.design_pairs`: the first stage, then the picked pairs, up to
    the budget; none when the budget is given out, and the worker is told so); else the pairs with
    the fewest assignments (those still below the overlap first)."""
    items, overlap = config.crowd.items, config.analysis.overlap
    if config.allocation.design != "fixed":
        mains = design_pairs(session, study_id, config, items)
        if not mains:
            raise UserError(NO_WORK)
    else:
        counts = session.exec(
            select(Pair.id, func.count(col(Assignment.id)))
            .join(Assignment, col(Assignment.pair_id) == col(Pair.id), isouter=True)
            .where(Pair.study_id == study_id, Pair.control == "")
            .group_by(col(Pair.id))
        ).all()
        ranked = sorted((int(n), rng.random(), int(pair_id or 0)) for pair_id, n in counts)
        needed = [p for n, _, p in ranked if n < overlap] or [p for _, _, p in ranked]
        mains = needed[:items]
    sides: dict[int, list[str]] = {pair_id: [] for pair_id in mains}
    for pair_id, side in session.exec(
        select(Assignment.pair_id, Assignment.chosen_side).where(col(Assignment.pair_id).in_(mains))
    ).all():
        sides[int(pair_id)].append(side)
    queue = [
        (
            pair_id,
            "A"
            if sides[pair_id].count("A") < sides[pair_id].count("B")
            else "B"
            if sides[pair_id].count("B") < sides[pair_id].count("A")
            else rng.choice("AB"),
        )
        for pair_id in mains
    ]
    queue += pick_controls(session, study_id=study_id, n_main=len(mains), rate=config.controls.rate, rng=rng)
    rng.shuffle(queue)
    return queue


def _link(session: Session, user_id: int, study_id: int) -> CrowdLink | None:
    return session.exec(
        select(CrowdLink).where(CrowdLink.user_id == user_id, CrowdLink.study_id == study_id)
    ).first()


def _started(session: Session, user_id: int, study_id: int) -> datetime | None:
    """When a crowd worker first came to the study (None: not a crowd worker there); one indexed read."""
    return session.exec(
        select(CrowdLink.started_at).where(CrowdLink.user_id == user_id, CrowdLink.study_id == study_id)
    ).first()


def time_left(session: Session, *, account: Account, study_id: int) -> timedelta | None:
    """How long a crowd worker may still work in the study (None: no limit, or not a crowd worker)."""
    link = _link(session, account.id, study_id)
    study = session.get(Study, study_id)
    if link is None or study is None:
        return None
    minutes = parse_config(study.config).crowd.session_minutes
    if not minutes:
        return None
    return max(timedelta(0), _utc(link.started_at) + timedelta(minutes=minutes) - utcnow())


def check_time(session: Session, *, account: Account, study_id: int, session_minutes: int) -> None:
    """Raise TimeOver when a crowd worker's session time in the study is over (labels.submit calls it).

    `session_minutes` is the study's `[crowd] session_minutes` (0 = no limit: nothing is read).
    """
    if not session_minutes:
        return
    started = _started(session, account.id, study_id)
    if started is not None and _over(started, session_minutes):
        raise TimeOver(LATE)


def enforce_time(session: Session, *, account: Account, study_id: int) -> None:
    """Raise TimeOver for a crowd worker past the study's time limit (skip and flag call it); one
    indexed read for anyone who did not come from a link."""
    started = _started(session, account.id, study_id)
    if started is None:
        return
    study = session.get(Study, study_id)
    if study is not None and _over(started, parse_config(study.config).crowd.session_minutes):
        raise TimeOver(LATE)


def may_redirect(url: str) -> bool:
    """Whether the finished screen may send the browser to `url`: any https address, or plain http
    only to this machine (127.0.0.1 / localhost, for a local trial run); never another scheme."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return False
    if parts.scheme == "https":
        return bool(host)
    return parts.scheme == "http" and host in ("127.0.0.1", "localhost", "::1")


def _decided(session: Session, user_id: int, study: str) -> bool:
    """Whether a worker already got their completion screen or a "no credit" one in the study."""
    rows = session.exec(
        select(Event.detail).where(
            Event.user_id == user_id, col(Event.action).in_(("crowd_complete", "crowd_no_credit"))
        )
    ).all()
    return any(isinstance(detail, dict) and detail.get("study") == study for detail in rows)


def no_credit_reason(rated: int, flagged: int, config: Crowd) -> str:
    """Why finished work earns no completion code ("" when it does): too few rated items, or too
    large a share of the finished ones flagged as broken."""
    finished = rated + flagged
    if rated < config.min_rated:
        needed = config.min_rated
        return f"{counted(rated, 'item')} rated (at least {needed} needed for the completion code)"
    if finished and flagged / finished > config.max_flag_share:
        return (
            f"{flagged} of {counted(finished, 'finished item')} flagged as broken (at most "
            f"{config.max_flag_share:.0%} may be, for the completion code)"
        )
    return ""


def completion(session: Session, *, account: Account, study_id: int) -> Completion | None:
    """For a crowd worker whose queue is finished: the completion code and URL (recorded once), or,
    for too little real work, no credit with the reason (recorded once in the audit log)."""
    link = _link(session, account.id, study_id)
    study = session.get(Study, study_id)
    if link is None or study is None:
        return None
    counts = dict(
        session.exec(
            select(Assignment.status, func.count())
            .where(Assignment.annotator_id == account.id, Assignment.study_id == study_id)
            .group_by(Assignment.status)
        ).all()
    )
    if int(counts.get(PENDING, 0)):
        return None
    config = parse_config(study.config).crowd
    if link.completed_at is None:
        reason = no_credit_reason(int(counts.get(DONE, 0)), int(counts.get(FLAGGED, 0)), config)
        if reason:
            if not _decided(session, account.id, study.name):
                session.add(
                    Event(
                        user_id=account.id,
                        action="crowd_no_credit",
                        detail={"study": study.name, "reason": reason},
                    )
                )
            return Completion(code="", url="", credited=False, reason=reason)
        link.completed_at = utcnow()
        session.add(link)
        session.add(Event(user_id=account.id, action="crowd_complete", detail={"study": study.name}))
    return Completion(code=config.completion_code, url=config.completion_url)


OUTCOME_COLUMNS = ["annotator", "started_at", "rated", "flagged", "pending", "outcome"]


def outcomes(session: Session, *, study: str, account: Account) -> "pd.DataFrame":
    """Every crowd worker of a study (for the researcher): annotator, started_at, rated, flagged,
    pending and the outcome ("completed", "no credit: <reason>", "working" or "time over")."""
    import pandas as pd

    require_role(session, account, "researcher")
    study_row = get_study(session, study)
    study_id = id_of(study_row)
    minutes = parse_config(study_row.config).crowd.session_minutes
    links = session.exec(
        select(CrowdLink, User.username)
        .join(User, col(User.id) == col(CrowdLink.user_id))
        .where(CrowdLink.study_id == study_id)
        .order_by(col(CrowdLink.started_at))
    ).all()
    if not links:  # not a crowd study (or nobody came yet): nothing to count
        return pd.DataFrame(columns=OUTCOME_COLUMNS)
    counts: dict[int, dict[str, int]] = {}
    for user_id, status, n in session.exec(
        select(Assignment.annotator_id, Assignment.status, func.count())
        .where(Assignment.study_id == study_id)
        .group_by(col(Assignment.annotator_id), col(Assignment.status))
    ).all():
        counts.setdefault(int(user_id), {})[str(status)] = int(n)
    reasons: dict[int, str] = {}
    for event_user, detail in session.exec(
        select(Event.user_id, Event.detail).where(Event.action == "crowd_no_credit")
    ).all():
        if event_user is not None and isinstance(detail, dict) and detail.get("study") == study_row.name:
            reasons[int(event_user)] = str(detail.get("reason", ""))
    rows = []
    for link, username in links:
        mine = counts.get(link.user_id, {})
        if link.completed_at is not None:
            outcome = "completed"
        elif link.user_id in reasons:
            outcome = f"no credit: {reasons[link.user_id]}"
        elif _over(link.started_at, minutes):
            outcome = "time over"
        else:
            outcome = "working"
        rows.append(
            (
                username,
                link.started_at,
                mine.get(DONE, 0),
                mine.get(FLAGGED, 0),
                mine.get(PENDING, 0),
                outcome,
            )
        )
    return pd.DataFrame(rows, columns=OUTCOME_COLUMNS)
