"""Users and their accounts: creating and listing users, password hashing (Argon2id), login and its
throttling, single-use login tokens, the guidelines acknowledgement.

Who may call what lives in :mod:`annotator.people.authorization` (``Account``, ``SYSTEM``,
``require_role``): every service function that checks a role takes an explicit ``account``, the
logged-in user's (the app) or ``SYSTEM`` (the CLI, scripts, tests). This module exports only what it
defines.
"""

import base64
import hashlib
import hmac
import os
import re
import secrets
import threading
from datetime import datetime, timedelta
from functools import cache
from importlib import resources

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import func, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col, select

from annotator import textguard
from annotator.errors import AuthError, UserError
from annotator.people.authorization import (
    DEACTIVATED,
    SYSTEM,
    Account,
    account_of,
    require_active,
    require_role,
)
from annotator.store.models import ROLES, Event, LoginThrottle, User, UserSession, id_of, utcnow

__all__ = [
    "BAD_LOGIN",
    "FIRST_WAIT_S",
    "FREE_ATTEMPTS",
    "HASHER",
    "HASHING",
    "MAX_LOCKOUT_S",
    "MAX_PASSWORD",
    "MIN_PASSWORD",
    "THROTTLED",
    "USERNAME",
    "acknowledge_guidelines",
    "add_user",
    "authenticate",
    "check_new_password",
    "common_passwords",
    "generate_password",
    "get_user",
    "has_acknowledged",
    "hash_password",
    "issue_login_token",
    "list_users",
    "lockout_seconds",
    "needs_rehash",
    "redeem_login_token",
    "reset_password",
    "revoke_sessions",
    "set_active",
    "unlock",
    "verify_password",
]

# Argon2id with OWASP's parameters (m=46 MiB, t=1 is their floor; t=3 puts a login at ~0.1-0.2 s here).
HASHER = PasswordHasher(time_cost=3, memory_cost=47104, parallelism=1, hash_len=32, salt_len=16)
#: Argon2id runs at most this many at once (each takes 46 MiB and a core): a burst of logins queues here,
#: with no database connection held, instead of holding 100 x 46 MiB and starving the database's writers.
HASHING = threading.BoundedSemaphore(max(2, os.cpu_count() or 2))
USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
MIN_PASSWORD = 8
MAX_PASSWORD = 1000
BAD_LOGIN = "wrong username or password"
THROTTLED = "too many failed attempts; try again in {wait} s"
FREE_ATTEMPTS = 5  # failed logins per user name (known or not) and per client before waiting
FIRST_WAIT_S = 2  # then the wait doubles with every further failure ...
MAX_LOCKOUT_S = 300  # ... up to five minutes, so an outsider can never lock a user out for hours


def _utf8(password: str) -> bytes:
    try:
        return password.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UserError("the password is not valid UTF-8 text") from exc


def hash_password(password: str) -> str:
    """An Argon2id hash (PHC string: $argon2id$v=19$m=...,t=...,p=...$salt$hash)."""
    raw = _utf8(password)
    with HASHING:
        return HASHER.hash(raw)


def _verify_scrypt(password: bytes, stored: str) -> bool:
    """Check an old scrypt$n$r$p$salt$hash (upgraded to Argon2id at the next login)."""
    try:
        _scheme, n, r, p, salt, digest = stored.split("$")
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(
            password, salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=len(expected)
        )
    except ValueError:
        return False
    return hmac.compare_digest(actual, expected)


def verify_password(password: str, stored: str) -> bool:
    """Check a password against its stored hash (Argon2id, or an old scrypt hash), in constant time."""
    try:
        raw = password.encode("utf-8")
    except UnicodeEncodeError:
        raw = password.encode("utf-8", "surrogatepass")  # same work, never a match
        stored = _dummy_hash()
    if stored.startswith("scrypt$"):
        return _verify_scrypt(raw, stored)
    try:
        with HASHING:
            return HASHER.verify(stored, raw)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    """Whether a stored hash is older than the current scheme or parameters."""
    if not stored.startswith("$argon2id$"):
        return True
    try:
        return HASHER.check_needs_rehash(stored)
    except InvalidHashError:
        return True


@cache
def _dummy_hash() -> str:
    """A hash of a random password, verified for unknown user names so they cost the same as known ones."""
    return HASHER.hash(secrets.token_bytes(16))


