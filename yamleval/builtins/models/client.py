"""A client for OpenAI-compatible Chat Completions endpoints; its ``post`` serves ``embeddings`` too.

One pooled session per endpoint; transient failures (connection errors, timeouts, 408, 409,
429, 5xx) are retried by ``transport.request`` with exponential backoff and jitter, honouring
``Retry-After``. Every call waits for the endpoint's limiter (its ``rate_limit``, adaptive
concurrency), one per base URL and model in the run whose ``Network`` the client is made with.
The api key is sent as a bearer token and never appears in a message, a repr or an exception.

The answer cache an item may use is handed to the client by the engine: ``calling(use, role)``
is the same client (its session, limiter and what it has learned of the server) with its
calls answered from that cache.
"""
from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from yamleval.calls import transport
from yamleval.calls.health import Endpoint
from yamleval.calls.network import Network, RunNetwork
from yamleval.records.errors import YamlevalError
from yamleval.builtins.models.config import ModelConfig
from yamleval.builtins.models.extract import parse_answer, schema_problem
from yamleval.builtins.models.replies import content_text, server_message, snippet, tool_calls, usage_of, with_schema_instruction
from yamleval.records.types import Usage

if TYPE_CHECKING:
    from yamleval.calls.answers import Use

# A chat completion is kilobytes; a reply this big is a wrong endpoint or a broken server, and
# reading it whole, twenty items at a time, would exhaust the memory of the run.
MAX_REPLY_BYTES = 10_000_000
JUDGE_MAX_TOKENS = 1024  # room for a verdict and its reasoning, when the model's entry sets no max_tokens


