"""What a run would send, shown before anything is sent: ``yamleval preview``.

For the first items of each experiment, the runner's request and every LLM judge's prompt are
built by the code a run uses, stopped where it would send: model calls at the client
(``_Recorder.post``), the ``http`` and ``command`` runners by their own ``request`` hook
(``hooks.ShowsRequest``: what they send or run for an item), and other Python runners are
shown as their reference and ``with:`` values, never called. Then an approximate estimate of
the whole run: calls, prompt tokens (characters / 4), the completion bound of ``max_tokens``
and the cost from ``price:``.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from yamleval.records import figures
from yamleval.engine import plan
from yamleval.calls import transport
from yamleval.plugins.calls import BoundCall, ItemContext
from yamleval.config.model import Experiment
from yamleval.records.errors import describe_exception
from yamleval.builtins.models.client import ChatClient
from yamleval.builtins.models.registry import Models
from yamleval.records.redaction import Secrets, redact_text, redact_value
from yamleval.records.types import Item, ItemResult

PLACEHOLDER = "<the runner's answer>"
PLACEHOLDER_BASELINE = "<the baseline variant's answer>"
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Call:
    """One request a run makes for an item, as it would be sent (``shown``), or why it cannot be built."""

    what: str  # "runner openai", "scorer judge"
    target: str  # where it goes: "model judge: POST http://…/chat/completions", "not called: …"
    shown: Any = None  # JSON-able: the request body, the argv…; None with a problem
    problem: str | None = None
    model: str | None = None  # the `models:` entry it calls
    prompt_chars: int = 0  # of the rendered prompt (messages, and tools), for a model call
    max_tokens: int | None = None
    per_item: int = 0  # calls made per run of the item (judge repeats); 0 for what calls nothing


@dataclass(frozen=True)
class ItemPreview:
    item_id: str
    calls: tuple[Call, ...]


@dataclass(frozen=True)
class Estimate:
    """Approximate totals of a run; None where they cannot be known."""

    calls: int | None
    prompt_tokens: int | None
    completion_tokens: int | None  # the bound: every call using its whole max_tokens
    cost: float | None
    runner_calls: int | None = None  # per run of an item
    judge_calls: int | None = None
    unknown: tuple[str, ...] = ()  # why what is None is not known


@dataclass(frozen=True)
class ExperimentPreview:
    experiment_id: str
    dataset: str
    items: tuple[ItemPreview, ...]
    total: int | None  # items in the dataset (after its limit); None for a remote one
    repeats: int
    estimate: Estimate
    notes: tuple[str, ...] = ()


class _Sent(Exception):
    """Raised where a model request would be sent, carrying it."""

    def __init__(self, client: ChatClient, url: str, body: Mapping[str, Any]):
        super().__init__("not sent")
        self.client = client
        self.url = url
        self.body = body


class _Recorder(ChatClient):
    """A client that builds every request as ``ChatClient`` does and stops before sending it."""

    def post(self, url: str, body: Mapping[str, Any], endpoint: Any) -> tuple[Any, Any]:
        raise _Sent(self, url, body)


class _RecordingModels(Models):
    """The experiment's ``models:`` with clients that send nothing."""

    def client(self, name: str) -> ChatClient:
        problem = self.unknown(name)
        if problem:
            raise KeyError(problem)
        if name not in self._clients:
            self._clients[name] = _Recorder(self.config(name))
        return self._clients[name]


def _built_in(bound: BoundCall) -> bool:
    return getattr(bound.function, "__module__", "").startswith("yamleval.")


def _target(client: ChatClient, url: str) -> str:
    base = client.config.base_url
    if base.startswith("script:"):
        return f"model {client.config.name} (its script {base[len('script:'):]})"
    return f"model {client.config.name}: POST {transport.shown_url(url)}"


def _prompt_chars(body: Mapping[str, Any]) -> int:
    chars = sum(len(m["content"]) for m in body.get("messages", ()) if isinstance(m.get("content"), str))
    chars += sum(len(text) for text in body.get("input", ()) if isinstance(text, str))  # texts to embed
    if body.get("tools"):
        chars += len(json.dumps(body["tools"], ensure_ascii=False))
    return chars


def _model_call(what: str, bound: BoundCall, arguments: dict[str, Any], per_item: int) -> Call:
    """Run a built-in plugin up to its first model request and show that request."""
    try:
        bound.function(**arguments)
    except _Sent as sent:
        body = dict(sent.body)
        return Call(what, _target(sent.client, sent.url), body, model=sent.client.config.name,
                    prompt_chars=_prompt_chars(body), per_item=per_item,
                    max_tokens=0 if "input" in body else body.get("max_tokens"))  # an embedding completes nothing
    except Exception as exc:
        return Call(what, "no request", problem=f"the run would fail here: {describe_exception(exc)}")
    return Call(what, "no request", problem="it made no model call")


