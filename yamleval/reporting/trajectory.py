"""An agent's trajectory as the reports show it: its trace read by ``yamleval.records.trace``, as the
``trajectory`` scorer reads it, laid out in the steps that scorer counts (the model turns when
the trace records them, else the tool calls), each tool call with the result that answered it.

Model turns are numbered steps holding the calls they asked for. In a trace without model
turns each tool call is a numbered step. Messages (a user's, a system's), stream events and
results that answer no call stand between them, unnumbered.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from yamleval.records.trace import TraceStep, read_trace, step_count, tool_calls
from yamleval.records.types import Usage


@dataclass(frozen=True)
class ShownCall:
    """A tool call with what answered it: the result or the error, and how long the tool took."""

    name: str | None
    arguments: Any = None  # None: not recorded
    result: Any = None
    error: Any = None
    latency_ms: float | None = None


@dataclass(frozen=True)
class ShownStep:
    """A numbered step (a model turn, or a tool call in a trace without turns), or an
    unnumbered entry between them (``number`` None)."""

    number: int | None
    label: str  # the runner's own word: model, assistant, user, tool call, tool_input_start, ...
    text: Any = None  # what the model or the message said
    latency_ms: float | None = None
    tokens: Usage | None = None
    error: Any = None
    calls: tuple[ShownCall, ...] = ()


@dataclass(frozen=True)
class Trajectory:
    steps: tuple[ShownStep, ...]
    step_count: int  # as the trajectory scorer's max_steps counts them
    call_count: int  # the tool calls, as the tool-call scorers count them


def read_trajectory(trace: Any) -> Trajectory | None:
    """``trace`` laid out as steps; None for a trace with no entry."""
    steps = read_trace(trace)
    if not steps:
        return None
    calls = tool_calls(steps)
    turns = any(step.kind == "model" for step in steps)
    answers, answering = _answers(steps, calls)
    shown: list[ShownStep] = []
    number = 0

    def numbered() -> int | None:
        nonlocal number
        number += 1
        return number

    for step in steps:
        if id(step) in answering:  # shown beside its call
            continue
        if step.kind == "model":
            shown.append(_step(step, numbered(), tuple(_call(c, answers) for c in step.calls)))
        elif step.kind in ("call", "tool"):  # a call of its own, or a result no call asked for
            counted = any(step is c for c in calls)
            shown.append(ShownStep(numbered() if counted and not turns else None, "tool call",
                                   calls=(_call(step, answers),)))
        elif step.calls and not turns:  # a message holding calls: each is a step
            shown.append(_step(step, None, ()))
            shown.extend(ShownStep(numbered(), "tool call", calls=(_call(c, answers),)) for c in step.calls)
        else:
            shown.append(_step(step, None, tuple(_call(c, answers) for c in step.calls)))
    return Trajectory(tuple(shown), step_count(steps), len(calls))


def _answers(steps: Sequence[TraceStep], calls: Sequence[TraceStep]) -> tuple[dict[int, TraceStep], set[int]]:
    """Which tool step answered which call (by the call's id, else its name, else the first
    call still open), and the tool steps so placed."""
    answers: dict[int, TraceStep] = {}
    counted = {id(call) for call in calls}
    open_calls: list[TraceStep] = []
    for step in steps:
        if step.kind == "tool" and id(step) not in counted:
            wanted = _raw(step, "tool_call_id", "toolCallId", "call_id")
            match = next((c for c in open_calls if wanted is not None and _raw(c, "id", "toolCallId") == wanted), None)
            match = match or next((c for c in open_calls if wanted is None and (step.name is None or c.name == step.name)),
                                  None)
            if match is not None:
                open_calls.remove(match)
                answers[id(match)] = step
        open_calls.extend(c for c in ((step,) if step.kind == "call" else step.calls) if id(c) in counted)
    return answers, {id(step) for step in answers.values()}


def _raw(step: TraceStep, *keys: str) -> Any:
    raw = step.raw if isinstance(step.raw, Mapping) else {}
    return next((raw[key] for key in keys if raw.get(key) is not None), None)


def _call(call: TraceStep, answers: Mapping[int, TraceStep]) -> ShownCall:
    answer = answers.get(id(call), call if call.kind == "tool" else None)
    if answer is None:
        return ShownCall(call.name, call.arguments, error=call.error, latency_ms=call.latency_ms)
    return ShownCall(call.name or answer.name, call.arguments if call.arguments is not None else answer.arguments,
                     answer.output, answer.error or call.error, answer.latency_ms)


def _step(step: TraceStep, number: int | None, calls: tuple[ShownCall, ...]) -> ShownStep:
    raw = step.raw
    if not isinstance(raw, Mapping):
        return ShownStep(number, step.kind, raw)
    label = next((v for v in (raw.get("type"), raw.get("role")) if isinstance(v, str) and v.strip()), step.kind)
    label += f" {step.name}" if step.name and step.kind != "model" else ""
    return ShownStep(number, label, _said(raw), step.latency_ms, step.tokens, step.error, calls)


def _said(raw: Mapping[str, Any]) -> Any:
    """The text of a turn or message: its ``text`` or ``content``, or the text parts of its content."""
    for key in ("text", "content"):
        value = raw.get(key)
        if isinstance(value, str):
            if value.strip():
                return value
        elif isinstance(value, list):
            parts = [p.get("text") for p in value if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
            if parts:
                return "\n".join(parts)
    return None
