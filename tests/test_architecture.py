"""The layers hold: no import cycle anywhere, and imports only point down (app/cli -> services ->
store; services -> analysis; analysis imports neither annotator nor Streamlit).

The graph is read from the source with `ast` (every import statement, also inside functions, except
those under ``if TYPE_CHECKING:``), so a lazy import cannot hide a cycle.
"""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.nodb  # no database: the PostgreSQL pass leaves it out

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


STAGES = ("people", "intake", "rating", "review", "publish")  # each imports only the stages before it


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "annotator" and parts[1] in STAGES else None


def test_service_stages_import_only_earlier_stages() -> None:
    """people -> intake -> rating -> review -> publish: a stage never imports a later one."""
    graph = import_graph()
    assert any(_stage(m) == "publish" for m in graph)  # the walk sees the stage packages
    for module, imported in graph.items():
        stage = _stage(module)
        if stage is None:
            continue
        later = sorted(m for m in imported if (s := _stage(m)) and STAGES.index(s) > STAGES.index(stage))
        assert not later, f"{module} ({stage}) imports later stages: {later}"


SQL_BUILDERS = {"select", "text", "func", "col", "update", "insert", "delete"}


def test_pages_and_commands_call_services_never_sql() -> None:
    """The app's pages and the CLI reach the database only through services (no sqlmodel/sqlalchemy)."""
    for folder in ("annotator/app", "annotator/cli"):
        for path in (ROOT / folder).rglob("*.py"):
            imported = _imports(ast.parse(path.read_text(encoding="utf-8")), folder.replace("/", "."))
            sql = sorted(
                m
                for m in imported
                if m.split(".")[0] in {"sqlmodel", "sqlalchemy"} and m.rsplit(".", 1)[-1] in SQL_BUILDERS
            )
            assert not sql, f"{path.relative_to(ROOT)} imports {sql}"


# The label frame's vocabulary lives in analysis/vocabulary.py; the blinding map in
# annotator/rating/blinding.py. A literal of either elsewhere is a second home for the rule.
VOCABULARY = ROOT / "analysis" / "vocabulary.py"
BLINDING = ROOT / "annotator" / "rating" / "blinding.py"
ITEM_PREFIXES = ("rubric:", "support:")
CONTROL_NAMES = {"gold", "positive", "swap", "duplicate"}
DOMAINS = {(-2, -1, 0, 1, 2), (1, 2, 3), (0, 1, 2)}


def _exempt(tree: ast.AST) -> set[int]:
    """Docstrings (prose) and the insides of ``Literal[...]`` (a type must spell its values)."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("Literal"):
            ids |= {id(n) for n in ast.walk(node.slice)}
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def stray_literals(source: str) -> list[str]:
    """The vocabulary and blinding literals in `source` (docstrings aside), as 'line: what'."""
    tree = ast.parse(source)
    docs = _exempt(tree)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if node.value.startswith(ITEM_PREFIXES):
                found.append(f"{line}: item prefix {node.value!r}")
            elif node.value in CONTROL_NAMES:
                found.append(f"{line}: control kind {node.value!r}")
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if len(values) == len(node.elts) and tuple(values) in DOMAINS:
                found.append(f"{line}: answer domain {tuple(values)}")
        elif isinstance(node, ast.Compare):
            names = [ast.unparse(n) for n in (node.left, *node.comparators)]
            if any(n.endswith("chosen_side") for n in names) and any(n in ("'A'", "'B'") for n in names):
                found.append(f"{line}: side test {ast.unparse(node)}")
    return sorted(found, key=lambda s: int(s.split(":")[0]))


def test_the_literal_finder_finds_planted_literals() -> None:
    planted = 'x = f"rubric:{k}"\nif c == "gold": pass\nd = (1, 2, 3)\nif a.chosen_side == "A": pass\n'
    assert [s.split(":")[0] for s in stray_literals(planted)] == ["1", "2", "3", "4"]
    assert stray_literals('"""rubric:<k> in a docstring is prose."""\n') == []
    assert stray_literals('Kind = Literal["swap", "gold"]\n') == []


def test_no_stray_vocabulary_or_blinding_literal() -> None:
    homes = {VOCABULARY, BLINDING}
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if "migrations" not in p.parts]
    assert VOCABULARY in files and BLINDING in files
    stray = {
        str(p.relative_to(ROOT)): found
        for p in files
        if p not in homes and (found := stray_literals(p.read_text(encoding="utf-8")))
    }
    assert stray == {}, f"literals with a home in analysis/vocabulary.py or rating/blinding.py: {stray}"


AUTHORIZATION = ROOT / "annotator" / "people" / "authorization.py"
ACCOUNTS = ROOT / "annotator" / "people" / "accounts.py"


def defined_names(path: Path) -> set[str]:
    """The names a module defines at its top level (functions, classes, assignments)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def authorization_strays(source: str, names: set[str]) -> list[str]:
    """Where `source` takes one of authorization's `names` from any project module but its home
    (``from annotator.people.accounts import SYSTEM``, ``accounts.SYSTEM``)."""
    strays = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PACKAGES:
            if node.module != "annotator.people.authorization":
                taken = [alias.name for alias in node.names if alias.name in names]
                strays += [f"{node.lineno}: {name} from {node.module}" for name in taken]
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "accounts"
            and node.attr in names
        ):
            strays.append(f"{node.lineno}: accounts.{node.attr}")
    return strays


