"""What every command shares: the Typer app and its groups, the consoles, the options, the one
error rule (a user mistake is one line and exit 1), opening the database.

Start-up rule: this module and every command module import only Typer, Rich and the standard library at
module level; each command imports the services it calls inside its body, so `annotator --help` and a
light command never load SQLAlchemy, pandas or SciPy."""

import functools
import math
import os
import sqlite3
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.text import Text
from typer.exceptions import TyperException

from annotator import textguard
from annotator.errors import DEBUG_ENV, UserError, one_line, os_failure

if TYPE_CHECKING:  # the database stack loads only for the commands that use it
    from rich.progress import Progress
    from sqlalchemy.engine import Engine

app = typer.Typer(
    help="Validate personalized preference pairs with human annotators.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

users_app = typer.Typer(help="Create, list, deactivate, reactivate, unlock accounts.", no_args_is_help=True)

app.add_typer(users_app, name="users")

controls_app = typer.Typer(help="Control pairs: swapped repeats, degraded responses, duplicates.")

app.add_typer(controls_app, name="controls")

models_app = typer.Typer(help="Reward-model predictions on a study's pairs.", no_args_is_help=True)

app.add_typer(models_app, name="models")

judges_app = typer.Typer(
    help="LLM judges' ratings on a study's pairs, compared with people.", no_args_is_help=True
)

app.add_typer(judges_app, name="judges")

study_app = typer.Typer(help="Archive, restore or delete a study.", no_args_is_help=True)

app.add_typer(study_app, name="study")


class _Shown:
    """``sys.stdout`` or ``sys.stderr`` as it is at each write (a test may swap it), every text written
    with its bidirectional controls and zero-width characters escaped (a pair id or name read from a
    file cannot reorder or hide what the terminal shows; Rich already drops control characters)."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def stream(self) -> Any:
        return getattr(sys, self.name)

    @property
    def encoding(self) -> str:
        return str(getattr(self.stream, "encoding", None) or "utf-8")

    def write(self, text: str) -> int:
        return int(self.stream.write(textguard.escape_invisible(text)))

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return bool(self.stream.isatty())

    def fileno(self) -> int:
        return int(self.stream.fileno())


out = Console(file=_Shown("stdout"), soft_wrap=True, markup=False)  # type: ignore[arg-type]

err = Console(file=_Shown("stderr"), markup=False, soft_wrap=True)  # type: ignore[arg-type]  # one line per message

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Database URL (default: $ANNOTATOR_DB_URL or sqlite:///data/annotations.db)"),
]

MAX_LINK_DAYS = 3650  # ten years: a later expiry is a typo, and a far one overflows the clock's dates


def finite(value: float | None) -> float | None:
    """The rule of every number option: a finite number (nan and inf are refused before anything runs)."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, got {value}")
    return value


StudyOption = Annotated[str, typer.Option("--study", "-s", help="Study name.")]


def web_address(value: str) -> str:
    """The rule of --base-url: an http(s) address with a host, a valid port, no spaces and no query or
    fragment (the link appends "/?token=...": after a "?" or "#" the token is no query the app reads),
    as a link's user opens it."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
        usable = usable and "?" not in value and "#" not in value
    except ValueError:  # e.g. an unclosed "[" read as an IPv6 address, a port above 65535
        usable = False
    if not usable or not value.isprintable() or any(c.isspace() for c in value):
        raise typer.BadParameter(
            f"must be an http:// or https:// address with a host (no ? or # part), got {value!r}"
        )
    return value


BaseUrlOption = Annotated[
    str, typer.Option(callback=web_address, help="The app's address as the link's user reaches it")
]
LinkDaysOption = Annotated[
    float, typer.Option(callback=finite, help=f"Days the link stays valid (at most {MAX_LINK_DAYS})")
]


def link_address(base_url: str, parameter: str, token: str) -> str:
    """The app's address with a single-use link's token as the query `parameter`."""
    from urllib.parse import quote

    return f"{base_url.rstrip('/')}/?{parameter}={quote(token)}"


def link_lifetime(days: float) -> timedelta:
    """How long a single-use link stays valid (--days); a non-positive value is a user mistake."""
    if not 0 < days <= MAX_LINK_DAYS:
        raise UserError(f"--days must be positive and at most {MAX_LINK_DAYS}, got {days}")
    return timedelta(days=days)


def print_link(
    database: str | None, issue: Callable[..., str], parameter: str, base_url: str, days: float, **kwargs: Any
) -> None:
    """Issue a single-use link valid for `days` (`issue(session, **kwargs, valid_for=...)` by the system
    account) and print the app's address with its token as the query `parameter`."""
    token = as_system(database, issue, **kwargs, valid_for=link_lifetime(days))
    out.print(link_address(base_url, parameter, token), highlight=False)


