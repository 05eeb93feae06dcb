"""Lists with one home each: the report's output formats, the upload fields' pair file types and the
cleaning list's decisions. Every caller reads the home; a literal copy elsewhere fails here."""

import ast
from pathlib import Path

import pytest
import typer.main

from analysis import cleaning
from analysis.render.formats import REPORT_FORMATS
from annotator.cli.common import app
from annotator.intake import ingest

pytestmark = pytest.mark.nodb  # statistics and static checks: no database

ROOT = Path(__file__).resolve().parents[1]
# Each home and the literals that belong only there (a docstring may name them: prose is exempt).
HOMES = {
    ROOT / "analysis" / "cleaning.py": {cleaning.DROP, cleaning.NEEDS_MORE},
    ROOT / "analysis" / "render" / "formats.py": {f.mime for f in REPORT_FORMATS},
}


def stray_literals(source: str, words: set[str]) -> list[int]:
    """The lines of `source` with a string constant in `words` that is not a docstring."""
    tree = ast.parse(source)
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in words and id(node) not in docs
    )


def test_the_finder_finds_a_planted_literal_and_spares_docstrings() -> None:
    source = '"""drop is prose here."""\nif decision == "drop":\n    pass\n'
    assert stray_literals(source, {"drop"}) == [2]


def test_every_listed_literal_lives_only_in_its_home() -> None:
    sources = {
        p: p.read_text(encoding="utf-8")
        for pkg in ("annotator", "analysis")
        for p in (ROOT / pkg).rglob("*.py")
    }
    words = set().union(*HOMES.values())
    suspects = {p: s for p, s in sources.items() if any(w in s for w in words)}
    stray = {
        f"{path.relative_to(ROOT)}:{line}": home.name
        for home, words in HOMES.items()
        for path, source in suspects.items()
        if path != home
        for line in stray_literals(source, words)
    }
    assert stray == {}


def test_the_decisions_are_named_in_the_lists_order() -> None:
    assert cleaning.DECISIONS == (cleaning.DROP, cleaning.NEEDS_MORE, cleaning.KEEP)
    assert f"'{cleaning.DROP}'" in cleaning.RULE and f"'{cleaning.NEEDS_MORE}'" in cleaning.RULE


def test_analyze_offers_one_option_per_report_format() -> None:
    analyze = typer.main.get_command(app).commands["analyze"]  # type: ignore[attr-defined]
    options = {opt for param in analyze.params for opt in param.opts if opt.startswith("--")}
    assert {f"--{f.name}" for f in REPORT_FORMATS} <= options
    helps = {getattr(param, "help", None) for param in analyze.params}
    assert {f.help for f in REPORT_FORMATS} <= helps


def test_the_upload_fields_take_the_import_suffixes() -> None:
    assert [f".{t}" for t in ingest.UPLOAD_TYPES] == list(ingest.SUFFIXES)
    literal_types = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in (ROOT / "annotator" / "app").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("file_uploader")
        for keyword in node.keywords
        if keyword.arg == "type"
        and isinstance(keyword.value, ast.List | ast.Tuple)
        and any(isinstance(e, ast.Constant) and e.value in ingest.UPLOAD_TYPES for e in keyword.value.elts)
    ]
    assert literal_types == []
