"""Dependencies point one way: the command line reaches the work through ``yamleval.api`` only,
and nothing below the api imports it or the command line."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "yamleval"

# What cli/ may import: the api, the reports' texts, the records, config (its option parsing and
# schema) and how figures are written (shared with the reports).
CLI_MAY_IMPORT = ("yamleval.api", "yamleval.cli", "yamleval.reporting", "yamleval.records", "yamleval.config",
                  "yamleval.analysis.figures")


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every ``yamleval`` name ``path`` imports, by line: ``from yamleval.store import tags`` is
    ``yamleval.store.tags`` (a module or not: either is inside ``yamleval.store``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] == "yamleval"]


def _within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _modules(folder: Path):
    return sorted(folder.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(PACKAGE / "cli"), ids=lambda p: p.name)
def test_the_command_line_imports_only_the_api_and_what_it_prints_with(path):
    allowed = (*CLI_MAY_IMPORT, "yamleval.__version__")
    wrong = [f"{path.name}:{line}: {name}" for line, name in _imports(path) if not _within(name, allowed)]
    assert wrong == []


def test_nothing_below_the_api_imports_it_or_the_command_line():
    below = [p for p in _modules(PACKAGE) if p.parent != PACKAGE and p.relative_to(PACKAGE).parts[0] != "cli"]
    wrong = [f"{p.relative_to(PACKAGE)}:{line}: {name}" for p in below for line, name in _imports(p)
             if _within(name, ("yamleval.api", "yamleval.cli"))]
    assert wrong == []


def test_the_scan_sees_a_forbidden_import(tmp_path):
    module = tmp_path / "bad.py"
    module.write_text("from yamleval import api, store\n\ndef f():\n    from yamleval.lifecycle.run import run_project\n")
    names = [name for _, name in _imports(module)]
    assert names == ["yamleval.api", "yamleval.store", "yamleval.lifecycle.run.run_project"]
    assert [n for n in names if not _within(n, CLI_MAY_IMPORT)] == names[1:]
