"""trajectory: checks on what an agent did, read from its trace. Deterministic.

The trace is the ``agent`` runner's (``{"type": "model", "tool_calls": [...]}`` and
``{"type": "tool", ...}`` steps) or any trace ``yamleval.records.trace`` reads. Steps are the model
turns (model steps, assistant messages) when the trace records them, else the tool calls.
"""
from __future__ import annotations

import json
from typing import Any, Mapping

from yamleval.records.trace import read_trace, step_count, tool_calls
from yamleval.records.types import Score

_MATCHERS = ("equals", "schema")


def trajectory(trace: Any, max_steps: int | None = None, must_call: list[str] | None = None,
               must_not_call: list[str] | None = None, arguments: dict | None = None) -> Score:
    """The fraction of checks the trace passes; passed when all do.

    ``max_steps``: at most this many steps. ``must_call`` / ``must_not_call``: each of these
    tools was / was not called. ``arguments``: ``{tool: {equals: {...}}}`` (the arguments are
    exactly this object) or ``{tool: {schema: {...}}}`` (they fit this JSON schema); at least
    one call of that tool must match. The reason lists the failed checks. Giving no check
    raises ``ValueError``.
    """
    must_call = _names("must_call", must_call)
    must_not_call = _names("must_not_call", must_not_call)
    wanted = _argument_checks(arguments)
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 0):
        raise ValueError(f"trajectory: max_steps must be a whole number, not {max_steps!r}")
    if max_steps is None and not must_call and not must_not_call and not wanted:
        raise ValueError("trajectory needs at least one check: max_steps, must_call, must_not_call or arguments")

    steps = read_trace(trace)
    calls = tool_calls(steps)
    called = [call.name for call in calls]
    results: list[tuple[str, bool]] = []
    if max_steps is not None:
        turns = step_count(steps)
        results.append((f"{turns} steps, at most {max_steps} allowed", turns <= max_steps))
    for name in must_call:
        results.append((f"{name} was {'called' if name in called else 'not called'} (must be)", name in called))
    for name in must_not_call:
        count = called.count(name)
        results.append((f"{name} was called {count} time(s) (must not be)" if count else f"{name} was not called",
                        count == 0))
    for name, (kind, expected) in wanted.items():
        results.append(_arguments_check(name, kind, expected, [call.arguments for call in calls if call.name == name]))

    failed = [text for text, ok in results if not ok]
    reason = (f"all {len(results)} checks passed" if not failed
              else f"{len(failed)} of {len(results)} checks failed: " + "; ".join(failed))
    return Score(score=(len(results) - len(failed)) / len(results), passed=not failed, reason=reason,
                 metadata={"trajectory": {"tools": called, "checks": [{"check": text, "passed": ok}
                                                                     for text, ok in results]}})


def _arguments_check(name: str, kind: str, expected: Any, seen: list[Any]) -> tuple[str, bool]:
    if not seen:
        return f"{name} arguments: {name} was not called", False
    if kind == "equals":
        if any(args == expected for args in seen):
            return f"{name} arguments equal {_show(expected)}", True
        return f"{name} arguments: no call had {_show(expected)} (got {', '.join(_show(a) for a in seen)})", False
    from yamleval.builtins.models.extract import schema_problem

    problems = [schema_problem(args, expected, _show(args)) for args in seen]
    if any(problem is None for problem in problems):
        return f"{name} arguments fit the schema", True
    return f"{name} arguments: no call fits the schema ({'; '.join(str(p) for p in problems)})", False


def _names(key: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValueError(f"trajectory: {key} must be a list of tool names")
    return [str(name).strip() for name in value if str(name).strip()]


def _argument_checks(arguments: Any) -> dict[str, tuple[str, Any]]:
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise ValueError("trajectory: arguments must map tool names to {equals: ...} or {schema: ...}")
    checks = {}
    for name, check in arguments.items():
        keys = [key for key in _MATCHERS if isinstance(check, Mapping) and key in check]
        if not isinstance(check, Mapping) or len(keys) != 1 or len(check) != 1:
            raise ValueError(f"trajectory: arguments.{name} must be {{equals: {{...}}}} or {{schema: {{...}}}}")
        if keys[0] == "schema" and not isinstance(check["schema"], Mapping):
            raise ValueError(f"trajectory: arguments.{name}.schema must be a JSON schema (a mapping)")
        checks[str(name)] = (keys[0], check[keys[0]])
    return checks


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
