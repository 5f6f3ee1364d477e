"""tool_call_accuracy: did the system under test call the expected tools? Deterministic.

Tool calls are read from the runner's ``trace`` (``RunnerResult(trace=[...])``). Each entry
may be a tool name (a string) or a dict in one of these shapes:

- ``{"tool": "search", ...}`` or ``{"name": "search", "arguments": {...}}``;
- ``{"toolName": "search"}`` or ``{"payload": {"toolName" | "name": "search"}}``;
- OpenAI's ``{"type": "function", "function": {"name": "search", ...}}``;
- a type of the form ``tool-search`` / ``tool_search``;
- a message holding calls: ``{"role": "assistant", "tool_calls": [...]}``, or
  ``toolCalls`` / ``toolInvocations`` / ``parts`` / ``content`` lists, searched recursively.

Tool *results* (``{"role": "tool", ...}``) and stream events (types such as
``tool_input_start``, ``tool_output_end``, ``tool_call_delta``) are not calls. A dict trace is
searched under ``tool_calls``, ``toolCalls``, ``messages`` and ``steps``.
"""
from __future__ import annotations

import json
from typing import Any

from yamleval.types import Score

_EVENT_PREFIXES = ("tool_input_", "tool_output_", "tool_call_", "tool_result_", "tool_invocation_",
                   "tool_execution_")
_EVENT_SUFFIXES = ("_start", "_end", "_delta", "_chunk", "_done")
_NESTED = ("tool_calls", "toolCalls", "toolInvocations", "parts", "content")
_CONTAINER_KEYS = ("tool_calls", "toolCalls", "messages", "steps")


def tool_call_accuracy(trace: Any, expected_tool: str | None = None, expected_tools: list[str] | None = None,
                       strict: bool = False, ordered: bool = True) -> Score:
    """1 when the calls in ``trace`` match the expectation, else 0; the verdict is the same.

    ``expected_tool``: lenient, the tool was called at least once; ``strict``, it was the
    only call. ``expected_tools`` (takes precedence): with ``ordered`` (the default) and
    lenient, they appear in this order with other calls allowed in between; ordered and
    ``strict``, the calls are exactly this sequence. Unordered and lenient: each was
    called; unordered and strict: the calls are these tools, each as many times, in any
    order. Names are trimmed. Giving neither raises ``ValueError``.
    """
    tool = expected_tool.strip() if isinstance(expected_tool, str) and expected_tool.strip() else None
    order = [str(name).strip() for name in expected_tools or [] if str(name).strip()]
    if expected_tools is not None and not isinstance(expected_tools, (list, tuple)):
        raise ValueError("tool_call_accuracy: expected_tools must be a list of tool names")
    if tool is None and not order:
        raise ValueError("tool_call_accuracy requires expected_tool or a non-empty expected_tools")
    actual = tool_names(trace)
    shown = "[" + ", ".join(f'"{name}"' for name in actual) + "]"
    metadata: dict[str, Any] = {"actual_tools": actual, "strict": strict}
    if order:
        metadata.update(mode="tool_order", expected_tools=order, ordered=ordered)
        if ordered:
            ok = actual == order if strict else _is_subsequence(order, actual)
        else:
            ok = sorted(actual) == sorted(order) if strict else all(name in actual for name in order)
        metadata["correct_order_called"] = ok
        wanted = " -> ".join(order) if ordered else ", ".join(order)
        kind = ("exactly the sequence" if strict else "in order") if ordered else \
            ("exactly the tools" if strict else "each of the tools")
        if not actual:
            reason = f"No tool calls were made; expected {kind} {wanted}."
        elif ok:
            reason = f"Tools were called {kind} {wanted}. Actual tools: {shown}"
        else:
            reason = f"Tools were not called {kind} {wanted}. Actual tools: {shown}"
    else:
        metadata.update(mode="single_tool", expected_tool=tool)
        ok = actual == [tool] if strict else tool in actual
        metadata["correct_tool_called"] = ok
        if not actual:
            reason = f'No tool calls were made; expected "{tool}".'
        elif ok:
            reason = (f'Expected tool "{tool}" was the only call.' if strict
                      else f'Expected tool "{tool}" was called.') + f" Actual tools: {shown}"
        elif strict and tool in actual:
            reason = f'Expected tool "{tool}" was called, but not as the only call. Actual tools: {shown}'
        else:
            reason = f'Expected tool "{tool}" was not called. Actual tools: {shown}'
    return Score(score=1.0 if ok else 0.0, passed=ok, reason=reason, metadata={"tool_call_accuracy": metadata})


