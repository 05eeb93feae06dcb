"""The annotator guidelines text (the package's defaults/guidelines.md, or $ANNOTATOR_GUIDELINES) and
its version.

The version is what every judgment records (`Judgment.guideline_version`), so agreement over time can
be read against guideline changes (analysis/drift.py). It is the value of a line ``Version: X`` (or
``<!-- version: X -->``) near the top of the file, else a short hash of the whole text, so any edit of
an unversioned file still shows up as a new version.
"""

import functools
import hashlib
import os
import re
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from annotator.errors import os_failure

#: The default guidelines, shipped inside the package (data/guidelines.md in a checkout is the same file).
DEFAULT_GUIDELINES: Traversable = files("annotator") / "defaults" / "guidelines.md"
ENV_VAR = "ANNOTATOR_GUIDELINES"
_VERSION = re.compile(r"^\s*(?:<!--\s*)?version\s*:\s*([\w.\-]{1,40})", re.IGNORECASE | re.MULTILINE)


def guidelines_text() -> str:
    """The guidelines in Markdown: $ANNOTATOR_GUIDELINES, else the package's default.

    A file that cannot be read is a UserError naming it: judgments must never record the version of a
    placeholder text that no annotator was meant to read.
    """
    chosen = os.environ.get(ENV_VAR, "").strip()
    source: Path | Traversable = Path(chosen) if chosen else DEFAULT_GUIDELINES
    try:
        if isinstance(source, Path):  # read again only when the file changed (a page draws it often)
            stat = source.stat()
            return _read(str(source), stat.st_mtime_ns, stat.st_size)
        return source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        where = f"${ENV_VAR} = {chosen}" if chosen else str(source)
        raise os_failure(f"cannot read the guidelines ({where})", exc) from None


@functools.lru_cache(maxsize=8)
def _read(path: str, mtime_ns: int, size: int) -> str:
    """The text of a file as it was at (mtime, size): a changed file is a new key."""
    return Path(path).read_text(encoding="utf-8")


def guideline_version(text: str | None = None) -> str:
    """The version of the guidelines (of `text`, else of the current file).

    >>> guideline_version("# Guidelines\\nVersion: 2.1\\n...")
    '2.1'
    >>> len(guideline_version("# Guidelines without a version line"))
    8
    """
    text = guidelines_text() if text is None else text
    match = _VERSION.search("\n".join(text.splitlines()[:20]))
    if match:
        return match.group(1)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
