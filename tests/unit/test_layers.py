"""The direction of imports is one way: models <- core <- io <- cli, and flows may use all but the CLI.

Read from the source with ``ast``, every import counted, also those inside functions (which
is where goldkeeper imports what only some commands need), so a lazy import cannot go the
wrong way unseen. ``errors`` and ``_version`` sit under everything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "goldkeeper"

#: What each layer may import from goldkeeper, besides itself.
ALLOWED = {
    "models": {"errors", "_version"},
    "core": {"models", "errors", "_version"},
    "io": {"core", "models", "errors", "_version"},
    "render": {"core", "models", "errors", "_version"},
    "dashboard": {"render", "core", "models", "errors", "_version"},
    "stats": {"core", "models", "errors"},
    "examples": {"core", "models", "errors"},
    "web": set(),  # static pages shipped as package data
    "__init__": {"core", "io", "models", "errors", "_version", "stats"},
    "cli": {"core", "io", "models", "errors", "_version", "render", "dashboard", "flows", "examples", "stats", "web"},
    # Prefect flows sequence tasks over every layer but the CLI
    "flows": {"core", "io", "models", "errors", "_version", "render", "dashboard", "examples", "stats"},
    "__main__": {"cli"},
    "errors": set(),
    "_version": set(),
}


def _layer_of(path: Path) -> str:
    part = path.relative_to(PACKAGE).parts[0]
    return part.removesuffix(".py")


def _goldkeeper_imports(path: Path) -> list[tuple[int, str]]:
    """(line, first part under goldkeeper) of every import of goldkeeper in a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ["goldkeeper", *path.relative_to(PACKAGE).parent.parts]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against the module's package
                base = package[:len(package) - node.level + 1]
                names = [".".join([*base, node.module] if node.module else base)]
            else:
                names = [node.module or ""]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "goldkeeper" and len(parts) > 1:
                found.append((node.lineno, parts[1]))
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_import_goes_down_the_layers(path):
    layer = _layer_of(path)
    assert layer in ALLOWED, f"{layer}: a new layer; say where it sits in ALLOWED"
    wrong = [f"line {line}: goldkeeper.{target}" for line, target in _goldkeeper_imports(path)
             if target != layer and target not in ALLOWED[layer]]
    assert not wrong, f"{path.relative_to(ROOT)} ({layer}) imports upwards: {wrong}"


def test_only_the_cli_and_the_flows_import_prefect():
    """The engine runs without Prefect: under src, only the flows and the CLI's flow commands
    (lazily, checked by test_imports) import it."""
    for path in MODULES:
        if _layer_of(path) in ("flows", "cli"):
            continue
        text = path.read_text(encoding="utf-8")
        assert "import prefect" not in text and "from prefect" not in text, path


def test_the_checker_sees_a_wrong_import(tmp_path, monkeypatch):
    """The layer check itself can fail: a core module importing io is caught, also inside a
    function."""
    fake = tmp_path / "goldkeeper"
    (fake / "core").mkdir(parents=True)
    module = fake / "core" / "bad.py"
    module.write_text("def f():\n    from goldkeeper.io.files import read_bytes\n    from ..cli import app\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["PACKAGE"]), "PACKAGE", fake)
    assert _goldkeeper_imports(module) == [(2, "io"), (3, "cli")]
