"""The researcher's pages' modules are imported on a background thread after the first page: every module
a page file imports, once per role; a page run waits while they are imported; a module that fails to
import does not stop the others."""

import importlib
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from annotator.app import prefetch
from annotator.app.common import PAGES


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh importable package (a unique name, its folder yielded) with modules `fast`, `broken` and
    `gated`; importing `gated` waits until the package's GATE event is set."""
    name = f"prefetch_{uuid.uuid4().hex[:8]}"
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("import threading\nGATE = threading.Event()\n")
    (root / "fast.py").write_text("VALUE = 1\n")
    (root / "broken.py").write_text("raise RuntimeError('broken on purpose')\n")
    (root / "gated.py").write_text(f"from {name} import GATE\nassert GATE.wait(60)\nVALUE = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    for module in [m for m in list(sys.modules) if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]


def test_imported_by_lists_every_top_level_import_once_in_order(tmp_path: Path) -> None:
    page = tmp_path / "page.py"
    page.write_text(
        "import json\nimport os.path, json\nfrom a.b import c, d\nfrom . import local\n"
        "def f():\n    import inside\n"
    )
    assert prefetch.imported_by([page]) == ["json", "os.path", "a.b", "a.b.c", "a.b.d"]


def test_every_page_file_parses_and_names_the_modules_it_needs() -> None:
    names = prefetch.imported_by(sorted(PAGES.glob("*.py")))
    assert "analysis.render" in names and "annotator.review.study_report" in names  # Validation's
    assert len(names) == len(set(names))


def test_a_prefetch_imports_the_modules_once_and_a_page_run_waits_for_it(package: Path) -> None:
    name = package.name
    page = package / "page_source.py"
    page.write_text(f"from {name} import fast, broken, gated, missing\nimport {name}.fast\n")
    gate = importlib.import_module(name).GATE
    role = f"role-{name}"
    prefetch.start(role, [page])
    waited = threading.Event()

    def page_run() -> None:
        prefetch.settled()
        waited.set()

    runner = threading.Thread(target=page_run)
    runner.start()
    assert not waited.wait(0.3)  # `gated` is still being imported: the page run waits
    gate.set()
    assert waited.wait(30)  # imported: the page run goes on
    runner.join()
    assert sys.modules[f"{name}.fast"].VALUE == 1 and sys.modules[f"{name}.gated"].VALUE == 2
    assert f"{name}.broken" not in sys.modules  # failed, and did not stop `gated` after it
    # once per role: a second start imports nothing and holds nothing
    prefetch.start(role, [page])
    done = threading.Event()
    threading.Thread(target=lambda: (prefetch.settled(), done.set())).start()
    assert done.wait(60)


def test_settled_returns_once_nothing_is_importing() -> None:
    # (a page test before this one in the same process may have started the researcher's prefetch)
    done = threading.Event()
    threading.Thread(target=lambda: (prefetch.settled(), done.set())).start()
    assert done.wait(60)