@cache
def common_passwords() -> frozenset[str]:
    """The most common passwords (lower case), refused for new passwords: zxcvbn's list of the 30,000
    most frequent ones in public breaches, plus a few of this tool's own (annotator/common_passwords.txt)."""
    from zxcvbn.frequency_lists import FREQUENCY_LISTS

    breached = {word.lower() for word in FREQUENCY_LISTS["passwords"]}
    text = resources.files("annotator").joinpath("common_passwords.txt").read_text(encoding="utf-8")
    return frozenset(breached) | frozenset(
        line.strip().lower() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )


def check_new_password(password: str, *, username: str) -> None:
    """Refuse a password that is short, very common, equal to the user name or not UTF-8."""
    _utf8(password)
    if len(password) < MIN_PASSWORD:
        raise UserError(f"the password must have at least {MIN_PASSWORD} characters")
    if len(password) > MAX_PASSWORD:
        raise UserError(f"the password must have at most {MAX_PASSWORD} characters")
    lowered = password.lower()
    if lowered == username.lower():
        raise UserError("the password must not be the user name")
    if lowered in common_passwords():
        raise UserError("this password is one of the most common ones; choose another")


def generate_password() -> str:
    """A strong random password (about 96 bits)."""
    return secrets.token_urlsafe(12)


def _by_name(username: str) -> ColumnElement[bool]:
    return func.lower(User.username) == username.lower()


def add_user(session: Session, *, username: str, role: str, password: str, account: Account) -> User:
    """Create an account (researchers or SYSTEM only); refuses a bad or taken name (any letter case),
    an unknown role, or a weak password."""
    require_role(session, account, "researcher")
    if not USERNAME.fullmatch(username):
        raise UserError(
            f"invalid username {textguard.quoted(username)}: use letters, digits and _ . @ - (at most 100 "
            "characters)"
        )
    if role not in ROLES:
        raise UserError(f"unknown role {role!r}; use one of {', '.join(ROLES)}")
    check_new_password(password, username=username)
    taken = session.exec(select(User.username).where(_by_name(username))).first()
    if taken is not None:
        raise UserError(f"user {taken!r} already exists")
    user = User(username=username, role=role, password_hash=hash_password(password))
    session.add(user)
    try:
        session.flush()
    except IntegrityError:  # the same name was added at the same moment elsewhere
        session.rollback()
        raise UserError(f"user {username!r} already exists") from None
    session.add(
        Event(
            user_id=id_of(user),
            action="user_add",
            detail={"username": username, "role": role, "by": account.id},
        )
    )
    return user


def get_user(session: Session, username: str) -> User:
    """The user called `username` (any letter case), or a clear error."""
    user = session.exec(select(User).where(_by_name(username))).first()
    if user is None:
        raise UserError(f"no user called {textguard.quoted(username)}")
    return user


def list_users(session: Session, *, role: str | None = None) -> list[User]:
    """All users (optionally of one role), by name."""
    query = select(User).order_by(User.username)
    if role is not None:
        query = query.where(User.role == role)
    return list(session.exec(query))


