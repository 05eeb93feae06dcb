"""Exceptions for user mistakes: the CLI and the app show their message, never a traceback."""


class UserError(Exception):
    """A mistake the user can fix; the message says what and where."""


def os_failure(what: str, exc: BaseException) -> UserError:
    """The one line for a failure of the operating system (a full disk, no permission) or a file's
    bytes: what could not be done and the reason (an OSError's without its errno), never a traceback."""
    return UserError(f"{what}: {getattr(exc, 'strerror', None) or exc}")


def one_line(exc: BaseException) -> str:
    """An unexpected error as one short line: its kind and message (whitespace folded, at most 300
    characters)."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"


#: Set to 1 to see the traceback of an unexpected error instead of its one line.
DEBUG_ENV = "ANNOTATOR_DEBUG"


class ConfigError(UserError):
    """The study configuration is wrong; the message names the key."""


class IngestError(UserError):
    """A pair file is invalid; `problems` lists each bad line or row and field; `outcome` says what was
    not done (nothing imported, or nothing analysed for a file read only for a report)."""

    def __init__(
        self,
        path: str,
        problems: list[str],
        total: int | None = None,
        *,
        outcome: str = "nothing was imported",
    ) -> None:
        self.path = path
        self.problems = problems
        self.total = total if total is not None else len(problems)
        shown = "\n".join(f"  {p}" for p in problems)
        more = ""
        if total is not None and total > len(problems):
            more = f"\n  ... and {total - len(problems)} more problems"
        super().__init__(f"{path}: {total or len(problems)} problem(s), {outcome}\n{shown}{more}")


class AuthError(UserError):
    """Login failed or an account may not do what it asked."""


class LabelError(UserError):
    """A judgment is incomplete or does not fit the study's rating schema."""


class SchemaError(UserError):
    """The database is missing, not initialised, or from a newer version of this tool."""


class BusyError(UserError):
    """The server had no free database connection in time; trying again later works."""


class TimeOver(AuthError):
    """A crowd worker's `[crowd] session_minutes` are over: nothing more is saved as work."""