def tool_names(trace: Any) -> list[str]:
    """The names of the tool calls in ``trace``, in order (see the module docstring)."""
    return [name for name, _ in tool_calls(trace)]


def tool_calls(trace: Any) -> list[tuple[str, Any]]:
    """``(name, arguments)`` of the tool calls in ``trace``, in order; the arguments are None
    where the trace does not record them (JSON text is decoded)."""
    calls: list[tuple[str, Any]] = []
    if trace is None:
        return calls
    if isinstance(trace, dict):
        for key in _CONTAINER_KEYS:
            value = trace.get(key)
            if isinstance(value, list) and value:
                _collect(value, calls)
                if calls:
                    return calls
        _collect([trace], calls)
        return calls
    if isinstance(trace, (list, tuple)):
        _collect(trace, calls)
    return calls


def _collect(entries: Any, calls: list[tuple[str, Any]], depth: int = 0) -> None:
    if depth > 8:
        return
    for entry in entries:
        if isinstance(entry, str):
            if entry.strip():
                calls.append((entry.strip(), None))
        elif isinstance(entry, dict):
            _from_dict(entry, calls, depth)


def _from_dict(entry: dict[str, Any], calls: list[tuple[str, Any]], depth: int) -> None:
    kind = entry.get("type")
    kind = kind.strip().lower().replace("-", "_") if isinstance(kind, str) else ""
    if _is_event(kind) or entry.get("role") == "tool" or kind in ("tool_result", "function_call_output"):
        return
    name = _name_of(entry, kind)
    if name:
        calls.append((name, _arguments(entry)))
        return
    for key in _NESTED:
        value = entry.get(key)
        if isinstance(value, list):
            _collect(value, calls, depth + 1)
        elif isinstance(value, dict) and key == "content" and isinstance(value.get("parts"), list):
            _collect(value["parts"], calls, depth + 1)


def _arguments(entry: dict[str, Any]) -> Any:
    function = entry.get("function")
    source = function if isinstance(function, dict) else entry
    args = source.get("arguments", source.get("args"))
    if isinstance(args, str):  # OpenAI sends the arguments as JSON text
        try:
            return json.loads(args)
        except ValueError:
            pass
    return args


def _name_of(entry: dict[str, Any], kind: str) -> str | None:
    function = entry.get("function")
    candidates = [entry.get("tool"), entry.get("toolName"), entry.get("tool_name")]
    if isinstance(function, dict):
        candidates.append(function.get("name"))
    payload = entry.get("payload")
    if isinstance(payload, dict):
        candidates += [payload.get("toolName"), payload.get("name")]
    # a bare "name" only names a call when the entry is not a message of another kind
    if entry.get("role") in (None, "assistant") and (not kind or kind in ("function", "tool_call", "function_call",
                                                                           "tool_use")):
        candidates.append(entry.get("name"))
    for candidate in candidates:
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    if kind.startswith("tool_") and kind not in ("tool_call", "tool_use"):
        raw = entry["type"].strip()
        return raw[len("tool-"):] if len(raw) > 5 else None
    return None


def _is_event(kind: str) -> bool:
    return bool(kind) and (kind.startswith(_EVENT_PREFIXES) or (kind.startswith("tool") and
                                                                 kind.endswith(_EVENT_SUFFIXES)))


def _is_subsequence(wanted: list[str], actual: list[str]) -> bool:
    calls = iter(actual)
    return all(any(name == call for call in calls) for name in wanted)
