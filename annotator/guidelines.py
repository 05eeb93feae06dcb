"""The annotator guidelines text (data/guidelines.md, or $ANNOTATOR_GUIDELINES) and its version.

The version is what every judgment records (`Judgment.guideline_version`), so agreement over time can
be read against guideline changes (analysis/drift.py). It is the value of a line ``Version: X`` (or
``<!-- version: X -->``) near the top of the file, else a short hash of the whole text, so any edit of
an unversioned file still shows up as a new version.
"""

import hashlib
import os
import re
from pathlib import Path

DEFAULT_GUIDELINES = Path(__file__).resolve().parents[1] / "data" / "guidelines.md"
_VERSION = re.compile(r"^\s*(?:<!--\s*)?version\s*:\s*([\w.\-]{1,40})", re.IGNORECASE | re.MULTILINE)


def guidelines_text() -> str:
    """The guidelines in Markdown; a short placeholder when the file is missing."""
    path = Path(os.environ.get("ANNOTATOR_GUIDELINES", DEFAULT_GUIDELINES))
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return "# Guidelines\n\nRate each response's general quality, then how well it fits this user."


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
