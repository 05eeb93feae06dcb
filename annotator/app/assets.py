"""The pages' own files in static/ (scripts and styles): read once per server process, their
``__NAME__`` placeholders filled in by the page that draws them."""

import functools
import re
from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"


@functools.cache
def static_text(name: str) -> str:
    """A file of static/ as it is on disk, read once per server process."""
    return (STATIC / name).read_text(encoding="utf-8")


def filled(name: str, **values: str) -> str:
    """A file of static/ without its final line break, each ``__KEY__`` replaced by ``values["key"]``
    in one pass (a value put in is never read for placeholders)."""
    text = static_text(name).removesuffix("\n")
    if not values:
        return text
    wanted = re.compile("|".join(re.escape(f"__{key.upper()}__") for key in values))
    return wanted.sub(lambda found: values[found.group(0)[2:-2].lower()], text)
