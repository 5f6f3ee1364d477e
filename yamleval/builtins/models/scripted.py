"""A model that answers from rules in a file instead of over the network.

For offline demos and dry runs of agents and judges (what Inspect calls a mock model):
``models: {toy: {model: toy, script: agent_model.yaml}}``. The file is a list of rules;
the first whose ``when`` matches the conversation's last message gives the reply::

    - when: {role: user, content: "17 \\\\* 23"}        # regular expressions, searched
      reply: {tool_calls: [{name: calculator, arguments: {expression: "17 * 23"}}]}
    - when: {role: tool, content: "^391$"}
      reply: {content: "17 × 23 = 391."}

Token counts are words, so runs are repeatable.
"""
from __future__ import annotations

import json
import re
import time
from typing import Any, Mapping, Sequence

from yamleval.builtins.models.client import ChatReply, ModelConfig
from yamleval.records.types import Usage

WHEN_KEYS = frozenset({"role", "content"})


class ScriptedClient:
    """Answers ``chat`` and ``structured`` calls from rules, like a ChatClient."""

    def __init__(self, name: str, rules: Sequence[Mapping[str, Any]], model: str = "scripted",
                 source: str = "rules"):
        self.name = name
        self.model = model
        self.config = ModelConfig(name=name, base_url=f"script:{source}", model=model)
        self.rules = [self._checked(n, rule) for n, rule in enumerate(rules, 1)]

    @classmethod
    def from_file(cls, name: str, path: str, model: str = "scripted") -> "ScriptedClient":
        from yamleval.config import yaml_source

        rules, _ = yaml_source.load(path)
        if not isinstance(rules, list):
            raise ValueError(f"{path}: a model script is a list of rules ({{when, reply}})")
        return cls(name, rules, model, path)

    def _checked(self, number: int, rule: Any) -> tuple[dict[str, re.Pattern], dict[str, Any]]:
        if not isinstance(rule, Mapping) or not isinstance(rule.get("reply"), Mapping):
            raise ValueError(f"model script rule {number}: give `when:` and `reply: {{content or tool_calls}}`")
        when = rule.get("when") or {}
        unknown = set(when) - WHEN_KEYS
        if unknown:
            raise ValueError(f"model script rule {number}: `when` takes role and content, not {', '.join(unknown)}")
        return {key: re.compile(str(value)) for key, value in when.items()}, dict(rule["reply"])

    def chat(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> ChatReply:
        started = time.perf_counter()
        last = messages[-1] if messages else {}
        content = last.get("content") if isinstance(last.get("content"), str) else json.dumps(last.get("content"))
        for when, reply in self.rules:
            role_rule, content_rule = when.get("role"), when.get("content")
            if role_rule is not None and not role_rule.search(str(last.get("role", ""))):
                continue
            if content_rule is not None and not content_rule.search(content or ""):
                continue
            return self._reply(messages, reply, started)
        raise ValueError(f"model '{self.name}': no rule of its script matches the last message "
                         f"({last.get('role')}: {(content or '')[:120]!r})")

    def _reply(self, messages: Sequence[Mapping[str, Any]], reply: Mapping[str, Any], started: float) -> ChatReply:
        text = str(reply.get("content") or "")
        calls = [{"name": str(c["name"]), "arguments": c.get("arguments") or {}} for c in reply.get("tool_calls") or []]
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [{"id": f"call_{len(messages)}_{n}", "type": "function",
                                      "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                                     for n, c in enumerate(calls)]
        prompt = sum(len(str(m.get("content") or "").split()) for m in messages)
        completion = len(text.split()) + sum(len(json.dumps(c["arguments"]).split()) for c in calls)
        raw = {"choices": [{"message": message, "finish_reason": "tool_calls" if calls else "stop"}],
               "usage": {"prompt_tokens": prompt, "completion_tokens": completion}, "model": self.model}
        return ChatReply(text=text, tool_calls=calls, usage=Usage(prompt, completion), cost=None, raw=raw,
                         latency_ms=(time.perf_counter() - started) * 1000.0, finish_reason=raw["choices"][0]["finish_reason"])

    def structured(self, messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any], name: str,
                   **extra: Any) -> tuple[dict[str, Any], ChatReply]:
        reply = self.chat(messages)
        if reply.tool_calls and isinstance(reply.tool_calls[0]["arguments"], dict):
            return reply.tool_calls[0]["arguments"], reply
        try:
            answer = json.loads(reply.text)
        except ValueError:
            raise ValueError(f"model '{self.name}': its scripted reply is not a JSON object: {reply.text[:120]!r}") from None
        return answer, reply

    def close(self) -> None:
        pass