def test_the_authorization_finder_finds_planted_strays() -> None:
    source = "from annotator.people.accounts import SYSTEM, add_user\nx = accounts.require_role\n"
    assert authorization_strays(source, {"SYSTEM", "require_role"}) == [
        "1: SYSTEM from annotator.people.accounts",
        "2: accounts.require_role",
    ]


def test_authorization_names_are_imported_from_their_home() -> None:
    """``Account``, ``SYSTEM``, the role checks and every other name people/authorization.py defines
    come from there, never through accounts or another module."""
    names = {name for name in defined_names(AUTHORIZATION) if not name.startswith("_")}
    assert {"SYSTEM", "Account", "require_role"} <= names
    strays = [
        f"{path.relative_to(ROOT)}:{stray}"
        for package in (*PACKAGES, "tests", "benchmarks")
        for path in sorted((ROOT / package).rglob("*.py"))
        for stray in authorization_strays(path.read_text(encoding="utf-8"), names)
    ]
    assert strays == []


def test_accounts_exports_only_what_it_defines() -> None:
    tree = ast.parse(ACCOUNTS.read_text(encoding="utf-8"))
    exported = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
    )
    assert set(exported) <= defined_names(ACCOUNTS)
    assert not set(exported) & defined_names(AUTHORIZATION)


def test_app_views_holds_only_pages() -> None:
    """Every file in app/views/ is a page the router registers; a page's parts live elsewhere
    (the rating page's in app/rating_page/)."""
    router = (ROOT / "annotator" / "app" / "main.py").read_text(encoding="utf-8")
    files = sorted(p.name for p in (ROOT / "annotator" / "app" / "views").glob("*.py"))
    assert "annotate.py" in files
    assert [name for name in files if f'"{name}"' not in router] == []


MAX_MODULE_LINES = 750  # a module over this does more than one job: split it by job


def oversized(root: Path, limit: int) -> dict[str, int]:
    """Every Python file under `root` longer than `limit` lines, with its length."""
    sizes = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in root.rglob("*.py")}
    return {str(path.relative_to(root)): n for path, n in sorted(sizes.items()) if n > limit}


def test_the_size_finder_finds_a_planted_long_module(tmp_path: Path) -> None:
    (tmp_path / "long.py").write_text("x = 1\n" * 11, encoding="utf-8")
    (tmp_path / "short.py").write_text("x = 1\n" * 10, encoding="utf-8")
    assert oversized(tmp_path, 10) == {"long.py": 11}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_over_the_size_limit(package: str) -> None:
    assert oversized(ROOT / package, MAX_MODULE_LINES) == {}


def page_flow(source: str) -> list[str]:
    """What a page runs at import besides definitions: each top-level statement that is not an import,
    a docstring, a definition or a constant (an upper-case name or a type alias)."""
    flow = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if all(isinstance(t, ast.Name) and t.id[0].isupper() for t in targets):
                continue
        flow.append(ast.unparse(node))
    return flow


def test_the_page_flow_finder_sees_module_level_code() -> None:
    assert page_flow('"""Doc."""\nimport x\nLIMIT = 3\n\ndef main() -> None:\n    pass\n\nmain()\n') == [
        "main()"
    ]
    assert page_flow("account = require()\nst.title('x')\n") == ["account = require()", "st.title('x')"]


VIEWS = ROOT / "annotator" / "app" / "views"


@pytest.mark.parametrize("page", sorted(p.name for p in VIEWS.glob("*.py")))
def test_every_page_runs_only_its_main(page: str) -> None:
    """A page's flow is one typed function, ``main()``, called once at the end; nothing else runs."""
    assert page_flow((VIEWS / page).read_text(encoding="utf-8")) == ["main()"]