def _runner_call(prepared: plan.Prepared, context: ItemContext) -> Call:
    spec, bound = prepared.experiment.runner, prepared.runner
    what = f"runner {spec.uses}"
    try:
        arguments = bound.arguments(context)
        request = bound.hooks.request if _built_in(bound) else None  # preview never calls the user's code
        if request is not None:
            shown = request(**arguments)
            if "url" in shown:  # a request: its method and URL are the line above what it sends
                sent = {key: value for key, value in shown.items() if key not in ("method", "url")}
                return Call(what, f"{shown['method']} {shown['url']}", sent, per_item=1)
            return Call(what, "a program, run for the item", shown)
    except Exception as exc:
        return Call(what, "no request", problem=f"the run would fail here: {describe_exception(exc)}")
    if bound.hooks.model_runner and _built_in(bound):
        return _model_call(what, bound, arguments, 1)
    return Call(what, "Python code, not called", {"uses": spec.uses, "with": {
        key: arguments.get(key, value) for key, value in spec.with_.items()}})


def _judge_calls(prepared: plan.Prepared, context: ItemContext) -> list[Call]:
    """The prompt of every scorer that asks a model, for the placeholder answer."""
    calls = []
    answered = dataclasses.replace(context, output=PLACEHOLDER)
    variant = prepared.experiment.variant
    if prepared.compares and variant is not None and not variant.baseline:  # the baseline's answer, to compare
        answered = dataclasses.replace(answered, baseline=ItemResult(context.item, "passed", output=PLACEHOLDER_BASELINE))
    for scorer in prepared.scorers:
        if "models" not in scorer.call.wanted:
            continue
        what = f"scorer {scorer.id}"
        if not _built_in(scorer.call):
            calls.append(Call(what, "Python code, not called", {"uses": scorer.spec.plugin.uses}))
            continue
        spec = scorer.spec
        own = dataclasses.replace(answered, expected=spec.value) if spec.has_value else answered
        if own.expected is None and scorer.call.requires_expected:
            calls.append(Call(what, "not called", problem="skipped: the item has no expected value"))
            continue
        try:
            arguments = scorer.call.arguments(own)
        except Exception as exc:
            calls.append(Call(what, "no request", problem=f"the run would fail here: {describe_exception(exc)}"))
            continue
        repeats = arguments.get("repeats", 1)
        per_item = (repeats if isinstance(repeats, int) else 1) * scorer.call.hooks.calls_per_item
        calls.append(_model_call(what, scorer.call, arguments, per_item))
    return calls


def _item(prepared: plan.Prepared, models: Models, item: Item) -> ItemPreview:
    context = ItemContext(item, item.expected, prepared.experiment.vars, models,
                          config_dir=prepared.experiment.base_dir)
    return ItemPreview(item.id, (_runner_call(prepared, context), *_judge_calls(prepared, context)))


def preview_experiment(experiment: Experiment, limit: int = 3) -> ExperimentPreview:
    """The first ``limit`` items' requests and the estimate of the whole run; raise ConfigErrors."""
    prepared = plan.prepare(experiment)
    models = _RecordingModels(experiment.models, experiment.retries, experiment.timeout, experiment.base_dir)
    spec = experiment.dataset
    notes = []
    try:
        with plan.importable(experiment):
            if spec.url is not None:
                shown, total, description = (), None, spec.describe()
                notes.append("a remote dataset (url): not fetched, so its items are not shown")
            else:
                dataset = prepared.open_dataset()
                first, total = [], 0
                for item in dataset:  # every row is read, to count them
                    if len(first) < limit:
                        first.append(item)
                    total += 1
                shown = tuple(_item(prepared, models, item) for item in first)
                description = dataset.description
    finally:
        models.close()
    if prepared.runner.hooks.model_calls:
        notes.append(f"{prepared.runner.hooks.model_calls}; counted once per item")
    elif not _built_in(prepared.runner):
        notes.append("the runner is Python code: what it calls is not counted")
    price = {name: models.config(name).price for name in experiment.models}
    estimate = _estimate(shown, total, experiment.repeats, price)
    return ExperimentPreview(experiment.id, description, shown, total, experiment.repeats, estimate, tuple(notes))


def preview(experiments: Sequence[Experiment], limit: int = 3) -> tuple[ExperimentPreview, ...]:
    return tuple(preview_experiment(experiment, limit) for experiment in experiments)


# -- the estimate ------------------------------------------------------------------------