def revoke_sessions(session: Session, user_id: int) -> int:
    """End every open browser session of a user; the number ended."""
    result = session.execute(
        update(UserSession)
        .where(col(UserSession.user_id) == user_id, col(UserSession.revoked_at).is_(None))
        .values(revoked_at=utcnow())
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def set_active(session: Session, *, username: str, active: bool, account: Account) -> User:
    """Deactivate (ending all its sessions) or reactivate an account; its labels are kept.
    Researchers or SYSTEM only."""
    require_role(session, account, "researcher")
    user = get_user(session, username)
    if account is not SYSTEM and user.id == account.id and not active:
        raise UserError("you cannot deactivate your own account")
    user.active = active
    session.add(user)
    ended = 0 if active else revoke_sessions(session, id_of(user))
    session.add(
        Event(
            user_id=user.id,
            action="user_activate" if active else "user_deactivate",
            detail={"by": account.id, "sessions_ended": ended},
        )
    )
    return user


def reset_password(session: Session, *, username: str, account: Account) -> str:
    """Give a user a new generated password (returned once, only its hash kept); ends their sessions
    and clears their login throttle. Researchers or SYSTEM only."""
    require_role(session, account, "researcher")
    user = get_user(session, username)
    password = generate_password()
    user.password_hash = hash_password(password)
    user.failed_logins = 0
    user.token_hash = None
    session.add(user)
    ended = revoke_sessions(session, id_of(user))
    _clear_throttle(session.connection(), _name_key(user.username))
    session.add(
        Event(user_id=user.id, action="password_reset", detail={"by": account.id, "sessions_ended": ended})
    )
    return password


def unlock(session: Session, *, username: str, account: Account) -> None:
    """Clear the failed-login wait of a user name at once. Researchers or SYSTEM only."""
    require_role(session, account, "researcher")
    user = get_user(session, username)
    user.failed_logins = 0
    session.add(user)
    _clear_throttle(session.connection(), _name_key(user.username))
    session.add(Event(user_id=user.id, action="user_unlock", detail={"by": account.id}))


def lockout_seconds(failed_logins: int) -> int:
    """Seconds to wait after `failed_logins` failures in a row (doubling from the 5th, max 5 min)."""
    if failed_logins < FREE_ATTEMPTS:
        return 0
    return min(MAX_LOCKOUT_S, FIRST_WAIT_S * 2 ** (failed_logins - FREE_ATTEMPTS))


def _name_key(username: str) -> str:
    return hashlib.sha256(f"name:{username.lower()}".encode("utf-8", "surrogatepass")).hexdigest()


def _client_key(client: str) -> str:
    return hashlib.sha256(f"client:{client}".encode("utf-8", "surrogatepass")).hexdigest()


def _clear_throttle(connection: Connection, key: str) -> None:
    connection.execute(
        update(LoginThrottle)
        .where(col(LoginThrottle.client_key) == key)
        .values(failures=0, last_failed_at=None)
    )


def _reserve(connection: Connection, key: str, now: datetime) -> int:
    """Count one attempt against `key` before its password is checked: 0, or the seconds still to wait.

    The row is locked first (an UPDATE: a row lock on PostgreSQL, the write lock on SQLite), then read and
    incremented in the same short transaction, so parallel attempts each see the others' counts.
    """
    dialect = connection.dialect.name
    builder = postgresql_insert if dialect == "postgresql" else sqlite_insert
    connection.execute(
        builder(LoginThrottle)
        .values(client_key=key, failures=0)
        .on_conflict_do_nothing(index_elements=["client_key"])
    )
    row = connection.execute(
        update(LoginThrottle)
        .where(col(LoginThrottle.client_key) == key)
        .values(failures=LoginThrottle.failures)  # take the lock
        .returning(col(LoginThrottle.failures), col(LoginThrottle.last_failed_at))
    ).one()
    failures, last = int(row[0]), row[1]
    if last is not None and last.tzinfo is None:
        last = last.replace(tzinfo=now.tzinfo)
    wait = lockout_seconds(failures)
    if wait and last is not None:
        remaining = wait - (now - last).total_seconds()
        if remaining > 0:
            return int(remaining) + 1
    connection.execute(
        update(LoginThrottle)
        .where(col(LoginThrottle.client_key) == key)
        .values(failures=LoginThrottle.failures + 1, last_failed_at=now)
    )
    return 0


def _log(session: Session, user_id: int | None, action: str, detail: dict[str, str]) -> None:
    """Write one audit event and commit it at once (kept even though the caller raises next)."""
    session.add(Event(user_id=user_id, action=action, detail=detail, at=utcnow()))
    session.commit()


def _known_session(session: Session, token: str | None, user_id: int) -> bool:
    """Whether `token` is a (possibly expired, never revoked) browser session of this user."""
    if not token:
        return False
    digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
    found = session.exec(
        select(UserSession.id).where(
            UserSession.token_hash == digest,
            UserSession.user_id == user_id,
            col(UserSession.revoked_at).is_(None),
        )
    ).first()
    return found is not None


def authenticate(
    session: Session,
    username: str,
    password: str,
    *,
    client: str | None = None,
    known_session: str | None = None,
) -> Account:
    """Log in: the account, or AuthError with a message fit to show.

    Unknown and known names cost the same work (one Argon2id verification) and get the same messages,
    the throttle included. Every attempt is counted atomically, before its password is checked, against
    the user name and (given `client`, e.g. the browser's address) the client: from the fifth failure in a
    row each must wait, doubling from 2 s up to 5 min. A correct password clears both counts. The
    name's wait is skipped for a browser that presents one of the user's own sessions (`known_session`),
    so an outsider cannot keep a user out; a researcher can also clear it (:func:`unlock`).
    Old scrypt hashes are upgraded to Argon2id at a successful login.

    A login uses one connection at a time, in short transactions: the attempt is counted and committed
    first (so a failure is recorded even though this raises), the Argon2id check runs with no connection
    held, and a failure's audit event is committed before the error is raised. The caller's session is
    therefore committed by this call.
    """
    now = utcnow()
    storable = len(username) <= 100 and textguard.input_problem(username, name=True) is None  # no NUL
    user = session.exec(select(User).where(_by_name(username))).first() if storable else None
    keys = [] if client is None else [_client_key(client)]
    if user is None or not _known_session(session, known_session, id_of(user)):
        keys.append(_name_key(username))
    connection = session.connection()  # the one connection of this login
    waits = [_reserve(connection, key, now) for key in keys]
    session.commit()  # the attempt is counted and its locks are free before any password work
    user_id = None if user is None else user.id
    if max(waits, default=0):
        _log(session, user_id, "login_failed", {"reason": "throttled"})
        raise AuthError(THROTTLED.format(wait=max(waits)))
    if user is None:
        verify_password(password, _dummy_hash())
        _log(session, None, "login_failed", {"reason": "unknown user"})
        raise AuthError(BAD_LOGIN)
    if not verify_password(password, user.password_hash):  # no connection is held meanwhile
        session.execute(
            update(User)
            .where(col(User.id) == user.id)
            .values(failed_logins=User.failed_logins + 1, last_failed_at=now)
        )
        _log(session, user_id, "login_failed", {"reason": "wrong password"})
        raise AuthError(BAD_LOGIN)
    connection = session.connection()
    for key in keys + [_name_key(username)]:
        _clear_throttle(connection, key)
    if not user.active:
        _log(session, user_id, "login_failed", {"reason": "deactivated"})
        raise AuthError(DEACTIVATED)
    user.failed_logins = 0
    if needs_rehash(user.password_hash):
        user.password_hash = hash_password(password)
    session.add(user)
    session.add(Event(user_id=user.id, action="login", detail={}))
    return account_of(user)


def issue_login_token(
    session: Session, *, username: str, account: Account, valid_for: timedelta = timedelta(days=7)
) -> str:
    """A single-use login token for a user's link (researchers or SYSTEM only); only its hash is stored."""
    require_role(session, account, "researcher")
    user = get_user(session, username)
    token = secrets.token_urlsafe(24)
    user.token_hash = hashlib.sha256(token.encode()).hexdigest()
    user.token_expires_at = utcnow() + valid_for
    session.add(user)
    session.add(Event(user_id=user.id, action="token_issued", detail={"by": account.id}))
    return token


def redeem_login_token(session: Session, token: str) -> Account:
    """Log in with a one-time token: it is spent on use and refused once expired."""
    digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
    user = session.exec(select(User).where(User.token_hash == digest)).first()
    if user is None or user.token_expires_at is None:
        _log(session, None, "login_failed", {"reason": "bad token"})
        raise AuthError("this login link is not valid or was already used")
    session.execute(update(User).where(col(User.id) == user.id).values(token_hash=None))
    session.commit()  # spent even when refused below
    user.token_hash = None
    if user.token_expires_at < utcnow():
        _log(session, user.id, "login_failed", {"reason": "expired token"})
        raise AuthError("this login link has expired")
    if not user.active:
        _log(session, user.id, "login_failed", {"reason": "deactivated"})
        raise AuthError(DEACTIVATED)
    session.add(Event(user_id=user.id, action="login", detail={"via": "token"}))
    return account_of(user)


def acknowledge_guidelines(session: Session, *, account: Account) -> None:
    """Record that an annotator has read the guidelines (once; the audit log keeps the moment)."""
    require_active(session, account)
    user = session.get(User, account.id)
    if user is None:
        raise UserError("unknown user")
    if user.guidelines_ack_at is None:
        user.guidelines_ack_at = utcnow()
        session.add(user)
        session.add(Event(user_id=account.id, action="guidelines_ack", detail={}))


def has_acknowledged(session: Session, *, account: Account) -> bool:
    """Whether the annotator has acknowledged the guidelines."""
    user = session.get(User, account.id)
    return user is not None and user.guidelines_ack_at is not None
