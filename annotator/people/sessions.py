"""Browser sessions: a random token per login, only its sha256 stored; sliding expiry; revocable.

The app keeps the token (e.g. across reloads) and calls :func:`resume_session` on every run, which
re-checks that the session is open and the user still active: deactivating a user or resetting their
password ends all of their sessions (:func:`annotator.people.accounts.set_active`, ``reset_password``).
"""

import hashlib
import secrets
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlmodel import Session, col, select

from annotator.errors import AuthError
from annotator.people.accounts import revoke_sessions
from annotator.people.authorization import Account, account_of
from annotator.store.models import Event, User, UserSession, utcnow

IDLE = timedelta(hours=12)  # a session unused this long has expired ...
MAX_AGE = timedelta(days=7)  # ... and none lasts longer than this
TOUCH_EVERY = timedelta(minutes=1)  # last_seen_at is written at most this often
ENDED = "your session has ended; please log in again"

__all__ = ["IDLE", "MAX_AGE", "end_all_sessions", "end_session", "resume_session", "start_session"]


def token_hash(token: str) -> str:
    """The sha256 (hex) under which a session token is stored."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=utcnow().tzinfo)


def start_session(session: Session, *, account: Account) -> str:
    """Open a session for a logged-in account; returns its random token (shown to no one but the browser)."""
    if account.role == "system" or account.id <= 0:
        raise AuthError("the system account has no browser sessions")
    token = secrets.token_urlsafe(32)
    now = utcnow()
    session.add(
        UserSession(
            token_hash=token_hash(token),
            user_id=account.id,
            created_at=now,
            last_seen_at=now,
            expires_at=now + IDLE,
        )
    )
    session.flush()
    return token


def resume_session(session: Session, token: str) -> Account:
    """The account of an open session, extending its idle expiry (at most MAX_AGE after it started).

    Raises AuthError when the token is unknown, expired or revoked, or the user is deactivated.
    """
    if not isinstance(token, str) or not token:
        raise AuthError(ENDED)
    row = session.exec(
        select(UserSession, User)
        .join(User, col(User.id) == UserSession.user_id)
        .where(UserSession.token_hash == token_hash(token))
    ).first()
    if row is None:
        raise AuthError(ENDED)
    user_session, user = row
    now = utcnow()
    if user_session.revoked_at is not None or _aware(user_session.expires_at) <= now:
        raise AuthError(ENDED)
    if not user.active:
        raise AuthError("this account is deactivated; ask the study's researcher")
    if now - _aware(user_session.last_seen_at) >= TOUCH_EVERY:
        user_session.last_seen_at = now
        user_session.expires_at = min(now + IDLE, _aware(user_session.created_at) + MAX_AGE)
        session.add(user_session)
    return account_of(user)


def end_session(session: Session, token: str) -> None:
    """Log out one session (no error if it is unknown or already ended)."""
    if not isinstance(token, str) or not token:
        return
    result = session.execute(
        update(UserSession)
        .where(col(UserSession.token_hash) == token_hash(token), col(UserSession.revoked_at).is_(None))
        .values(revoked_at=utcnow())
        .returning(col(UserSession.user_id))
    ).first()
    if result is not None:
        session.add(Event(user_id=int(result[0]), action="logout", detail={}))


def end_all_sessions(session: Session, *, account: Account) -> int:
    """Log an account out everywhere; the number of sessions ended."""
    return revoke_sessions(session, account.id)