MaxBytesOption = Annotated[
    int,
    typer.Option(
        "--max-bytes",
        help="The most decoded text to read from the file (bytes; default 512 MB, as the browser's upload)",
    ),
]


def user_errors(command: F) -> F:
    """Turn a user mistake, a database fault or a lack of memory into one clear line and exit code 1."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except UserError as exc:
            err.print(Text.assemble(("error:", "bold red"), f" {exc}"), highlight=False, soft_wrap=True)
        except MemoryError:
            err.print(
                Text.assemble(
                    ("error:", "bold red"), " not enough memory for this; nothing partial was saved"
                ),
                highlight=False,
                soft_wrap=True,
            )
        except (typer.Exit, typer.Abort, TyperException):  # the command line's own exits and usage errors
            raise
        except Exception as exc:
            from sqlalchemy.exc import DatabaseError

            from annotator.store import db

            if isinstance(exc, DatabaseError | sqlite3.DatabaseError):
                if isinstance(exc, sqlite3.DatabaseError):  # the raw driver (e.g. the backup API)
                    exc = DatabaseError(None, None, exc)
                said = Text.assemble(("database error:", "bold red"), f" {db.describe_error(exc)}")
            elif os.environ.get(DEBUG_ENV) == "1":
                raise
            else:  # a fault no check foresaw (e.g. a row edited outside the tool): one line, not a traceback
                said = Text.assemble(
                    ("unexpected error:", "bold red"),
                    f" {one_line(exc)} (set {DEBUG_ENV}=1 for the traceback)",
                )
            err.print(said, highlight=False, soft_wrap=True)
        except KeyboardInterrupt:
            err.print("interrupted; nothing partial was saved")
        raise typer.Exit(1)

    return wrapper  # type: ignore[return-value]


_global: dict[str, str | None] = {"db": None}


@app.callback()
def _main(database: DbOption = None) -> None:
    """Validate personalized preference pairs with human annotators."""
    _global["db"] = database


def db_url(url: str | None) -> str:
    """The database URL: the command's --db, else the global --db, else $ANNOTATOR_DB_URL or the default."""
    from annotator.store import db

    return db.resolve_url(url or _global["db"])


def open_db(url: str | None) -> "Engine":
    """An engine for a database that exists and is at the current schema: a missing SQLite file is one
    line and nothing is created (only `init` and `demo` create a database)."""
    from annotator.store import db

    engine = db.make_engine(db_url(url), create=False)
    db.check_schema(engine)
    return engine


def as_system(database: str | None, service: Callable[..., R], /, **kwargs: Any) -> R:
    """`service(session, **kwargs)` by the system account in one transaction of the database
    (opened as :func:`open_db` does); what it returns."""
    from annotator.people import authorization
    from annotator.store import db

    with db.session_scope(open_db(database)) as session:
        return service(session, **kwargs, account=authorization.SYSTEM)


def open_sound_db(url: str | None) -> "Engine":
    """An engine for a database at the current schema that passes SQLite's quick_check: a damaged file
    is one line and exit 1, never a report or an export read from it (analyze, export); a missing file
    is refused as :func:`open_db` refuses it."""
    from annotator.store import db

    engine = db.make_engine(db_url(url), create=False)
    db.check_integrity(engine)
    db.check_schema(engine)
    return engine


def progress_bar() -> "Progress":
    """A bar over the records on a terminal; nothing elsewhere."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,  # a log or a pipe gets no bar (and no blank line where it was)
    )


def writable_path(path: Path) -> None:
    """Refuse, in one line, an output path that cannot be written: its folder is missing or is no
    folder, or the path is a folder (checked before the work that would fill it)."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UserError(f"cannot write {path}: no folder {folder}")
    if path.is_dir():
        raise UserError(f"cannot write {path}: it is a folder")


def write_text(path: Path, text: str) -> None:
    """Write an output file, or explain in one line why it cannot be written."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise os_failure(f"cannot write {path}", exc) from None


def absolute_url(url: str) -> str:
    """A SQLite URL with an absolute path, so that the app finds the same file from any folder."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
        return parsed.set(database=str(Path(parsed.database).resolve())).render_as_string(hide_password=False)
    return url


QUEUE_FORMATS = ("table", "csv")
