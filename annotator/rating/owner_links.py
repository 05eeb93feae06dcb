"""Single-use links for profile owners: a researcher makes one per owner of a study; it expires, can be
revoked, is spent on first use, and every step is in the audit log (Event). Redeeming it gives the
owner's session: the study and the owner, nothing else (an owner is not an account and reaches only
the pairs of their own profile, :func:`annotator.rating.owners.owner_pairs`)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from datetime import timedelta

from sqlmodel import Session, col, select, update

from annotator import textguard
from annotator.errors import AuthError, UserError
from annotator.people.authorization import Account, record_event, require_role
from annotator.rating.owners import owner_pairs
from annotator.store.models import Event, OwnerLink, Study, id_of, utcnow
from annotator.study import get_study

__all__ = [
    "ENDED",
    "OwnerSession",
    "hold_owner_session",
    "issue_owner_link",
    "list_owner_links",
    "redeem_owner_link",
    "resume_owner_session",
    "revoke_owner_links",
]


#: Why an owner's page that was open can no longer be used.
ENDED = "this owner page has expired or was revoked; ask the researcher for a new link"


@dataclass(frozen=True)
class OwnerSession:
    """Who is rating: an owner of one study; `resume` (after a link is redeemed) resumes this session
    after a reload until the link expires or is revoked (:func:`resume_owner_session`)."""

    study: str
    owner: str
    resume: str = field(default="", compare=False, repr=False)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def issue_owner_link(
    session: Session, *, study: str, owner: str, account: Account, valid_for: timedelta = timedelta(days=7)
) -> str:
    """A new single-use token for `owner` of `study` (researchers or SYSTEM); only its hash is stored."""
    require_role(session, account, "researcher")
    if not owner_pairs(session, study=study, owner=owner):
        raise UserError(f"study {study!r} has no pairs whose owner is {textguard.quoted(owner)}")
    token = secrets.token_urlsafe(24)
    study_id = id_of(get_study(session, study))
    session.add(
        OwnerLink(study_id=study_id, owner=owner, token_hash=_digest(token), expires_at=utcnow() + valid_for)
    )
    record_event(session, account, "owner_link_issued", {"study": study, "owner": owner})
    return token


def redeem_owner_link(session: Session, token: str) -> OwnerSession:
    """The owner's session for a token: spent on use (its hash is replaced by the hash of the session's
    own `resume` token); refused when unknown, used, revoked or expired."""
    link = session.exec(select(OwnerLink).where(OwnerLink.token_hash == _digest(token))).first()
    if link is None:
        session.add(Event(user_id=None, action="owner_link_failed", detail={"reason": "bad token"}))
        session.commit()
        raise AuthError("this owner link is not valid or was already used")
    resume = secrets.token_urlsafe(24)
    spent = session.execute(
        update(OwnerLink)
        .where(
            col(OwnerLink.id) == link.id,
            col(OwnerLink.token_hash).is_not(None),
            col(OwnerLink.used_at).is_(None),
        )
        .values(token_hash=_digest(resume), used_at=utcnow())
    )
    session.commit()  # spent even when refused below; a second redeemer finds no token
    study = session.get(Study, link.study_id)
    detail = {"study": study.name if study else "", "owner": link.owner}
    if spent.rowcount != 1:  # type: ignore[attr-defined]
        raise AuthError("this owner link is not valid or was already used")
    if link.revoked_at is not None or link.expires_at < utcnow():
        session.add(Event(user_id=None, action="owner_link_failed", detail=detail | {"reason": "expired"}))
        raise AuthError("this owner link has expired or was revoked")
    session.add(Event(user_id=None, action="owner_login", detail=detail))
    return OwnerSession(study=detail["study"], owner=link.owner, resume=resume)


def resume_owner_session(session: Session, resume: str) -> OwnerSession:
    """The owner's session again (a reload of their page) from its `resume` token, while the link it
    came from is neither expired nor revoked."""
    link = session.exec(
        select(OwnerLink).where(OwnerLink.token_hash == _digest(resume), col(OwnerLink.used_at).is_not(None))
    ).first()
    if link is None or link.revoked_at is not None or link.expires_at < utcnow():
        raise AuthError(ENDED)
    study = session.get(Study, link.study_id)
    return OwnerSession(study=study.name if study else "", owner=link.owner, resume=resume)


def hold_owner_session(session: Session, who: OwnerSession) -> None:
    """Hold the link `who` came from until the transaction ends (a revoke waits for it), or AuthError
    when it was revoked or has expired since: an answer saved after it is written in the same
    transaction, so a page open from a revoked link cannot save."""
    held = session.execute(
        update(OwnerLink)
        .where(
            col(OwnerLink.token_hash) == _digest(who.resume),
            col(OwnerLink.used_at).is_not(None),
            col(OwnerLink.revoked_at).is_(None),
            col(OwnerLink.expires_at) >= utcnow(),
        )
        .values(owner=OwnerLink.owner)
        .execution_options(synchronize_session=False)
    )
    if held.rowcount != 1:  # type: ignore[attr-defined]
        raise AuthError(ENDED)


def list_owner_links(session: Session, *, study: str, account: Account) -> list[dict[str, object]]:
    """The links of `study`: owner, created, expires, used, revoked, and whether it still works."""
    require_role(session, account, "researcher")
    links = session.exec(
        select(OwnerLink)
        .where(OwnerLink.study_id == id_of(get_study(session, study)))
        .order_by(col(OwnerLink.id))
    ).all()
    now = utcnow()
    return [
        {
            "owner": link.owner,
            "created_at": link.created_at,
            "expires_at": link.expires_at,
            "used_at": link.used_at,
            "revoked_at": link.revoked_at,
            "open": link.used_at is None
            and link.token_hash is not None
            and link.revoked_at is None
            and link.expires_at >= now,
        }
        for link in links
    ]


def revoke_owner_links(session: Session, *, study: str, owner: str, account: Account) -> int:
    """Revoke every link of `owner` in `study` still unused or in use (an owner's page open from it is
    ended); returns how many."""
    require_role(session, account, "researcher")
    if not owner_pairs(session, study=study, owner=owner):  # a mistyped owner is named, not "0 revoked"
        raise UserError(f"study {study!r} has no pairs whose owner is {textguard.quoted(owner)}")
    result = session.execute(
        update(OwnerLink)
        .where(
            col(OwnerLink.study_id) == id_of(get_study(session, study)),
            col(OwnerLink.owner) == owner,
            col(OwnerLink.token_hash).is_not(None),
            col(OwnerLink.revoked_at).is_(None),
        )
        .values(token_hash=None, revoked_at=utcnow())
    )
    n = int(result.rowcount)  # type: ignore[attr-defined]
    record_event(session, account, "owner_link_revoked", {"study": study, "owner": owner, "n": n})
    return n
