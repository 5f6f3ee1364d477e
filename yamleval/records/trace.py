"""A runner's trace, read one way by every reader (tool-call scorers, trajectory reports);
it is stored as the runner returned it.

A trace is a list of entries; a dict trace is its first non-empty list under ``tool_calls``,
``toolCalls``, ``messages`` or ``steps``, else the dict as one entry. Each entry is a step:

- ``model``: a model turn, ``{"type": "model", "tool_calls": [...]}`` or ``{"role": "assistant"}``;
- ``call``: a tool name (a string), ``{"tool" | "toolName": "search"}``, ``{"name": "search",
  "arguments": {...}}``, ``{"payload": {"toolName" | "name": "search"}}``, ``{"type": "function",
  "function": {"name": ..., "arguments": "<JSON text>"}}``, a type ``tool-search``/``tool_search``;
- ``tool``: what a tool did, ``{"type": "tool", "name", "arguments", "result" | "error"}``,
  ``{"role": "tool"}``, ``tool_result``, ``function_call_output``;
- ``event``: a stream event such as ``tool_input_start``, ``tool_output_end``, ``tool_call_delta``;
- ``message``: anything else.
Model turns and messages hold calls in ``tool_calls``, ``toolCalls``, ``toolInvocations``,
``parts`` or ``content`` lists (and ``content.parts``), searched recursively.

The tool calls of a trace are the calls the model asked for, in order: the ``call`` steps and
the calls other steps hold. A tool step answers a call and is not counted again, except in a
trace that holds no call: then its named tool steps are its calls.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from yamleval.records.types import Usage

_EVENT_PREFIXES = ("tool_input_", "tool_output_", "tool_call_", "tool_result_", "tool_invocation_", "tool_execution_")
_EVENT_SUFFIXES = ("_start", "_end", "_delta", "_chunk", "_done")
_CALL_TYPES = ("", "function", "tool_call", "function_call", "tool_use")  # where a bare "name" is the tool's
_NESTED = ("tool_calls", "toolCalls", "toolInvocations", "parts", "content")
_CONTAINER_KEYS = ("tool_calls", "toolCalls", "messages", "steps")


@dataclass(frozen=True)
class TraceStep:
    """One entry of a trace, read: ``kind`` is model, call, tool, event or message."""

    kind: str
    name: str | None = None  # the tool's (or the message's own)
    arguments: Any = None  # of a call or tool step, JSON text decoded; None when not recorded
    output: Any = None  # a tool step's result
    error: Any = None
    latency_ms: float | None = None
    tokens: Usage | None = None
    calls: tuple[TraceStep, ...] = ()  # the calls a model turn or message holds
    raw: Any = None  # the entry as the runner returned it


def read_trace(trace: Any) -> list[TraceStep]:
    """The steps of ``trace``, one per entry; none for a trace that is not a list or dict."""
    if isinstance(trace, Mapping):
        trace = next((trace[k] for k in _CONTAINER_KEYS if isinstance(trace.get(k), list) and trace[k]), [trace])
    return [_step(entry, 0) for entry in trace] if isinstance(trace, (list, tuple)) else []


def tool_calls(steps: Sequence[TraceStep]) -> list[TraceStep]:
    """The tool calls among ``steps``, in order (see the module docstring)."""
    asked = [call for step in steps for call in ((step,) if step.kind == "call" else step.calls)]
    return asked or [step for step in steps if step.kind == "tool" and step.name]


def step_count(steps: Sequence[TraceStep]) -> int:
    """The steps an agent took: its model turns when the trace records them, else its tool calls."""
    return sum(step.kind == "model" for step in steps) or len(tool_calls(steps))


def _step(entry: Any, depth: int) -> TraceStep:
    if isinstance(entry, str) and entry.strip():
        return TraceStep("call", name=entry.strip(), raw=entry)
    if not isinstance(entry, Mapping):
        return TraceStep("message", raw=entry)
    kind = entry.get("type")
    kind = kind.strip().lower().replace("-", "_") if isinstance(kind, str) else ""
    latency, tokens = entry.get("latency_ms"), entry.get("tokens")
    common = {"name": _name(entry, bare=True), "error": entry.get("error"), "raw": entry, "tokens": _usage(tokens),
              "latency_ms": latency if type(latency) in (int, float) else None}
    if kind.startswith(_EVENT_PREFIXES) or (kind.startswith("tool") and kind.endswith(_EVENT_SUFFIXES)):
        return TraceStep("event", **common)
    if entry.get("role") == "tool" or kind in ("tool", "tool_result", "function_call_output"):
        output = next((entry[key] for key in ("result", "output", "content") if key in entry), None)
        return TraceStep("tool", arguments=_arguments(entry), output=output, **common)
    # a bare "name" only names a call when the entry is not a message of another kind
    name = _name(entry, bare=entry.get("role") in (None, "assistant") and kind in _CALL_TYPES)
    if name is None and kind.startswith("tool_") and kind not in ("tool_call", "tool_use"):
        name = entry["type"].strip()[len("tool-"):] or None
    if name:
        return TraceStep("call", arguments=_arguments(entry), **{**common, "name": name})
    turn = kind == "model" or entry.get("role") == "assistant"
    return TraceStep("model" if turn else "message", calls=_calls(entry, depth), **common)


def _calls(entry: Mapping[str, Any], depth: int) -> tuple[TraceStep, ...]:
    found: list[TraceStep] = []
    for key in _NESTED if depth < 8 else ():  # calls nested deeper are not searched
        value = entry.get(key)
        value = value.get("parts") if key == "content" and isinstance(value, Mapping) else value
        for step in (_step(inner, depth + 1) for inner in (value if isinstance(value, list) else ())):
            found.extend((step,) if step.kind == "call" else step.calls)
    return tuple(found)


def _name(entry: Mapping[str, Any], bare: bool) -> str | None:
    function, payload = (entry.get(k) if isinstance(entry.get(k), Mapping) else {} for k in ("function", "payload"))
    candidates = [entry.get("tool"), entry.get("toolName"), entry.get("tool_name"), function.get("name"),
                  payload.get("toolName"), payload.get("name"), entry.get("name") if bare else None]
    return next((c.strip() for c in candidates if isinstance(c, str) and c.strip()), None)


def _arguments(entry: Mapping[str, Any]) -> Any:
    function = entry.get("function")
    source = function if isinstance(function, Mapping) else entry
    args = source.get("arguments", source.get("args"))
    try:  # OpenAI sends the arguments as JSON text
        return json.loads(args) if isinstance(args, str) else args
    except ValueError:
        return args


def _usage(tokens: Any) -> Usage | None:
    """A step's ``{"prompt": n, "completion": n}`` (a count that is not a whole number is 0)."""
    counts = [tokens.get(key) for key in ("prompt", "completion")] if isinstance(tokens, Mapping) else None
    return None if counts is None else Usage(*(n if type(n) is int else 0 for n in counts))
