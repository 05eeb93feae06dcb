"""Accounts: `annotator users ...`."""

import sys
from typing import Annotated

import typer
from rich.table import Table

from annotator.cli.common import (
    BaseUrlOption,
    DbOption,
    LinkDaysOption,
    as_system,
    open_db,
    out,
    print_link,
    user_errors,
    users_app,
)
from annotator.errors import UserError


@users_app.command("add")
@user_errors
def users_add(
    name: str,
    role: Annotated[str, typer.Option(help="annotator, adjudicator or researcher")] = "annotator",
    ask: Annotated[
        bool,
        typer.Option(
            "--password/--generate",
            help="Read the password from a prompt (or the first line of stdin); --generate prints a new one",
        ),
    ] = False,
    database: DbOption = None,
) -> None:
    """Create an account (the password is never a command-line argument: `ps` would show it)."""
    from annotator.people import accounts, authorization
    from annotator.store import db

    engine = open_db(database)
    secret = read_password() if ask else accounts.generate_password()
    with db.session_scope(engine) as session:
        accounts.add_user(session, username=name, role=role, password=secret, account=authorization.SYSTEM)
    out.print(f"created {role} {name}", highlight=False)
    if not ask:
        out.print(f"password (shown once): {secret}", highlight=False)


def read_password() -> str:
    """A password from a hidden prompt (twice) on a terminal, else the first line of stdin."""

    try:
        if sys.stdin.isatty():
            return str(typer.prompt("password", hide_input=True, confirmation_prompt=True))
        return sys.stdin.readline().rstrip("\r\n")
    except UnicodeDecodeError:
        raise UserError("the password is not valid UTF-8 text") from None


@users_app.command("list")
@user_errors
def users_list(database: DbOption = None) -> None:
    """List accounts."""
    from annotator.people import accounts
    from annotator.store import db

    engine = open_db(database)
    with db.session_scope(engine) as session:
        users = accounts.list_users(session)
        table = Table("username", "role", "active", "created")
        for user in users:
            table.add_row(
                user.username, user.role, "yes" if user.active else "no", f"{user.created_at:%Y-%m-%d}"
            )
    out.print(table)


@users_app.command("deactivate")
@user_errors
def users_deactivate(name: str, database: DbOption = None) -> None:
    """Deactivate an account (its labels are kept; it can no longer log in)."""
    from annotator.people import accounts

    as_system(database, accounts.set_active, username=name, active=False)
    out.print(f"deactivated {name} (all of its sessions ended)", highlight=False)


@users_app.command("reactivate")
@user_errors
def users_reactivate(name: str, database: DbOption = None) -> None:
    """Reactivate a deactivated account."""
    from annotator.people import accounts

    as_system(database, accounts.set_active, username=name, active=True)
    out.print(f"reactivated {name}", highlight=False)


@users_app.command("reset-password")
@user_errors
def users_reset_password(name: str, database: DbOption = None) -> None:
    """Give an account a new generated password (printed once); ends its sessions."""
    from annotator.people import accounts

    secret = as_system(database, accounts.reset_password, username=name)
    out.print(f"new password for {name} (shown once): {secret}", highlight=False)


@users_app.command("unlock")
@user_errors
def users_unlock(name: str, database: DbOption = None) -> None:
    """Clear an account's wait after failed logins."""
    from annotator.people import accounts

    as_system(database, accounts.unlock, username=name)
    out.print(f"unlocked {name}", highlight=False)


@users_app.command("link")
@user_errors
def users_link(
    name: str,
    base_url: BaseUrlOption = "http://localhost:8501",
    days: LinkDaysOption = 7.0,
    database: DbOption = None,
) -> None:
    """Print a single-use login link for an account."""
    from annotator.people import accounts

    print_link(database, accounts.issue_login_token, "token", base_url, days, username=name)
