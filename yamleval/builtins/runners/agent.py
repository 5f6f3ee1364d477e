"""The ``agent`` runner: a tool-calling agent under test, looped over the Chat Completions tools protocol.

Each item starts from nothing: its own conversation, its own sandbox folder (removed
afterwards) and its own tool instances, so no item sees another's history or files. The
model is asked, the tools it calls are run and their results (or errors) fed back, until it
answers without calling a tool. Every model turn and tool call is a step of the trace.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from yamleval.records.errors import describe_exception
from yamleval.records.types import Item, RunnerResult, Usage

if TYPE_CHECKING:
    from yamleval.builtins.models.client import ChatReply
    from yamleval.builtins.models.registry import Models


def agent(item: Item, models: Models, model: str, instructions: str | None = None, tools: list | None = None,
          max_steps: int = 10, tool_timeout: float = 30, parallel_tool_calls: bool = True,
          prompt: str | None = None) -> RunnerResult:
    """Run the agent named by ``model`` (one of ``models:``) with ``tools`` on one item.

    The conversation is ``instructions`` as the system message (when given), then one user
    message: ``prompt``, or the item's input (as JSON text when it is not a string).
    ``tools`` are built-in tool names or ``{uses: package.module:function, ...}`` entries.
    A tool error or a call running longer than ``tool_timeout`` seconds is returned to the
    model as that call's result, as a real agent would see it. ``parallel_tool_calls:
    false`` asks the model for at most one call per turn. More than ``max_steps`` model
    turns without a final answer is an error. The output is the final answer's text; the
    trace holds every model turn and tool call; usage is summed over all turns.
    """
    if not isinstance(model, str) or not model:
        raise ValueError("`model` must be the name of one of the project's `models:`")
    if models is None:
        raise ValueError(f"`model: {model}` needs a `models:` section declaring it")
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"`max_steps` must be a whole number of at least 1, not {max_steps!r}")
    if isinstance(tool_timeout, bool) or not isinstance(tool_timeout, (int, float)) or tool_timeout <= 0:
        raise ValueError(f"`tool_timeout` must be a positive number of seconds, not {tool_timeout!r}")
    if tools is not None and not isinstance(tools, (list, tuple)):
        raise ValueError("`tools` must be a list of tool names or {uses: ...} entries")
    from yamleval.builtins.tools import build_tools  # tools pull in their own dependencies; load them when used

    messages = _conversation(item, instructions, prompt)
    client = models.client(model)
    sandbox = tempfile.mkdtemp(prefix="yamleval-item-")
    try:
        built = {tool.name: tool for tool in build_tools(list(tools or []), sandbox)}
        specs = [tool.spec() for tool in built.values()]
        options: dict[str, Any] = {"tools": specs} if specs else {}
        if specs and not parallel_tool_calls:
            options["parallel_tool_calls"] = False
        trace: list[dict[str, Any]] = []
        replies: list[ChatReply] = []
        for step in range(1, max_steps + 1):
            reply = client.chat(messages, **options)
            replies.append(reply)
            trace.append(_model_step(step, reply))
            if not reply.tool_calls:
                metadata = {"steps": step, "model": client.config.model, "endpoint": model}
                if reply.cut_off:
                    from yamleval.builtins.models.client import cut_off_note

                    metadata["notes"] = [cut_off_note(client.config.max_tokens)]
                return RunnerResult(output=reply.text, usage=_total(replies), trace=trace, metadata=metadata)
            calls = _calls_with_ids(reply, step)
            messages.append({"role": "assistant", "content": reply.text or None, "tool_calls": calls})
            for call, parsed in zip(calls, reply.tool_calls):
                entry = _run_tool(built, parsed["name"], parsed["arguments"], tool_timeout, step)
                trace.append(entry)
                content = entry["result"] if "result" in entry else f"Error: {entry['error']}"
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        raise RuntimeError(f"agent reached max_steps ({max_steps}) without a final answer")
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)


def _conversation(item: Item, instructions: Any, prompt: Any) -> list[dict[str, Any]]:
    if instructions is not None and not isinstance(instructions, str):
        raise ValueError(f"`instructions` must be text, not {type(instructions).__name__}")
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    text = item.input if prompt is None else prompt
    if not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False, default=str)
    messages.append({"role": "user", "content": text})
    return messages


def _model_step(step: int, reply: ChatReply) -> dict[str, Any]:
    return {"type": "model", "step": step, "text": reply.text,
            "tool_calls": [{"name": call["name"], "arguments": call["arguments"]} for call in reply.tool_calls],
            "latency_ms": round(reply.latency_ms, 3),
            "tokens": {"prompt": reply.usage.prompt_tokens, "completion": reply.usage.completion_tokens}}


def _calls_with_ids(reply: ChatReply, step: int) -> list[dict[str, Any]]:
    """The reply's tool calls as the assistant message must repeat them: OpenAI's shape, with ids.

    ``ChatReply.tool_calls`` drops the ids, so they are read from the raw reply; a server
    that sends none (or the legacy ``function_call``) gets ids made up here.
    """
    raw: Sequence[Any] = []
    try:
        raw = reply.raw["choices"][0]["message"].get("tool_calls") or []
    except (KeyError, IndexError, TypeError, AttributeError):
        pass
    calls = []
    for index, parsed in enumerate(reply.tool_calls):
        original = raw[index] if index < len(raw) and isinstance(raw[index], Mapping) else {}
        function = original.get("function") if isinstance(original.get("function"), Mapping) else {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(parsed["arguments"] if arguments is None else arguments, ensure_ascii=False)
        calls.append({"id": str(original.get("id") or f"call_{step}_{index}"), "type": "function",
                      "function": {"name": parsed["name"], "arguments": arguments}})
    return calls


def _run_tool(built: Mapping[str, Any], name: Any, arguments: Any, timeout: float, step: int) -> dict[str, Any]:
    """Run one call, never raising: its result or its error, as a trace entry."""
    entry: dict[str, Any] = {"type": "tool", "step": step, "name": name, "arguments": arguments}
    started = time.perf_counter()
    tool = built.get(name)
    if tool is None:
        entry["error"] = f"no tool named {name!r}; the tools are: {', '.join(built) or 'none'}"
    elif not isinstance(arguments, dict):
        entry["error"] = f"the arguments must be a JSON object, not {json.dumps(arguments, default=str)}"
    else:
        ok, value = _call_with_timeout(tool, arguments, timeout)
        entry["result" if ok else "error"] = value
    entry["latency_ms"] = round((time.perf_counter() - started) * 1000.0, 3)
    return entry


def _call_with_timeout(tool: Any, arguments: dict[str, Any], timeout: float) -> tuple[bool, str]:
    outcome: list[tuple[bool, str]] = []

    def call() -> None:
        try:
            outcome.append((True, tool.call(arguments)))  # Tool.call gives text
        except BaseException as exc:  # any failure is the model's to see, like ToolError
            outcome.append((False, _error_text(exc)))

    # A thread cannot be killed: one that overruns is abandoned (daemon) and its result ignored.
    worker = threading.Thread(target=call, name=f"yamleval-tool-{tool.name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive() or not outcome:
        return False, f"tool timed out after {timeout:g}s"
    return outcome[0]


def _error_text(exc: BaseException) -> str:
    from yamleval.builtins.tools import ToolError

    if isinstance(exc, ToolError):
        return str(exc) or type(exc).__name__
    return describe_exception(exc)


def _total(replies: Sequence[ChatReply]) -> Usage:
    costs = [reply.cost for reply in replies if reply.cost is not None]
    return Usage(sum(reply.usage.prompt_tokens for reply in replies),
                 sum(reply.usage.completion_tokens for reply in replies),
                 sum(costs) if costs else None)


def _validate_with(arguments: dict) -> None:
    """Load-time check: every tool in ``tools:`` exists and is configured (ValueError otherwise)."""
    from yamleval.builtins.tools import build_tools

    if not isinstance(arguments.get("tools", []), list):
        raise ValueError("tools must be a list of tool names or {uses: ...} entries")
    sandbox = tempfile.mkdtemp(prefix="yamleval-check-")
    try:
        build_tools(list(arguments.get("tools") or []), sandbox)
    except ValueError as exc:
        exc.key = "tools"
        raise
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)


agent.validate_with = _validate_with
agent.model_calls = "the agent makes a model call per step (up to its max_steps)"  # hooks.ModelRunner
