"""tool_call_accuracy: did the system under test call the expected tools? Deterministic.

Tool calls are read from the runner's ``trace`` (``RunnerResult(trace=[...])``) by
``yamleval.records.trace``, which lists the shapes it accepts.
"""
from __future__ import annotations

from typing import Any

from yamleval.records.trace import read_trace, tool_calls
from yamleval.records.types import Score


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
    actual = [call.name for call in tool_calls(read_trace(trace))]
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


def _is_subsequence(wanted: list[str], actual: list[str]) -> bool:
    calls = iter(actual)
    return all(any(name == call for call in calls) for name in wanted)