def _estimate(items: Sequence[ItemPreview], total: int | None, repeats: int, price: Mapping[str, Any]) -> Estimate:
    """Totals over ``total`` items run ``repeats`` times, from the mean of the previewed ones."""
    if total is None:
        return Estimate(None, None, None, None, unknown=("a remote dataset: its items are not counted",))
    if not items:
        if total:
            return Estimate(None, None, None, None, unknown=("no item previewed",))
        return Estimate(0, 0, 0, 0.0, 0, 0)
    runs = total * repeats / len(items)  # each previewed item stands for this many runs
    slots: dict[int, list[Call]] = {}
    for item in items:
        for index, call in enumerate(item.calls):
            slots.setdefault(index, []).append(call)
    calls = prompt = completion = cost = 0.0
    unknown: dict[str, None] = {}  # why the completion bound or the cost is not known, in order
    for group in slots.values():
        for call in group:
            if not call.per_item:
                continue
            tokens = runs * call.per_item * call.prompt_chars / CHARS_PER_TOKEN
            bound = None if call.max_tokens is None else runs * call.per_item * call.max_tokens
            rate = price.get(call.model) if call.model else None
            calls += runs * call.per_item
            prompt += tokens
            if call.model is None:
                unknown[f"{call.what} has no price"] = None
            elif bound is None:
                unknown[f"{call.what} calls {call.model} without max_tokens"] = None
            elif rate is None:
                unknown[f"models.{call.model} has no price"] = None
            if bound is not None:
                completion += bound
                if rate is not None:
                    cost += (tokens * rate.prompt + bound * rate.completion) / 1e6
    no_bound = any(call.model and call.per_item and call.max_tokens is None for g in slots.values() for call in g)
    per_item = [max(call.per_item for call in group) for group in slots.values()]
    return Estimate(round(calls), round(prompt), None if no_bound else round(completion),
                    None if unknown else cost, per_item[0], sum(per_item[1:]), tuple(unknown))


def total_estimate(previews: Sequence[ExperimentPreview]) -> Estimate:
    def add(values):
        values = list(values)
        return None if any(v is None for v in values) else sum(values)

    estimates = [p.estimate for p in previews]
    return Estimate(add(e.calls for e in estimates), add(e.prompt_tokens for e in estimates),
                    add(e.completion_tokens for e in estimates), add(e.cost for e in estimates),
                    unknown=tuple(dict.fromkeys(f"{p.experiment_id}: {why}" for p in previews
                                                for why in p.estimate.unknown)))


# -- the text ------------------------------------------------------------------------------

WIDTH = 100


def _json(value: Any, indent: str) -> str:
    """JSON as sent, a mapping or list on one line when it fits, else one entry a line."""
    flat = json.dumps(value, ensure_ascii=False, default=str)
    if len(indent) + len(flat) <= WIDTH or not isinstance(value, (dict, list)) or not value:
        return indent + flat
    inner = indent + "  "
    if isinstance(value, dict):
        entries = [_json(v, inner) for v in value.values()]
        entries = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {e[len(inner):]}" for k, e in zip(value, entries)]
        opening, closing = "{", "}"
    else:
        entries, opening, closing = [_json(v, inner) for v in value], "[", "]"
    return f"{indent}{opening}\n" + ",\n".join(entries) + f"\n{indent}{closing}"


def _count(number: int | None, unit: str) -> str:
    return "unknown" if number is None else figures.count(number, unit)


def _estimate_line(e: Estimate) -> str:
    if e.calls is None:
        return f"unknown ({'; '.join(e.unknown)})"
    completion = "unbounded" if e.completion_tokens is None else f"≤ {_count(e.completion_tokens, 'token')}"
    cost = "unknown" if e.cost is None else figures.dollars(e.cost)
    cost = cost if cost == "unknown" or cost.startswith("<") else f"≈ {cost}"
    line = (f"{_count(e.calls, 'call')}, prompt ≈ {_count(e.prompt_tokens, 'token')}, completion {completion}, "
            f"cost {cost}")
    return line + (f" ({'; '.join(e.unknown)})" if e.unknown else "")


def render(previews: Sequence[ExperimentPreview], secrets: Secrets) -> str:
    """The preview as text, every secret masked as the ``${VAR}`` it came from."""
    lines, every = [], secrets.every_value()  # a request as sent hides even a short ${VAR} value
    for p in previews:
        count = "items not read" if p.total is None else f"{len(p.items)} of {p.total} items"
        lines.append(f"experiment {p.experiment_id} ({p.dataset}): {count}")
        lines += [f"  note: {note}" for note in p.notes]
        for item in p.items:
            lines.append(f"  item {item.item_id}")
            for call in item.calls:
                lines.append(f"    {call.what} -> {redact_text(call.target, every)}")
                lines.append(f"      {call.problem}" if call.problem else _json(redact_value(call.shown, every), "      "))
        lines.append("")
    lines.append("estimate (approximate: prompt tokens are the model prompts' characters / 4, "
                 "completions at their max_tokens)")
    for p in previews:
        e = p.estimate
        runs = "" if e.runner_calls is None else (
            f"{_count(p.total, 'item')} × {_count(p.repeats, 'repeat')} × "
            f"({e.runner_calls} runner + {_count(e.judge_calls, 'judge call')}) = ")
        lines.append(f"  {p.experiment_id}: {runs}{_estimate_line(e)}")
    total = total_estimate(previews)
    lines.append(f"  total: {_estimate_line(total if total.calls is None else dataclasses.replace(total, unknown=()))}")
    return redact_text("\n".join(lines) + "\n", secrets)