class ModelError(YamlevalError):
    """A call to a model endpoint failed; ``status`` is the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None, model: str | None = None,
                 retryable: bool = False, retry_after: float | None = None, attempts: int = 1):
        super().__init__(message)
        self.status = status
        self.model = model
        self.retryable = retryable
        self.retry_after = retry_after
        self.attempts = attempts


class StructuredAnswerError(ModelError):
    """The model's answer did not fit the schema, even after one retry, or was cut off by its
    token limit (``cut_off``: asking again would only cut it off again).

    ``raw`` is the text of the last answer, kept for the report; ``replies`` are
    every reply received, so their token usage can still be counted.
    """

    def __init__(self, message: str, *, raw: str, replies: Sequence["ChatReply"] = (),
                 model: str | None = None, cut_off: bool = False):
        super().__init__(message, model=model)
        self.raw = raw
        self.replies = list(replies)
        self.cut_off = cut_off


@dataclass(frozen=True)
class ChatReply:
    """One chat completion. ``tool_calls`` are ``{name, arguments}`` with the arguments
    parsed into a dict when they are a JSON object, else left as the raw string."""

    text: str
    tool_calls: list[dict[str, Any]]
    usage: Usage
    latency_ms: float
    cost: float | None
    raw: Any
    attempts: int = 1
    finish_reason: str | None = None

    @property
    def cut_off(self) -> bool:
        """Whether the answer ended at its token limit, not where the model meant it to."""
        return self.finish_reason == "length"


def cut_off_note(max_tokens: int | None) -> str:
    """The note on an item whose answer was cut off at ``max_tokens`` (None: the server's own limit)."""
    return f"answer cut off at max_tokens ({max_tokens})" if max_tokens else \
        "answer cut off at the server's default max_tokens (none is set)"


def request_body(config: ModelConfig, messages: Sequence[Mapping[str, Any]], *,
                 tools: Sequence[Mapping[str, Any]] | None = None, tool_choice: Any = None,
                 response_format: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """The JSON body of one chat completion to the endpoint of ``config``: its model and settings,
    the messages, then the options given."""
    body: dict[str, Any] = {"model": config.model, "messages": list(messages)}
    for key in ("temperature", "max_tokens", "seed"):
        value = getattr(config, key)
        if value is not None:
            body[key] = value
    if tools is not None:
        body["tools"] = list(tools)
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    if response_format is not None:
        body["response_format"] = dict(response_format)
    body.update(extra)
    return body


class _Learned:
    """What a client has learned of its server, shared by the client and its ``calling`` copies."""

    def __init__(self, default_limit: bool):
        self.tools_unsupported = self.json_mode_unsupported = False
        self.default_limit = default_limit  # judges then ask for JUDGE_MAX_TOKENS


class ChatClient:
    """Chat Completions over one pooled session. Thread-safe; close it when done.

    ``network`` is the run's (its limiters and endpoint records); without one the client has
    a network of its own. ``backoff`` is ``(initial, max)`` seconds of the exponential backoff
    between retries; a ``Retry-After`` header replaces it (at most a minute).
    """

    _use: Use | None = None  # the answer cache its calls may use (``calling``)
    _role = "runner"

    def __init__(self, config: ModelConfig, *, network: RunNetwork | None = None,
                 backoff: tuple[float, float] = (0.5, 8.0), pool_size: int = 64,
                 sleep: Callable[[float], None] = time.sleep):
        self.config = config
        self.url = config.base_url.rstrip("/") + "/chat/completions"
        self.network = network if network is not None else Network()
        self._backoff, self._sleep = backoff, sleep
        self._learned = _Learned(config.max_tokens is None)
        self._session = transport.open_session(pool_size)
        self._limiter = self.network.limiter((*transport.origin(self.url), config.model), config.rate_limit,
                                             config.adaptive)
        self._endpoint = self.endpoint_for(self.url, "it has no such model, or no API at that address")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if config.api_key:
            self._headers["Authorization"] = f"Bearer {config.api_key}"
        self._headers.update(config.headers)

    def __repr__(self) -> str:
        return f"ChatClient({self.config.name!r}, {self.url!r})"

    def calling(self, use: Use | None, role: str) -> "ChatClient":
        """This client with its calls answered from ``use`` (an item's answer cache), made as
        ``role`` ("runner" or "judge"); itself without one."""
        if use is None:
            return self
        bound = copy.copy(self)
        bound._use, bound._role = use, role
        return bound

    def endpoint_for(self, url: str, missing: str) -> Endpoint:
        """The run's record of the requests to ``url`` of this model; ``missing``: what a 404 means."""
        where = f"models.{self.config.name}"
        shown = f"model {self.config.name!r} ({self.config.model} at {transport.shown_url(url)})"
        return self.network.endpoint(("model", self.config.name, url, self.config.model), shown,
                                     address=f"`base_url` of {where}", credentials=f"`api_key` of {where}",
                                     missing=f"{missing}: check `model` and `base_url` of {where} (an "
                                             "OpenAI-compatible base_url usually ends in /v1)")

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> "ChatClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plain chat ---------------------------------------------------------------------

    def chat(self, messages: Sequence[Mapping[str, Any]], *, tools: Sequence[Mapping[str, Any]] | None = None,
             tool_choice: Any = None, response_format: Mapping[str, Any] | None = None,
             **extra: Any) -> ChatReply:
        """Send one chat completion request, retrying transient failures; raise ModelError."""
        return self.send(request_body(self.config, messages, tools=tools, tool_choice=tool_choice,
                                      response_format=response_format, **extra))

    def send(self, body: Mapping[str, Any]) -> ChatReply:
        """POST one request ``body`` (``request_body`` made it) and read the reply; one asked
        before comes from the answer cache when this client's calls may use one (``calling``)."""
        use = self._use
        entry = use.key({"call": "chat", "url": transport.shown_url(self.url), "body": body}) \
            if use is not None and use.caches_request(body, self._role) else None
        if entry is not None:
            kept = use.get(entry, "reply")
            if kept is not None:  # answered before: the same reply, no call, nothing charged
                return self._reply(kept["reply"], 0.0, 0)
        data, reply = self.post(self.url, body, self._endpoint)
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
            raise self.error(f"reply has no choices (HTTP {reply.status}): {snippet(reply.text)}",
                              status=reply.status, attempts=reply.attempts)
        answer = self._reply(data, reply.latency_ms, reply.attempts)
        if entry is not None:
            use.put(entry, {"reply": data}, answer.usage.total_tokens, answer.cost)
        return answer

    def post(self, url: str, body: Mapping[str, Any], endpoint: Endpoint) -> tuple[Any, transport.Reply]:
        """POST ``body`` to ``url`` of this model (its session, key, retries, rate limit; counted at
        ``endpoint``), charge the tokens used to the rate limit; the JSON reply, or ModelError."""
        try:
            reply = transport.request(self._session, "POST", url, headers=self._headers,
                                      data=json.dumps(body).encode("utf-8"), timeout=self.config.timeout,
                                      max_bytes=MAX_REPLY_BYTES, retries=max(0, self.config.retries),
                                      backoff=self._backoff, sleep=self._sleep, limiter=self._limiter,
                                      endpoint=endpoint)
        except transport.HttpFailure as failure:
            raise self._failed(failure) from None
        try:
            data = json.loads(reply.text)
        except ValueError:
            kind = reply.headers.get("Content-Type") or "no content type"
            raise self.error(f"reply is not JSON (HTTP {reply.status}, {kind}): {snippet(reply.text)}",
                              status=reply.status, attempts=reply.attempts) from None
        if self._limiter is not None:
            self._limiter.charge(usage_of(data).total_tokens)
        return data, reply

    def _failed(self, failure: transport.HttpFailure) -> ModelError:
        if failure.reply is not None:
            detail = f"HTTP {failure.status}: {server_message(failure.reply.text, failure.reply.reason)}"
        elif failure.kind == "too large":
            detail = f"the reply is {failure}; a model's reply never is: check base_url"
        else:
            detail = str(failure)
        return self.error(detail, status=failure.status, retryable=failure.retryable,
                           retry_after=failure.retry_after, attempts=failure.attempts)

    def error(self, detail: str, *, status: int | None = None, retryable: bool = False,
              retry_after: float | None = None, attempts: int = 1) -> ModelError:
        """A ModelError of this model saying ``detail``, its api key hidden."""
        after = f" (after {attempts} attempts)" if attempts > 1 else ""
        return ModelError(self._redact(f"model {self.config.name!r}: {detail}{after}"), status=status,
                          model=self.config.name, retryable=retryable, retry_after=retry_after, attempts=attempts)

    def _redact(self, text: str) -> str:
        key = self.config.api_key
        return text.replace(key, "***") if key else text

    def _reply(self, data: Mapping[str, Any], latency_ms: float, attempts: int) -> ChatReply:
        choice = data["choices"][0] if isinstance(data["choices"][0], Mapping) else {}
        message = choice.get("message") or {}
        usage = usage_of(data)
        price = self.config.price
        return ChatReply(
            text=content_text(message.get("content")), tool_calls=tool_calls(message), usage=usage,
            latency_ms=latency_ms, cost=price.cost(usage) if price else None, raw=data,
            attempts=attempts, finish_reason=choice.get("finish_reason"))

    # -- structured answers ------------------------------------------------------------

    def structured(self, messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any], name: str,
                   **extra: Any) -> tuple[dict[str, Any], ChatReply]:
        """Ask for a JSON object that fits ``schema``: a forced function call ``name``,
        falling back to JSON mode, then to extraction from the text. An answer that
        does not fit is asked for once more; then StructuredAnswerError.

        The returned reply is the last one, with usage, cost, latency and attempts
        totalled over every call made. Without a ``max_tokens`` (the model's entry or
        ``extra``), JUDGE_MAX_TOKENS are asked for, unless the server refuses the parameter.
        """
        replies: list[ChatReply] = []
        raw = ""
        for _ in range(2):
            answer, raw, reply = self._structured_limited(messages, schema, name, extra)
            replies.append(reply)
            problem = schema_problem(answer, schema, raw)
            if problem is None:
                return answer, _total(replies)
            limit = extra.get("max_tokens") or self.config.max_tokens or JUDGE_MAX_TOKENS
            # some servers end a call cut off at its limit as "tool_calls": its tokens say so
            if reply.cut_off or reply.usage.completion_tokens >= limit:
                raise StructuredAnswerError(
                    f"model {self.config.name!r}: the answer was cut off at max_tokens ({limit}) before it was "
                    f"whole: raise `max_tokens` of models.{self.config.name}", raw=raw, replies=replies,
                    model=self.config.name, cut_off=True)
        raise StructuredAnswerError(
            self._redact(f"model {self.config.name!r}: the answer does not fit the schema of {name!r}: "
                         f"{problem}; answer: {snippet(raw)}"),
            raw=raw, replies=replies, model=self.config.name)

    def _structured_limited(self, messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any], name: str,
                            extra: dict[str, Any]) -> tuple[Any, str, ChatReply]:
        """``_structured_once`` with JUDGE_MAX_TOKENS when no limit is set; a server that refuses
        ``max_tokens`` (some reasoning models want another parameter) is asked without it from then on."""
        if not self._learned.default_limit or "max_tokens" in extra:
            return self._structured_once(messages, schema, name, extra)
        try:
            return self._structured_once(messages, schema, name, {**extra, "max_tokens": JUDGE_MAX_TOKENS})
        except ModelError as exc:
            if not self._refuses(exc, ("max_tokens",)):
                raise
            self._learned.default_limit = False
            return self._structured_once(messages, schema, name, extra)

    def _structured_once(self, messages: Sequence[Mapping[str, Any]], schema: Mapping[str, Any],
                         name: str, extra: dict[str, Any]) -> tuple[Any, str, ChatReply]:
        refused: list[str] = []
        if not self._learned.tools_unsupported:
            tool = {"type": "function", "function": {"name": name, "parameters": dict(schema)}}
            try:
                reply = self.chat(messages, tools=[tool],
                                  tool_choice={"type": "function", "function": {"name": name}}, **extra)
            except ModelError as exc:
                if not self._refuses(exc, ("tool", "function")):
                    raise
                refused.append("tools")
            else:
                calls = [c for c in reply.tool_calls if c["name"] == name] or reply.tool_calls
                if calls:
                    arguments = calls[0]["arguments"]
                    if isinstance(arguments, dict):
                        return arguments, json.dumps(arguments), reply
                    return parse_answer(arguments), arguments, reply
        prompted = with_schema_instruction(messages, schema)
        if not self._learned.json_mode_unsupported:
            try:
                reply = self.chat(prompted, response_format={"type": "json_object"}, **extra)
            except ModelError as exc:
                if not self._refuses(exc, ("response_format", "json")):
                    raise
                refused.append("json_mode")
            else:
                self._remember_refused(refused)
                return parse_answer(reply.text), reply.text, reply
        reply = self.chat(prompted, **extra)
        self._remember_refused(refused)
        return parse_answer(reply.text), reply.text, reply

    def _refuses(self, exc: ModelError, words: Sequence[str]) -> bool:
        """Whether the server refused a request feature: a 400-ish reply whose message names it
        (the model's name, at the start of every message, does not count)."""
        prefix = self._redact(f"model {self.config.name!r}: ")
        text = exc.message[len(prefix):] if exc.message.startswith(prefix) else exc.message
        return exc.status in (400, 422, 501) and any(w in text.lower() for w in words)

    def _remember_refused(self, refused: Sequence[str]) -> None:
        """Skip the refused features from now on, for every item, but only once a call without
        them has succeeded: a 400 that names a feature may be about one request alone (a prompt
        too long for its functions), and must not change how every later item is asked."""
        if "tools" in refused:
            self._learned.tools_unsupported = True
        if "json_mode" in refused:
            self._learned.json_mode_unsupported = True


def _total(replies: Sequence[ChatReply]) -> ChatReply:
    last = replies[-1]
    if len(replies) == 1:
        return last
    costs = [r.cost for r in replies]
    return replace(
        last,
        usage=Usage(sum(r.usage.prompt_tokens for r in replies), sum(r.usage.completion_tokens for r in replies)),
        latency_ms=sum(r.latency_ms for r in replies), attempts=sum(r.attempts for r in replies),
        cost=None if all(c is None for c in costs) else sum(c or 0.0 for c in costs))
