"""Dependencies point one way, as one table says: each room of ``yamleval/`` imports only rooms
below it (imports inside functions included), no two rooms or files import each other in a
circle, the command line reaches the work through ``yamleval.api`` only, and nothing imports the
top package for its version."""
from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "yamleval"

# The rooms from the bottom up: a room imports only those before it. records and errors are the
# leaves; the store sits below analysis, which counts what the store returns; reporting renders
# stored runs; lifecycle makes and ends runs; serve, api and cli are the faces.
LAYERS = ("records", "config", "plugins", "store", "analysis", "calls", "builtins", "engine", "reporting",
          "lifecycle", "serve", "api", "cli")

# What cli/ may import: the api, the records, and the terminal texts of the reports.
CLI_MAY_IMPORT = ("yamleval.api", "yamleval.cli", "yamleval.records", "yamleval.reporting")

# The rooms and the two files every Python package has; nothing else at the top.
TOP = {*LAYERS, "__init__.py", "__main__.py"}


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every ``yamleval`` name ``path`` imports, by line, at its top or inside a function:
    ``from yamleval.store import tags`` is ``yamleval.store.tags`` (a module or not: either is
    inside ``yamleval.store``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] == "yamleval"]


def _room(name: str) -> str:
    """The room of a dotted name: ``yamleval.store.tags`` is in ``store``, ``yamleval.api`` is ``api``."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def _room_of(path: Path, root: Path = PACKAGE) -> str:
    return path.relative_to(root).parts[0].removesuffix(".py")


def _within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _modules(folder: Path = PACKAGE):
    return sorted(folder.rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_findings(paths, root: Path = PACKAGE) -> list[str]:
    """Each import of a room above the importing one, or of a room the table does not know."""
    wrong = []
    for path in paths:
        own = _room_of(path, root)
        if own in ("__init__", "__main__"):
            continue
        for line, name in _imports(path):
            room = _room(name)
            if room == own:
                continue
            if room == "__version__":
                wrong.append(f"{path.relative_to(root)}:{line}: imports the top package for its version")
            elif room not in LAYERS or own not in LAYERS or LAYERS.index(room) > LAYERS.index(own):
                wrong.append(f"{path.relative_to(root)}:{line}: {own} imports {name}")
    return wrong


def test_each_room_imports_only_the_rooms_below_it():
    assert layer_findings(_modules()) == []


def test_the_top_of_the_package_holds_the_rooms_of_the_table_and_nothing_else():
    entries = {p.name if p.name.startswith("__") else p.name.removesuffix(".py")
               for p in PACKAGE.iterdir() if p.name != "__pycache__"}
    assert entries <= TOP
    assert len(entries - {"__init__.py", "__main__.py"}) <= 13


def _module_graph() -> dict[str, set[str]]:
    names = {_module_name(p): p for p in _modules()}
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in names.items():
        for _, name in _imports(path):
            # ``from yamleval.store import tags`` names a module; ``from yamleval.store.writer import Store`` an attribute
            target = name if name in names else name.rsplit(".", 1)[0]
            if target in names and target != module and not module.startswith(target + "."):
                graph[module].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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
    return found


def test_no_two_files_import_each_other_in_a_circle():
    assert _cycles(_module_graph()) == []


def test_no_two_rooms_import_each_other_in_a_circle():
    rooms: dict[str, set[str]] = defaultdict(set)
    for module, targets in _module_graph().items():
        rooms[_room(module)] |= {_room(t) for t in targets if _room(t) != _room(module)}
    assert _cycles(rooms) == []


@pytest.mark.parametrize("path", _modules(PACKAGE / "cli"), ids=lambda p: p.name)
def test_the_command_line_imports_only_the_api_and_what_it_prints_with(path):
    wrong = [f"{path.name}:{line}: {name}" for line, name in _imports(path) if not _within(name, CLI_MAY_IMPORT)]
    assert wrong == []


def test_the_scan_sees_a_forbidden_import(tmp_path):
    module = tmp_path / "bad.py"
    module.write_text("from yamleval import api, store\n\ndef f():\n    from yamleval.lifecycle.run import run_project\n")
    names = [name for _, name in _imports(module)]
    assert names == ["yamleval.api", "yamleval.store", "yamleval.lifecycle.run.run_project"]
    assert [n for n in names if not _within(n, CLI_MAY_IMPORT)] == names[1:]


def test_the_table_sees_an_import_upwards_and_one_for_the_version(tmp_path):
    (tmp_path / "store").mkdir()
    probe = tmp_path / "store" / "_layer_probe.py"
    probe.write_text("from yamleval import __version__\n\ndef f():\n    from yamleval.analysis import aggregate\n")
    found = layer_findings([probe], root=tmp_path)
    assert found == ["store/_layer_probe.py:1: imports the top package for its version",
                     "store/_layer_probe.py:4: store imports yamleval.analysis.aggregate"]


def test_the_circle_search_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# Rooms that read and write results only through the store's interface: no SQL of their own.
THROUGH_THE_STORE = ("analysis", "lifecycle", "reporting", "serve", "api", "cli", "engine")
_SQL = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE TABLE|ALTER TABLE)\b")


def sql_findings(paths, root: Path = PACKAGE) -> list[str]:
    """Each SQL text, or use of a connection or a raw query, in a room that must go through the store."""
    wrong = []
    for path in paths:
        if _room_of(path, root) not in THROUGH_THE_STORE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.search(node.value):
                wrong.append(f"{path.relative_to(root)}:{node.lineno}: SQL {node.value[:40]!r}")
            elif isinstance(node, ast.Attribute) and node.attr in ("query", "execute", "database"):
                wrong.append(f"{path.relative_to(root)}:{node.lineno}: .{node.attr} of a store")
    return wrong


def test_the_eval_center_and_the_lifecycle_read_through_the_store_alone():
    assert sql_findings(_modules()) == []


def test_the_sql_scan_sees_a_query(tmp_path):
    (tmp_path / "serve").mkdir()
    probe = tmp_path / "serve" / "probe.py"
    probe.write_text('ROWS = "SELECT record FROM items"\n\ndef f(store):\n    return store.query(ROWS)\n')
    assert sql_findings([probe], root=tmp_path) == ["serve/probe.py:1: SQL 'SELECT record FROM items'",
                                                    "serve/probe.py:4: .query of a store"]
