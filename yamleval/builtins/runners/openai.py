"""The ``openai`` runner: ask one of the project's ``models:`` (an OpenAI-compatible endpoint).

The endpoint, its key, retries and prices live in ``models:``; the runner names one with
``model:``. A misspelled name fails when the config is loaded, not per item.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping

from yamleval.records.types import Item, RunnerResult, Usage

if TYPE_CHECKING:
    from yamleval.builtins.models.registry import Models

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def openai(item: Item, models: Models, model: str, system: str | None = None, prompt: str | None = None,
           messages: list | None = None, temperature: float | None = None,
           max_tokens: int | None = None) -> RunnerResult:
    """Send one chat completion to the model named ``model`` in ``models:``.

    The conversation is ``system`` (when given), then either ``messages`` (a list of
    ``{role, content}`` turns, for multi-turn prompts) or one user message: ``prompt``, or
    the item's input (as JSON text when it is not a string). Their strings are templates
    rendered per item. ``temperature`` and ``max_tokens`` override the model's settings.

    The output is the answer's text; an answer that only calls tools has the list of
    ``{name, arguments}`` as its output. Tool calls are always in the trace. An answer cut off
    by its token limit has a note saying so (``metadata.notes``), shown with the item in reports.
    """
    if not isinstance(model, str) or not model:
        raise ValueError("`model` must be the name of one of the project's `models:`")
    if models is None:
        raise ValueError(f"`model: {model}` needs a `models:` section declaring it")
    conversation = _conversation(item, system, prompt, messages)
    overrides: dict[str, Any] = {}
    if temperature is not None:
        overrides["temperature"] = temperature
    if max_tokens is not None:
        overrides["max_tokens"] = max_tokens

    client = models.client(model)
    reply = client.chat(conversation, **overrides)

    usage = Usage(reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.cost)
    metadata: dict[str, Any] = {"model": client.config.model, "endpoint": model,
                                "latency_ms": round(reply.latency_ms, 3), "attempts": reply.attempts,
                                "finish_reason": reply.finish_reason}
    if reply.cut_off:
        from yamleval.builtins.models.client import cut_off_note

        metadata["notes"] = [cut_off_note(overrides.get("max_tokens", client.config.max_tokens))]
    calls = [dict(call) for call in reply.tool_calls]
    output: Any = reply.text
    if calls and not reply.text:
        output = calls
    return RunnerResult(output=output, usage=usage, metadata=metadata, trace=calls or None)


openai.model_calls = ""  # hooks.ModelRunner: one model request per item


def _conversation(item: Item, system: Any, prompt: Any, messages: Any) -> list[dict[str, Any]]:
    if system is not None and not isinstance(system, str):
        raise ValueError(f"`system` must be text, not {type(system).__name__}")
    if messages is not None and prompt is not None:
        raise ValueError("give `prompt` (one user message) or `messages` (the whole conversation), not both")
    conversation: list[dict[str, Any]] = []
    if system:
        conversation.append({"role": "system", "content": system})
    if messages is not None:
        conversation.extend(_turns(messages))
        return conversation
    if prompt is None:
        value = item.input
        prompt = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    elif not isinstance(prompt, str):
        prompt = json.dumps(prompt, ensure_ascii=False, default=str)
    conversation.append({"role": "user", "content": prompt})
    return conversation


def _turns(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, (list, tuple)) or not messages:
        raise ValueError("`messages` must be a non-empty list of {role, content}")
    turns = []
    for index, turn in enumerate(messages):
        if not isinstance(turn, Mapping) or "role" not in turn:
            raise ValueError(f"`messages[{index}]` must be a mapping with `role` and `content`")
        if turn["role"] not in ROLES:
            raise ValueError(f"`messages[{index}].role` must be one of {', '.join(sorted(ROLES))}, "
                             f"not {turn['role']!r}")
        turns.append(dict(turn))
    return turns
