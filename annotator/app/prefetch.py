"""The modules a signed-in role's pages import, imported once per server on a background thread after its
first page is drawn, so that the role's next pages do not pay for them on their first visit (the
researcher's pages: about a quarter of a second; SciPy and statsmodels are not among them,
:mod:`analysis.lazy`).

The login page starts the same for the researcher's and the adjudicator's start pages while a password is
typed (pandas is most of their cost), so that a researcher's landing does not wait for them; an idle
server and a crowd arriving by its study link import none of them. While the imports run, every
page run waits for them (:func:`settled`): two threads importing the same modules could otherwise meet
in a circular import and fail one of them.
"""

import ast
import importlib
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

_running = threading.Lock()  # held while a prefetch imports
_started: set[str] = set()  # the roles whose pages' modules were imported, or are being
_guard = threading.Lock()  # makes the check-and-add of a role one step


def imported_by(files: Iterable[Path]) -> list[str]:
    """Every module the files import at their top level (absolute imports; for ``from X import y``
    X and X.y, in case y is a submodule), each once, in order."""
    names: list[str] = []
    for file in files:
        for node in ast.parse(Path(file).read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return list(dict.fromkeys(names))


def _import_all(names: list[str]) -> None:
    """Import each module, then release :data:`_running` (taken by :func:`start`)."""
    try:
        for name in names:
            parent, _, leaf = name.rpartition(".")
            if hasattr(sys.modules.get(parent), leaf):  # ``from X import y``: y is already X's
                continue
            try:
                importlib.import_module(name)
            except Exception:  # a page that imports this module reports the fault when it runs
                continue
    finally:
        _running.release()


def start(role: str, files: Iterable[Path]) -> None:
    """Import the modules of `files` (the role's pages) on a background thread, once per role and server."""
    with _guard:
        if role in _started:
            return
        _started.add(role)
    names = imported_by(files)
    _running.acquire()  # before the thread starts, so that a page run right after this waits for it
    threading.Thread(target=_import_all, args=(names,), name=f"prefetch-{role}", daemon=True).start()


def settled() -> None:
    """Return once no prefetch is importing (at once when none runs)."""
    with _running:
        pass
