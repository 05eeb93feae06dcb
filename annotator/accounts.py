"""Users, roles, password hashing (salted scrypt) and login."""

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlmodel import Session, select

from annotator.errors import AuthError, UserError
from annotator.store.models import ROLES, Event, User, utcnow

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
MIN_PASSWORD = 8
BAD_LOGIN = "wrong username or password"
FREE_ATTEMPTS = 5
MAX_LOCKOUT_S = 300


@dataclass(frozen=True)
class Account:
    """What the UI may keep about a logged-in user (no password hash)."""

    id: int
    username: str
    role: str


def hash_password(password: str) -> str:
    """A salted, memory-hard scrypt hash in the form scrypt$n$r$p$salt$hash."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)
    encode = base64.b64encode
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${encode(salt).decode()}${encode(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    """Check a password against its stored hash, in constant time."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(
            password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=len(expected)
        )
    except ValueError:
        return False
    return hmac.compare_digest(actual, expected)


def generate_password() -> str:
    """A strong random password (about 96 bits)."""
    return secrets.token_urlsafe(12)


def add_user(
    session: Session, *, username: str, role: str, password: str, account: Account | None = None
) -> User:
    """Create an account; refuses a bad name, an unknown role, a short password or a taken name.

    With an `account` (the app), only a researcher may create accounts.
    """
    if account is not None:
        require_role(account, "researcher")
    if not USERNAME.match(username):
        raise UserError(
            f"invalid username {username!r}: use letters, digits and _ . @ - (at most 100 characters)"
        )
    if role not in ROLES:
        raise UserError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")
    if len(password) < MIN_PASSWORD:
        raise UserError(f"the password must have at least {MIN_PASSWORD} characters")
    if session.exec(select(User).where(User.username == username)).first() is not None:
        raise UserError(f"user {username!r} already exists")
    user = User(username=username, role=role, password_hash=hash_password(password))
    session.add(user)
    session.flush()
    session.add(Event(user_id=user.id, action="user_add", detail={"username": username, "role": role}))
    return user


def get_user(session: Session, username: str) -> User:
    """The user called `username`, or a clear error."""
    user = session.exec(select(User).where(User.username == username)).first()
    if user is None:
        raise UserError(f"no user called {username!r}")
    return user


def list_users(session: Session, *, role: str | None = None) -> list[User]:
    """All users (optionally of one role), by name."""
    query = select(User).order_by(User.username)
    if role is not None:
        query = query.where(User.role == role)
    return list(session.exec(query))


def set_active(session: Session, *, username: str, active: bool, account: Account | None = None) -> User:
    """Deactivate (or reactivate) an account; its labels are kept. With an `account`, researchers only."""
    if account is not None:
        require_role(account, "researcher")
    user = get_user(session, username)
    user.active = active
    session.add(user)
    session.add(Event(user_id=user.id, action="user_activate" if active else "user_deactivate", detail={}))
    return user


def lockout_seconds(failed_logins: int) -> int:
    """Seconds an account waits after `failed_logins` failures in a row (doubling from the 5th, max 5 min)."""
    return (
        0 if failed_logins < FREE_ATTEMPTS else min(MAX_LOCKOUT_S, 2 ** (failed_logins - FREE_ATTEMPTS + 1))
    )


def _refuse(session: Session, user_id: int | None, reason: str, message: str) -> AuthError:
    """Record a failed login (committed even though the caller raises) and build the error."""
    session.add(Event(user_id=user_id, action="login_failed", detail={"reason": reason}))
    session.commit()
    return AuthError(message)


def authenticate(session: Session, username: str, password: str) -> Account:
    """Log in: the account, or AuthError with a message fit to show (unknown and wrong look alike).

    Failures are logged in the audit table; from the fifth failure in a row the account must wait
    (doubling, at most five minutes) before the next attempt is even checked.
    """
    user = session.exec(select(User).where(User.username == username)).first()
    if user is None:
        verify_password(password, hash_password("timing-equaliser"))
        raise _refuse(session, None, "unknown user", BAD_LOGIN)
    wait = lockout_seconds(user.failed_logins)
    if wait and user.last_failed_at is not None:
        remaining = wait - (utcnow() - user.last_failed_at).total_seconds()
        if remaining > 0:
            raise _refuse(
                session,
                user.id,
                "throttled",
                f"too many failed attempts; try again in {int(remaining) + 1} s",
            )
    if not verify_password(password, user.password_hash):
        user.failed_logins += 1
        user.last_failed_at = utcnow()
        session.add(user)
        raise _refuse(session, user.id, "wrong password", BAD_LOGIN)
    if not user.active:
        raise _refuse(
            session, user.id, "deactivated", "this account is deactivated; ask the study's researcher"
        )
    user.failed_logins = 0
    session.add(user)
    session.add(Event(user_id=user.id, action="login", detail={}))
    return Account(id=int(user.id or 0), username=user.username, role=user.role)


def issue_login_token(session: Session, *, username: str, valid_for: timedelta = timedelta(days=7)) -> str:
    """A single-use login token for a crowd worker's link; only its hash is stored."""
    user = get_user(session, username)
    token = secrets.token_urlsafe(24)
    user.token_hash = hashlib.sha256(token.encode()).hexdigest()
    user.token_expires_at = utcnow() + valid_for
    session.add(user)
    session.add(Event(user_id=user.id, action="token_issued", detail={}))
    return token


def redeem_login_token(session: Session, token: str) -> Account:
    """Log in with a one-time token: it is spent on use and refused once expired."""
    digest = hashlib.sha256(token.encode()).hexdigest()
    user = session.exec(select(User).where(User.token_hash == digest)).first()
    if user is None or user.token_expires_at is None:
        raise _refuse(session, None, "bad token", "this login link is not valid or was already used")
    user.token_hash = None
    session.add(user)
    if user.token_expires_at < utcnow():
        raise _refuse(session, user.id, "expired token", "this login link has expired")
    if not user.active:
        raise _refuse(
            session, user.id, "deactivated", "this account is deactivated; ask the study's researcher"
        )
    session.add(Event(user_id=user.id, action="login", detail={"via": "token"}))
    return Account(id=int(user.id or 0), username=user.username, role=user.role)


def require_role(account: Account, *roles: str) -> None:
    """Refuse a service call from an account without one of `roles`."""
    if account.role not in roles:
        raise AuthError(f"{account.username} ({account.role}) may not do this; it needs {' or '.join(roles)}")


def acknowledge_guidelines(session: Session, *, user_id: int) -> None:
    """Record that an annotator has read the guidelines (once; the audit log keeps the moment)."""
    user = session.get(User, user_id)
    if user is None:
        raise UserError("unknown user")
    if user.guidelines_ack_at is None:
        user.guidelines_ack_at = utcnow()
        session.add(user)
        session.add(Event(user_id=user_id, action="guidelines_ack", detail={}))


def has_acknowledged(session: Session, *, user_id: int) -> bool:
    """Whether the annotator has acknowledged the guidelines."""
    user = session.get(User, user_id)
    return user is not None and user.guidelines_ack_at is not None
