"""The layers hold: no import cycle anywhere, and imports only point down (app/cli -> services ->
store; services -> analysis; analysis imports neither annotator nor Streamlit).

The graph is read from the source with `ast` (every import statement, also inside functions, except
those under ``if TYPE_CHECKING:``), so a lazy import cannot hide a cycle.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("annotator", "analysis")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, package: str) -> set[str]:
    """Every module name imported in `tree` (relative imports resolved against `package`)."""
    found: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))
    return found


def import_graph() -> dict[str, set[str]]:
    """Project module -> the project modules it imports."""
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if "migrations" not in p.parts]
    modules = {_module_name(p): p for p in files}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported = _imports(ast.parse(path.read_text(encoding="utf-8")), package)
        graph[name] = {m for m in imported if m in modules and m != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_the_project() -> None:
    graph = import_graph()
    assert "annotator.review.readers" in graph and "analysis.report" in graph  # the walk sees the packages
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph) or [])}"


@pytest.mark.parametrize("package", ["analysis"])
def test_analysis_imports_no_annotator_and_no_streamlit(package: str) -> None:
    for path in (ROOT / package).rglob("*.py"):
        imported = _imports(ast.parse(path.read_text(encoding="utf-8")), package)
        bad = sorted(m for m in imported if m.split(".")[0] in {"annotator", "streamlit"})
        assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


def test_store_imports_no_service_and_services_import_no_app_or_cli() -> None:
    graph = import_graph()
    for module, imported in graph.items():
        if module.startswith("annotator.store"):
            above = sorted(m for m in imported if not m.startswith(("annotator.store", "annotator.errors")))
            assert not above, f"{module} (storage layer) imports {above}"
        elif module.startswith("annotator.") and not module.startswith(("annotator.app", "annotator.cli")):
            if module in {"annotator.__main__", "annotator.server"}:
                continue
            up = sorted(m for m in imported if m.startswith(("annotator.app", "annotator.cli")))
            assert not up, f"{module} (a service) imports {up}"
