"""State that belongs to one run lives on the run's objects, never in a module: no ``global``
statement, no module-level ContextVar or thread-local, no module-level container that code changes
at run time, no memo cache of a module's function that could hold a run's objects (one keyed by
texts alone, such as compiled patterns or templates, holds none).
Two runs in one process would otherwise see each other's limiters, endpoints or caches."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "yamleval"
MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter",
                 "WeakValueDictionary", "WeakKeyDictionary", "WeakSet", "bytearray"}
MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "pop", "popitem", "clear",
            "remove", "discard", "appendleft", "popleft", "__setitem__", "__delitem__", "sort", "reverse"}


def _called(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return None


def _mutable(value: ast.AST | None) -> bool:
    return (isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp))
            or _called(value) in MUTABLE_CALLS)


def _module_names(tree: ast.Module) -> dict[str, int]:
    """The module-level names bound to a mutable container, with their lines."""
    found = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if _mutable(getattr(node, "value", None)):
            found.update({t.id: node.lineno for t in targets if isinstance(t, ast.Name)})
    return found


def _shadowed(tree: ast.Module, name: str) -> bool:
    """Whether ``name`` is bound inside some function too (then a use there may be the local one)."""
    for func in ast.walk(tree):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = func.args
            if name in {a.arg for a in args.args + args.kwonlyargs + args.posonlyargs}:
                return True
            for node in ast.walk(func):
                if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
                    return True
    return False


MEMOS = {"lru_cache", "cache"}


def _memoized(func: ast.FunctionDef) -> bool:
    for decorator in func.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else None
        if name in MEMOS:
            return True
    return False


PLAIN = {"str", "bool", "int", "float", "bytes"}


def _plain(annotation: ast.AST | None) -> bool:
    """Whether an annotation names a plain value (a text, a number, a flag, or a tuple of them)."""
    if isinstance(annotation, ast.Name):
        return annotation.id in PLAIN
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name) and annotation.value.id == "tuple":
        inner = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        return all(_plain(e) or isinstance(e, ast.Constant) and e.value is Ellipsis for e in inner)
    return False


def _keyed_by_text(func: ast.FunctionDef) -> bool:
    """Whether every argument of ``func`` is annotated as a plain value: its memo then holds what
    texts and numbers make (a compiled pattern, a template), never a run's objects."""
    args = func.args.posonlyargs + func.args.args + func.args.kwonlyargs
    return all(_plain(a.annotation) for a in args) and func.args.vararg is None and func.args.kwarg is None


def findings(source: str, path: str) -> list[str]:
    """Where ``source`` keeps state in its module: one line per place."""
    tree = ast.parse(source)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            out.append(f"{path}:{node.lineno}: global {', '.join(node.names)}")
    for node in tree.body:
        value = getattr(node, "value", None)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _called(value) == "ContextVar":
            out.append(f"{path}:{node.lineno}: a module-level ContextVar")
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _called(value) == "local":
            out.append(f"{path}:{node.lineno}: a module-level thread-local")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _memoized(node) and not _keyed_by_text(node):
            out.append(f"{path}:{node.lineno}: a memo cache of {node.name}, which may hold a run's objects")
    modules = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree)
               if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    for node in ast.walk(tree):  # another module's attribute set at run time: its state, changed from here
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in modules:
                    out.append(f"{path}:{node.lineno}: sets {t.value.id}.{t.attr}")
    containers = _module_names(tree)
    for node in ast.walk(tree):
        target = None
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            for t in (node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]):
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                    target = t.value.id
                elif isinstance(node, ast.AugAssign) and isinstance(t, ast.Name):
                    target = t.id
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS \
                and isinstance(node.func.value, ast.Name):
            target = node.func.value.id
        if target in containers and not _shadowed(tree, target):
            out.append(f"{path}:{node.lineno}: changes the module-level {target} (line {containers[target]})")
    return out


def test_the_package_keeps_no_state_in_its_modules():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += findings(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)))
    assert found == []


@pytest.mark.parametrize("source, expected", [
    ("_seen = {}\ndef f(k):\n    _seen[k] = 1\n", "changes the module-level _seen (line 1)"),
    ("_seen: dict = dict()\ndef f(k):\n    _seen.setdefault(k, 1)\n", "changes the module-level _seen (line 1)"),
    ("_live = set()\ndef f(p):\n    _live.add(p)\n", "changes the module-level _live (line 1)"),
    ("_n = 0\ndef f():\n    global _n\n    _n += 1\n", "global _n"),
    ("import contextvars\nCURRENT = contextvars.ContextVar('x')\n", "a module-level ContextVar"),
    ("from yamleval import shared\ndef f(n):\n    shared.number = n\n", "sets shared.number"),
    ("import threading\nLOCAL = threading.local()\n", "a module-level thread-local"),
    ("from threading import local\n_here = local()\n", "a module-level thread-local"),
    ("import functools\n@functools.lru_cache(maxsize=8)\ndef network(actor):\n    return actor\n",
     "a memo cache of network, which may hold a run's objects"),
    ("from functools import cache\n@cache\ndef made(sent: object):\n    return sent\n", "a memo cache of made"),
])
def test_each_kind_of_module_state_is_found(source, expected):
    assert any(expected in line for line in findings(source, "m.py"))


@pytest.mark.parametrize("source", [
    "NAMES = {'a': 1}\ndef f(k):\n    return NAMES.get(k)\n",  # read only: a constant table
    "NAMES = {}\ndef f():\n    NAMES = {}\n    NAMES['a'] = 1\n    return NAMES\n",  # a local of the same name
    "class C:\n    def __init__(self):\n        self.seen = {}\n    def f(self, k):\n        self.seen[k] = 1\n",
    "import functools\n@functools.lru_cache(maxsize=None)\ndef pattern(source: str):\n    return source\n",
    "import threading\nclass C:\n    def __init__(self):\n        self.local = threading.local()\n",
])
def test_constants_and_state_on_objects_are_not_findings(source):
    assert findings(source, "m.py") == []
