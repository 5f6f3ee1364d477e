"""Tools from the YAML ``tools:`` list: registered names and ``package.module:function`` entries.

Built-ins and custom functions take the same path: keyword-only parameters and ``with:``
keys are options set in YAML (hidden from the model), a ``sandbox`` parameter receives the
item's folder, and the rest of the signature becomes the JSON schema the model sees.
"""
from __future__ import annotations

import difflib
import functools
import inspect
import re
from typing import Any, Callable

from yamleval.plugins import registry as plugins
from yamleval.builtins.tools.tool import Tool, schema_from_function

ENTRY_KEYS = ("uses", "name", "description", "parameters", "with")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _function(uses: str, where: str) -> Callable[..., Any]:
    try:
        function = plugins.load("tools", uses)
    except plugins.Unresolved as exc:
        raise ValueError(f"{where}: {exc.message}{f' ({exc.hint})' if exc.hint else ''}") from None
    if not callable(function):
        raise ValueError(f"{where}: '{uses}' is not a function")
    return function


def _bind(function: Callable[..., Any], options: dict, sandbox: str, where: str) -> tuple[Callable, set[str]]:
    """The function with its options and sandbox bound, and the names hidden from the model."""
    params = inspect.signature(function).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    settable = [n for n in params if n != "sandbox"]
    for key in options:
        if key not in params and not takes_any or key == "sandbox":
            raise ValueError(f"{where}: unknown option '{key}' in `with:` ({plugins.accepted_hint(key, settable)})")
    bound = dict(options)
    if "sandbox" in params:
        bound["sandbox"] = sandbox
    hidden = set(bound) | {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY}
    missing = [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY and p.default is p.empty
               and n not in bound]
    if missing:
        raise ValueError(f"{where}: needs `with: {{{missing[0]}: ...}}`")
    return (functools.partial(function, **bound) if bound else function), hidden


def _entry_fields(entry: Any, where: str) -> dict:
    if isinstance(entry, str):
        return {"uses": entry}
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: a tool is a name or a mapping with `uses:`, not {type(entry).__name__}")
    for key in entry:
        if key not in ENTRY_KEYS:
            close = difflib.get_close_matches(str(key), ENTRY_KEYS, n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'?" if close else f"keys: {', '.join(ENTRY_KEYS)}"
            raise ValueError(f"{where}: unknown key '{key}' ({hint})")
    if not isinstance(entry.get("uses"), str):
        raise ValueError(f"{where}: a tool needs `uses:` (a built-in name or package.module:function)")
    for key, kind in (("with", dict), ("parameters", dict), ("name", str), ("description", str)):
        if entry.get(key) is not None and not isinstance(entry[key], kind):
            raise ValueError(f"{where}: `{key}` must be a {'mapping' if kind is dict else 'string'}")
    return entry


def build_tool(entry: Any, sandbox: str, where: str = "tools") -> Tool:
    """One Tool from one YAML entry, bound to ``sandbox``; ValueError for a bad entry."""
    fields = _entry_fields(entry, where)
    uses, options = fields["uses"], fields.get("with") or {}
    if uses == "web_search" and not options.get("url"):
        raise ValueError(f"{where}: web_search needs `with: {{url: ...}}` "
                         "(a search URL with {query}, and `results:` the path to the result list)")
    function = _function(uses, where)
    bound, hidden = _bind(function, options, sandbox, where)
    description, parameters = schema_from_function(function, hidden)
    name = fields.get("name") or uses.rpartition(":")[2]
    if not _NAME.match(name):
        raise ValueError(f"{where}: tool name '{name}' must be 1-64 letters, digits, '_' or '-'")
    if fields.get("parameters") is not None:
        parameters = fields["parameters"]
        if parameters.get("type", "object") != "object":
            raise ValueError(f"{where}: `parameters` must be a JSON schema of type object")
    return Tool(name=name, description=fields.get("description") or description or name,
                parameters=parameters, function=bound)


def build_tools(entries: list, sandbox: str) -> list[Tool]:
    """The tools a YAML ``tools:`` list names, each bound to the item's ``sandbox`` folder.

    An entry is a built-in name (``calculator``) or ``{uses: name_or_package.module:function,
    name?, description?, parameters?, with?: {...}}``. Raises ValueError for unknown names and
    bad entries, saying which entry.
    """
    if not isinstance(entries, list):
        raise ValueError("tools: must be a list")
    tools: list[Tool] = []
    for index, entry in enumerate(entries):
        tool = build_tool(entry, sandbox, f"tools[{index}]")
        if any(t.name == tool.name for t in tools):
            raise ValueError(f"tools[{index}]: a second tool named '{tool.name}' (give one a `name:`)")
        tools.append(tool)
    return tools
