"""Crowd-platform links: Prolific, MTurk, or any platform that appends a worker id to a study link.

A worker opens ``<app>/?study=S&PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...`` (Prolific) or
``<app>/?study=S&workerId=...&assignmentId=...&hitId=...`` (MTurk; ``worker_id`` for "generic").
:func:`enter` creates (first visit) or resumes (later visits) a pseudonymous annotator account:

- the user name is derived from a keyed hash of the worker id (the study's secret
  `Study.pseudonym_key`), so the raw id is never stored nor shown on any page;
- the account has no usable password (its hash is not a hash), so it can only come back by its link;
- a link can create at most `[crowd] places` accounts per study (then it is refused);
- `[crowd] session_minutes` limits how long after the first visit the worker may keep working;
- the new account gets up to `[crowd] items` of the pairs that still need judgments (plus the study's
  controls at its rate).

The browser login itself goes through the hardening work's session service (annotator.sessions),
like any other login. :func:`completion` gives the finished screen its completion code and URL.
"""

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import func
from sqlmodel import Session, col, select

from annotator.accounts import Account
from annotator.assign import assign_pairs
from annotator.controls import mix_controls
from annotator.errors import AuthError, UserError
from annotator.readers import study_secret
from annotator.store.models import PENDING, Assignment, CrowdLink, Event, Pair, Study, User, id_of, utcnow
from annotator.study import get_study, parse_config

__all__ = [
    "TIME_OVER",
    "WORKER_PARAMS",
    "Completion",
    "check_time",
    "completion",
    "enter",
    "may_redirect",
    "time_left",
]

#: The URL parameter holding the worker id on each platform.
WORKER_PARAMS = {"prolific": "PROLIFIC_PID", "mturk": "workerId", "generic": "worker_id"}
#: The platform's study and session parameters (kept with the link entry for reconciliation).
STUDY_PARAMS = {"prolific": "STUDY_ID", "mturk": "hitId", "generic": "study_id"}
SESSION_PARAMS = {"prolific": "SESSION_ID", "mturk": "assignmentId", "generic": "session_id"}
_ID = re.compile(r"^[A-Za-z0-9_\-]{1,100}$")
NO_PASSWORD = "!crowd-link: no password login"
TIME_OVER = "the time for this study is over; thank you for taking part"


@dataclass(frozen=True)
class Completion:
    """What the finished screen shows a crowd worker."""

    code: str
    url: str


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


def enter(session: Session, *, study: str, params: Mapping[str, str]) -> Account:
    """The annotator account for a crowd link: created on the first visit, resumed afterwards.

    Raises UserError for a study without crowd links, a missing or malformed worker id, or when all
    places are taken; AuthError when the worker's time is up or the account was deactivated.
    """
    study_row = get_study(session, study)
    config = parse_config(study_row.config, source=f"study {study!r}").crowd
    if not config.platform or config.places <= 0:
        raise UserError("this study does not take participants from a crowd platform")
    worker = _parameter(params, config.worker_param or WORKER_PARAMS[config.platform], required=True)
    platform_study = _parameter(params, STUDY_PARAMS[config.platform], required=False)
    platform_session = _parameter(params, SESSION_PARAMS[config.platform], required=False)
    study_id = id_of(study_row)
    digest = hmac.new(
        study_secret(session, study_row), f"{config.platform}\x00{worker}".encode(), hashlib.sha256
    )
    worker_hash = digest.hexdigest()
    link = session.exec(
        select(CrowdLink).where(CrowdLink.study_id == study_id, CrowdLink.worker_hash == worker_hash)
    ).first()
    if link is not None:
        user = session.get(User, link.user_id)
        if user is None or not user.active:
            raise AuthError("this participation has been closed; please contact the researcher")
        if config.session_minutes and utcnow() - _utc(link.started_at) > timedelta(
            minutes=config.session_minutes
        ):
            raise AuthError(TIME_OVER)
        session.add(Event(user_id=user.id, action="crowd_resume", detail={"study": study}))
        return Account(id=id_of(user), username=user.username, role="annotator")
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
    _give_work(
        session, study, study_id, user.username, config.items, parse_config(study_row.config).analysis.overlap
    )
    mix_controls(session, study=study, rate=parse_config(study_row.config).controls.rate)
    session.add(
        Event(user_id=user.id, action="crowd_entry", detail={"study": study, "platform": config.platform})
    )
    session.flush()
    return Account(id=id_of(user), username=user.username, role="annotator")


def _give_work(session: Session, study: str, study_id: int, username: str, items: int, overlap: int) -> None:
    """The `items` main pairs with the fewest assignments (those still below the overlap first)."""
    counts = session.exec(
        select(Pair.id, func.count(col(Assignment.id)))
        .join(Assignment, col(Assignment.pair_id) == col(Pair.id), isouter=True)
        .where(Pair.study_id == study_id, Pair.control == "")
        .group_by(col(Pair.id))
    ).all()
    ranked = sorted((int(n), int(pair_id or 0)) for pair_id, n in counts)
    needed = [pair_id for n, pair_id in ranked if n < overlap] or [pair_id for _, pair_id in ranked]
    assign_pairs(session, study=study, annotator=username, pair_ids=needed[:items], seed=len(ranked))


def _link(session: Session, account: Account, study_id: int) -> CrowdLink | None:
    return session.exec(
        select(CrowdLink).where(CrowdLink.user_id == account.id, CrowdLink.study_id == study_id)
    ).first()


def time_left(session: Session, *, account: Account, study_id: int) -> timedelta | None:
    """How long a crowd worker may still work in the study (None: no limit, or not a crowd worker)."""
    link = _link(session, account, study_id)
    study = session.get(Study, study_id)
    if link is None or study is None:
        return None
    minutes = parse_config(study.config).crowd.session_minutes
    if not minutes:
        return None
    return max(timedelta(0), _utc(link.started_at) + timedelta(minutes=minutes) - utcnow())


def check_time(session: Session, *, user_id: int, study_id: int, session_minutes: int) -> None:
    """Raise AuthError when a crowd worker's session time in the study is over (labels.submit calls it).

    `session_minutes` is the study's `[crowd] session_minutes` (0 = no limit: nothing is read).
    """
    if not session_minutes:
        return
    started = session.exec(
        select(CrowdLink.started_at).where(CrowdLink.user_id == user_id, CrowdLink.study_id == study_id)
    ).first()
    if started is not None and utcnow() - _utc(started) > timedelta(minutes=session_minutes):
        raise AuthError(
            "the time for this study is over, so this answer was not saved; thank you for taking part"
        )


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


def completion(session: Session, *, account: Account, study_id: int) -> Completion | None:
    """For a crowd worker whose queue is finished: the completion code and URL (recorded once)."""
    link = _link(session, account, study_id)
    study = session.get(Study, study_id)
    if link is None or study is None:
        return None
    pending = session.exec(
        select(func.count())
        .select_from(Assignment)
        .where(
            Assignment.annotator_id == account.id,
            Assignment.study_id == study_id,
            Assignment.status == PENDING,
        )
    ).one()
    if int(pending):
        return None
    if link.completed_at is None:
        link.completed_at = utcnow()
        session.add(link)
        session.add(Event(user_id=account.id, action="crowd_complete", detail={"study": study.name}))
    config = parse_config(study.config).crowd
    return Completion(code=config.completion_code, url=config.completion_url)
