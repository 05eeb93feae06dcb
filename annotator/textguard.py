"""Checks on imported text that both database engines must agree on.

SQLite stores almost anything; PostgreSQL refuses NUL bytes, over-long values and NaN in JSON with a
message naming no line or field. The importer checks these itself, the same way on both engines, and
parses JSON strictly (no NaN/Infinity, no nesting deeper than :data:`MAX_DEPTH`, no integer longer
than Python converts). Bidirectional overrides and zero-width characters, which can make a text read
differently from what it is, are reported as warnings (refused with ``--strict``).
"""

import json
import math
import re
from typing import Any

from analysis.vocabulary import NAME_CONTROLS, TEXT_CONTROLS
from annotator.errors import UserError
from annotator.store import environment

MAX_ID = 500  # Pair.external_id
MAX_CATEGORY = 200  # Pair.category
MAX_STUDY_NAME = 200  # Study.name
MAX_TEXT_ENV = "ANNOTATOR_MAX_TEXT_CHARS"
MAX_TEXT_DEFAULT = 1_000_000  # characters per text: far above any real response (a novel is ~500k)
MAX_DEPTH = 64  # nesting of JSON objects and lists in one record
#: The most decoded text one import reads (`--max-bytes`; the browser's upload takes the same):
#: a small compressed Parquet file can expand to gigabytes.
MAX_BYTES_DEFAULT = 512 * 1024 * 1024

INVISIBLE = {
    "\u202a": "LEFT-TO-RIGHT EMBEDDING",
    "\u202b": "RIGHT-TO-LEFT EMBEDDING",
    "\u202c": "POP DIRECTIONAL FORMATTING",
    "\u202d": "LEFT-TO-RIGHT OVERRIDE",
    "\u202e": "RIGHT-TO-LEFT OVERRIDE",
    "\u2066": "LEFT-TO-RIGHT ISOLATE",
    "\u2067": "RIGHT-TO-LEFT ISOLATE",
    "\u2068": "FIRST STRONG ISOLATE",
    "\u2069": "POP DIRECTIONAL ISOLATE",
    "\u200e": "LEFT-TO-RIGHT MARK",
    "\u200f": "RIGHT-TO-LEFT MARK",
    "\u061c": "ARABIC LETTER MARK",
    "\u200b": "ZERO WIDTH SPACE",
    "\u200c": "ZERO WIDTH NON-JOINER",
    "\u200d": "ZERO WIDTH JOINER",
    "\u2060": "WORD JOINER",
    "\ufeff": "ZERO WIDTH NO-BREAK SPACE",
}
_INVISIBLE = re.compile("[" + "".join(INVISIBLE) + "]")


def max_text_chars() -> int:
    """The longest text accepted in one field: $ANNOTATOR_MAX_TEXT_CHARS, else 1,000,000."""
    return environment.whole_number(
        MAX_TEXT_ENV, MAX_TEXT_DEFAULT, least=1, wording="a positive whole number of characters"
    )


def over_max_bytes(path: object, max_bytes: int, where: str) -> UserError:
    """The one-line error for an import that reached `max_bytes` of decoded text at `where`."""
    return UserError(
        f"{path}: {where}, the decoded text exceeds {max_bytes:,} bytes ({max_bytes / 2**20:,.0f} MB, "
        "--max-bytes); nothing was imported"
    )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (use null or a number)")


def loads(text: str) -> Any:
    """Strict JSON: NaN/Infinity refused; too deep nesting and too long integers are a ValueError
    with a readable message instead of a RecursionError or a traceback."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        message = str(exc)
        if "integer string conversion" in message or "digits" in message:
            raise ValueError("an integer with too many digits (over 4300)") from None
        raise
    depth = _depth(value)
    if depth > MAX_DEPTH:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    return value


def _depth(value: Any) -> int:
    """Nesting depth of lists and objects, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            items: Any = item.values()
        elif isinstance(item, list):
            items = item
        else:
            continue
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            return level
        stack.extend((child, level + 1) for child in items)
    return deepest


def value_problems(value: Any, where: str, *, limit: int) -> list[str]:
    """NUL characters, texts over `limit` characters, NaN/Infinity and too deep nesting in `value`."""
    problems: list[str] = []
    stack: list[tuple[Any, str, int]] = [(value, where, 1)]
    while stack and len(problems) < 5:
        item, path, level = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                problems.append(f"{path}: contains a NUL character")
            if len(item) > limit:
                problems.append(
                    f"{path}: {len(item):,} characters, over the limit of {limit:,} (${MAX_TEXT_ENV})"
                )
        elif isinstance(item, float) and not math.isfinite(item):
            problems.append(f"{path}: {item} is not a number JSON allows (use null)")
        elif isinstance(item, dict | list):
            if level > MAX_DEPTH:
                problems.append(f"{path}: nested more than {MAX_DEPTH} levels deep")
                continue
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                if isinstance(key, str) and "\x00" in key:
                    problems.append(f"{path}: a key contains a NUL character")
                child_path = f"{path}.{key}" if isinstance(item, dict) else f"{path}[{key}]"
                stack.append((child, child_path, level + 1))
    return problems


