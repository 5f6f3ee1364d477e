"""What a plugin can do besides being called: the typed hooks it implements.

A hook is a Protocol. A function plugin implements one by carrying the attribute
(``bleu.corpus_score = _corpus_bleu``), a class plugin by having the method. They are read
once, when the plugin is bound (``hooks_of``), and kept on the bound plugin as a ``Hooks``
record: nothing looks for an attribute per item.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol, runtime_checkable


@runtime_checkable
class ValidatesWith(Protocol):
    """A plugin that checks its own ``with:`` values when the config is loaded: ``validate_with``
    gets them as a dict and raises ``OptionError`` (or any ValueError) for a bad one."""

    def validate_with(self, options: dict) -> None: ...


@runtime_checkable
class CorpusScorer(Protocol):
    """A scorer with a whole-run score: ``corpus_score(stats, **with)`` turns the summed
    ``corpus_stats`` of its items' metadata into one figure (corpus BLEU)."""

    def corpus_score(self, stats: list, **options: Any) -> float: ...


@runtime_checkable
class ShowsRequest(Protocol):
    """A runner that says what it would send or run for an item, without doing it, for
    ``yamleval preview``: ``request(**arguments)`` gets the item's call arguments and returns
    ``{method, url, ...}`` for a request or what a program is run with."""

    def request(self, **arguments: Any) -> Mapping[str, Any]: ...


@runtime_checkable
class ModelRunner(Protocol):
    """A runner whose work is requests to the project's ``models:``: each request is kept in
    the answer cache on its own, and ``preview`` shows its first one. ``model_calls`` says how
    many an item costs when that is not one ("" when it is), for preview's note."""

    model_calls: str


@runtime_checkable
class CallsPerItem(Protocol):
    """A plugin that makes more than one model call for each item (``pairwise`` asks in both
    orders): ``calls_per_item`` says how many, for ``preview``'s count and estimate."""

    calls_per_item: int


@dataclass(frozen=True)
class Hooks:
    """The hooks one bound plugin implements; None (or False) for those it does not."""

    validate_with: Callable[[dict], None] | None = None
    corpus_score: Callable[..., float] | None = None
    request: Callable[..., Mapping[str, Any]] | None = None
    model_runner: bool = False
    model_calls: str = ""
    calls_per_item: int = 1


NONE = Hooks()


class HookProblem(Exception):
    """A plugin declares a hook it cannot serve (a ``validate_with`` that is not callable)."""


def _callable(plugin: Any, name: str) -> Callable | None:
    hook = getattr(plugin, name)
    if not callable(hook):
        raise HookProblem(f"its `{name}` is a {type(hook).__name__}, not a function")
    return hook


def hooks_of(plugin: Any) -> Hooks:
    """The hooks ``plugin`` (a function, a class or an instance) implements; HookProblem for one
    declared but unusable. Called once per bound plugin."""
    if not any(isinstance(plugin, hook) for hook in (ValidatesWith, CorpusScorer, ShowsRequest, ModelRunner,
                                                     CallsPerItem)):
        return NONE
    per_item = getattr(plugin, "calls_per_item", 1) if isinstance(plugin, CallsPerItem) else 1
    if not isinstance(per_item, int) or isinstance(per_item, bool) or per_item < 1:
        raise HookProblem(f"its `calls_per_item` is {per_item!r}, not a whole number of 1 or more")
    calls = ""
    if isinstance(plugin, ModelRunner):
        calls = plugin.model_calls
        if not isinstance(calls, str):
            raise HookProblem(f"its `model_calls` is a {type(calls).__name__}, not text")
    return Hooks(
        validate_with=_callable(plugin, "validate_with") if isinstance(plugin, ValidatesWith) else None,
        corpus_score=_callable(plugin, "corpus_score") if isinstance(plugin, CorpusScorer) else None,
        request=_callable(plugin, "request") if isinstance(plugin, ShowsRequest) else None,
        model_runner=isinstance(plugin, ModelRunner), model_calls=calls, calls_per_item=per_item)
