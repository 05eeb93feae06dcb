"""The annotator guidelines text (data/guidelines.md, or $ANNOTATOR_GUIDELINES)."""

import os
from pathlib import Path

DEFAULT_GUIDELINES = Path(__file__).resolve().parents[1] / "data" / "guidelines.md"


def guidelines_text() -> str:
    """The guidelines in Markdown; a short placeholder when the file is missing."""
    path = Path(os.environ.get("ANNOTATOR_GUIDELINES", DEFAULT_GUIDELINES))
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return "# Guidelines\n\nRate each response's general quality, then how well it fits this user."
