"""Reading a Chat Completions reply: its usage, text, tool calls and a server's error message."""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from yamleval.records.types import Usage


def usage_of(data: Any) -> Usage:
    """The tokens a reply says it used (none where it says nothing readable)."""
    usage = data.get("usage") if isinstance(data, Mapping) else None
    counts = [usage.get(key) if isinstance(usage, Mapping) else 0 for key in ("prompt_tokens", "completion_tokens")]
    return Usage(*(count if isinstance(count, int) else 0 for count in counts))


def with_schema_instruction(messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any]) -> list[dict]:
    """``messages`` with a system instruction to answer with JSON that fits ``schema``."""
    # JSON mode on OpenAI requires the word JSON in the messages; the schema says what to put in it.
    instruction = ("Answer with only a JSON object that matches this JSON Schema:\n"
                   + json.dumps(schema, sort_keys=True))
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0]["content"] = f"{out[0]['content']}\n\n{instruction}"
    else:
        out.insert(0, {"role": "system", "content": instruction})
    return out


def content_text(content: Any) -> str:
    """A message's content as text (its text parts joined)."""
    if content is None:
        return ""
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return str(content)


def tool_calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A message's tool calls as ``{name, arguments}``, the arguments parsed when they are a JSON object."""
    calls = message.get("tool_calls") or []
    if not calls and isinstance(message.get("function_call"), Mapping):  # the legacy shape
        calls = [{"function": message["function_call"]}]
    out = []
    for call in calls:
        function = (call or {}).get("function") or {}
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments)
            except ValueError:
                parsed = None
            arguments = parsed if isinstance(parsed, dict) else arguments
        out.append({"name": function.get("name"), "arguments": arguments if arguments is not None else {}})
    return out


def server_message(text: str, reason: str | None) -> str:
    """What a failed reply says went wrong: its error message, else the start of its body."""
    try:
        data = json.loads(text)
    except ValueError:
        return snippet(text) or reason or "no message"
    if isinstance(data, Mapping):
        error = data.get("error")
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"])
        for value in (error, data.get("message"), data.get("detail")):
            if isinstance(value, str) and value:
                return value
    return snippet(text)


def snippet(text: str, limit: int = 500) -> str:
    """``text`` cut to ``limit`` characters for a message."""
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "…"
