"""Authorization, the one home: who is calling (:class:`Account`, the trusted :data:`SYSTEM`, a user
row's account :func:`account_of`), whether the caller's role may do a thing (:func:`require_role`),
whether the caller is still active (:func:`require_active`), and whether an item belongs to the caller
(:func:`own_assignment`, :func:`check_owner`); and who did what in the audit log (:func:`record_event`)."""

from dataclasses import dataclass
from typing import Any, Literal

from sqlmodel import Session, col, select

from annotator.errors import AuthError
from annotator.store.models import ROLES, Assignment, Event, Role, User, id_of

DEACTIVATED = "this account is deactivated; ask the study's researcher"
NOT_YOURS = "this item is not in your queue"
NO_ACCOUNT = "no account given: this call needs a logged-in user"

SystemRole = Literal["system"]


@dataclass(frozen=True)
class Account:
    """What the UI may keep about a logged-in user (no password hash)."""

    id: int
    username: str
    role: Role | SystemRole


# The trusted caller of the CLI and scripts: never stored, never loadable, accepted only as this object.
SYSTEM = Account(id=0, username="system", role="system")


def record_event(session: Session, account: Account, action: str, detail: dict[str, Any]) -> None:
    """Add the audit event of `account`'s `action` to the session (the system account's has no user)."""
    session.add(Event(user_id=account.id or None, action=action, detail=detail))


def _role(role: str) -> Role:
    """A role read from the database (never "system")."""
    for known in ROLES:
        if role == known:
            return known
    raise AuthError(f"account with an unknown role {role!r}")


def account_of(user: User) -> Account:
    """The Account of a user row: what a login, a session or the CLI acting as that user passes on."""
    return Account(id=id_of(user), username=user.username, role=_role(user.role))


def require_role(session: Session, account: Account, *roles: str) -> None:
    """Refuse a service call from an account without one of `roles`, or no longer active.

    :data:`SYSTEM` (the object itself) may do anything; any other account is re-read from the database
    (one indexed read), so a deactivated user's open browser is refused at its next call.
    """
    if account is SYSTEM:
        return
    if not isinstance(account, Account):
        raise AuthError(NO_ACCOUNT)
    if account.role not in roles:
        raise AuthError(f"{account.username} ({account.role}) may not do this; it needs {' or '.join(roles)}")
    row = session.exec(select(User.active, User.role).where(User.id == account.id)).first()
    if row is None or not row[0]:
        raise AuthError(DEACTIVATED if row is not None else "unknown account; please log in again")
    if row[1] != account.role:
        raise AuthError("this account's role has changed; please log in again")


def require_active(session: Session, account: Account) -> None:
    """Refuse a call from an account that is unknown or deactivated (one indexed read), so a
    deactivated user's open page is refused at its next call."""
    if not isinstance(account, Account):
        raise AuthError(NO_ACCOUNT)
    active = session.exec(select(User.active).where(User.id == account.id)).first()
    if not active:
        raise AuthError(DEACTIVATED if active is not None else "unknown account; please log in again")


def own_assignment(session: Session, assignment_id: int, account: Account) -> Assignment:
    """The assignment, if it belongs to this active account; else an AuthError (a deactivated
    annotator's open page is refused at its next call)."""
    require_active(session, account)
    assignment = session.get(Assignment, assignment_id)
    if assignment is None or assignment.annotator_id != account.id:
        raise AuthError(NOT_YOURS)
    return assignment


def check_owner(session: Session, assignment_id: int, account: Account) -> None:
    """The check of :func:`own_assignment` in one indexed read, for a write that needs no row (a
    draft kept on every answer): the item must be this account's and the account still active."""
    if not isinstance(account, Account):
        raise AuthError(NO_ACCOUNT)
    active = session.exec(
        select(User.active)
        .join(Assignment, col(Assignment.annotator_id) == User.id)
        .where(col(Assignment.id) == assignment_id, col(User.id) == account.id)
    ).first()
    if active is None:
        raise AuthError(NOT_YOURS)
    if not active:
        raise AuthError(DEACTIVATED)
