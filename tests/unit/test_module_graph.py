"""No import circle anywhere, and no private name used outside its package.

Read from the source with ``ast``, as the layer test reads it: every import counted, those
inside functions too (an import inside a function is for a measured lazy import, never to
dodge a circle). A circle is a strongly connected set of modules (Tarjan's algorithm); a
private name (``_x``) may be imported by the modules of its own package (core.drift's shared
helpers), never across packages.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "goldkeeper"


def _modules(package: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        name = ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[int, str, str | None]]:
    """(line, module imported, name taken from it or None) for each goldkeeper import."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names if alias.name in modules]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            if not module.startswith("goldkeeper"):
                continue
            for alias in node.names:
                inner = f"{module}.{alias.name}"
                found.append((node.lineno, inner, None) if inner in modules else (node.lineno, module, alias.name))
    return found


def circles(modules: dict[str, Path]) -> list[list[str]]:
    """The import circles among ``modules``: each a sorted list of two or more modules."""
    graph = {name: {target for _, target, _ in _imports(name, path, modules) if target in modules and target != name}
             for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def private_imports(modules: dict[str, Path]) -> list[str]:
    """Each private name imported from outside its module's package, as ``module:line``."""
    wrong = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for line, module, taken in _imports(name, path, modules):
            if taken and taken.startswith("_") and not taken.startswith("__") and module != name:
                if module.rsplit(".", 1)[0] != package and module != package:
                    wrong.append(f"{name}:{line} takes {module}.{taken}")
    return wrong


def test_no_module_imports_itself_back():
    assert circles(_modules(PACKAGE)) == []


def test_no_private_name_is_taken_across_packages():
    assert private_imports(_modules(PACKAGE)) == []


@pytest.mark.parametrize(("files", "found"), [
    ({"a.py": "from goldkeeper.b import f\n", "b.py": "def f():\n    from goldkeeper.a import g\n"},
     [["goldkeeper.a", "goldkeeper.b"]]),
    ({"a.py": "from goldkeeper.b import f\n", "b.py": "from goldkeeper.c import g\n", "c.py": "import goldkeeper.a\n"},
     [["goldkeeper.a", "goldkeeper.b", "goldkeeper.c"]]),
    ({"a.py": "from goldkeeper.b import f\n", "b.py": "x = 1\n"}, []),
], ids=["lazy-import-circle", "three-modules", "none"])
def test_the_circle_finder_finds_circles(tmp_path, files, found):
    package = tmp_path / "goldkeeper"
    package.mkdir()
    for name, text in files.items():
        (package / name).write_text(text)
    assert circles(_modules(package)) == found


def test_the_private_name_check_sees_one_taken_across_packages(tmp_path):
    package = tmp_path / "goldkeeper"
    (package / "core" / "drift").mkdir(parents=True)
    (package / "flows").mkdir()
    (package / "core" / "drift" / "rebuild.py").write_text("def _helper(): ...\n")
    (package / "core" / "drift" / "moves.py").write_text("from goldkeeper.core.drift.rebuild import _helper\n")
    (package / "flows" / "lifecycle.py").write_text("\n\nfrom goldkeeper.core.drift.rebuild import _helper\n")
    assert private_imports(_modules(package)) == ["goldkeeper.flows.lifecycle:3 takes goldkeeper.core.drift.rebuild._helper"]