def invisible_characters(value: Any, where: str) -> list[str]:
    """Warnings naming the bidirectional controls and zero-width characters in `value`'s texts."""
    found: list[str] = []
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            hits = sorted({INVISIBLE[c] for c in _INVISIBLE.findall(item)})
            if hits:
                found.append(f"{path}: contains {', '.join(hits)} (the text may read differently than it is)")
        elif isinstance(item, dict):
            stack.extend((child, f"{path}.{key}") for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))
    return found


def strip_invisible(text: str) -> str:
    """`text` without bidirectional controls and zero-width characters (for comparing texts)."""
    return _INVISIBLE.sub("", text)


# ------------------------------------------------------------------------------ the one input rule

MAX_INPUT = 20_000  # characters in a text typed into the app (a comment, a reason, a note)
MAX_NAME = 200  # characters in a name (a login name, a study or model name)


def input_problem(text: str, *, name: bool = False, limit: int | None = None) -> str | None:
    """What is wrong with a text the app or the CLI takes from a person, or None: the one rule for every
    such text, checked in Python so that SQLite and PostgreSQL accept exactly the same.

    A NUL (which PostgreSQL refuses and SQLite stores) or another control character (a name: any, a
    free text: any but tab and line breaks), half of a UTF-16 surrogate pair, or more than `limit`
    characters (default :data:`MAX_NAME` for a name, :data:`MAX_INPUT` for a text).

    >>> input_problem("fine, thanks\\n")
    >>> input_problem("a\\x00b")
    'contains a NUL character (a control character)'
    >>> input_problem("two\\nlines", name=True)
    'contains a control character (e.g. a line break or a tab)'
    """
    limit = limit if limit is not None else MAX_NAME if name else MAX_INPUT
    if "\x00" in text:
        return "contains a NUL character (a control character)"
    if (NAME_CONTROLS if name else TEXT_CONTROLS).search(text):
        return "contains a control character" + (" (e.g. a line break or a tab)" if name else "")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "contains an invalid character (half of a UTF-16 surrogate pair)"
    if len(text) > limit:
        return f"has {len(text):,} characters; at most {limit:,}"
    return None


def check_input(text: str, what: str, *, limit: int | None = None) -> str:
    """`text` (a free text: comment, reason, note) if it passes :func:`input_problem`, else a UserError
    naming `what`."""
    problem = input_problem(text, limit=limit)
    if problem is not None:
        raise UserError(f"{what} {problem}")
    return text


def check_name(text: str, what: str, *, limit: int | None = None) -> str:
    """`text` (a one-line name) if it passes :func:`input_problem` as a name, else a UserError naming
    `what`."""
    problem = input_problem(text, name=True, limit=limit)
    if problem is not None:
        raise UserError(f"{what} {problem}")
    return text


def stripped_name(raw: str, what: str, limit: int) -> str:
    """`raw` without surrounding white space, refused (a UserError naming `what`) when that leaves it
    empty or longer than `limit` characters."""
    name = raw.strip()
    if not name:
        raise UserError(f"{what} is empty")
    if len(name) > limit:
        raise UserError(f"{what} is longer than {limit} characters")
    return name


def check_study_name(name: str) -> None:
    """Refuse a study name that is empty, too long or holds a NUL or control character."""
    if not name.strip():
        raise UserError("the study name is empty")
    if len(name) > MAX_STUDY_NAME:
        raise UserError(f"the study name has {len(name)} characters; at most {MAX_STUDY_NAME}")
    check_name(name, "the study name", limit=MAX_STUDY_NAME)


def quoted(text: str, limit: int = 80) -> str:
    """`text` quoted for a one-line message: cut to `limit` characters, with its length when cut (a
    10,000-character name is not repeated whole).

    >>> quoted("a" * 100, 5)
    "'aaaaa'... (100 characters)"
    """
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text):,} characters)"


def shown(value: object, limit: int = 40) -> str:
    """Any value for a one-line message: text as `quoted`, anything else as written, each cut to
    `limit` characters with its length when cut.

    >>> shown("9" * 50, 3), shown(10**50, 3)
    ("'999'... (50 characters)", '100... (51 characters)')
    """
    if isinstance(value, str):
        return quoted(value, limit)
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def has_invisible(text: str) -> bool:
    """Whether `text` holds a bidirectional control or a zero-width character (one regex pass)."""
    return _INVISIBLE.search(text) is not None


def escape_invisible(text: str) -> str:
    """`text` with each bidirectional control or zero-width character written as its ``\\uXXXX``
    escape, so that a terminal shows it instead of reordering or hiding the text around it.

    >>> escape_invisible("rtl\u202eevil")
    'rtl\\\\u202eevil'
    """
    if not has_invisible(text):
        return text
    return _INVISIBLE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
