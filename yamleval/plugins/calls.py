"""Plugins bound to their ``with:`` arguments, ready to be called once per item.

Binding happens once, when an experiment is prepared: the signature is read, the
arguments are checked, templates are compiled. Per item, the plugin is called with the
names it asks for, taken from the item's ``ItemContext``.
"""
from __future__ import annotations

import dataclasses
import inspect
import threading
from typing import Any, Callable, Mapping

from yamleval.plugins import hooks as plugin_hooks
from yamleval.plugins import registry as plugins
from yamleval.plugins import templating
from yamleval.config.model import PluginSpec
from yamleval.records.errors import describe_exception, raise_all
from yamleval.records.types import Item, Usage


@dataclasses.dataclass(frozen=True)
class ItemContext:
    """What a runner or scorer may ask for by name about the item at hand. ``expected`` is
    the item's, or a scorer's own ``value:``; ``output`` and ``trace`` are the runner's, once
    it has answered, with ``latency_ms`` (how long it took) and ``usage`` (the tokens and cost
    it reported, or None); ``models`` is the experiment's named endpoints; ``deadline`` is the
    ``time.monotonic()`` at which the experiment's ``timeout`` gives up on the item (None
    without one), for a runner that must stop what it started by then; ``config_dir`` is the
    folder of the file the experiment is written in, which relative paths start from; ``network``
    is the run's rate limits and endpoint records (``yamleval.calls.Network``), for a call out."""

    item: Item
    expected: Any
    vars: Mapping[str, Any]
    models: Any = None
    output: Any = None
    trace: Any = None
    deadline: float | None = None
    latency_ms: float | None = None
    usage: Usage | None = None
    config_dir: str | None = None
    baseline: Any = None  # the baseline variant's ItemResult for this item, for a scorer that compares (``pairwise``)
    network: Any = None
    loops: EventLoops | None = None  # the run's event loops, for an async plugin

    @property
    def input(self) -> Any:
        return self.item.input

    @property
    def context(self) -> Any:
        return self.item.context

    @property
    def assertions(self) -> Any:
        return self.item.assertions

    @property
    def metadata(self) -> Any:
        return self.item.metadata

    def names(self) -> dict[str, Any]:
        """Every name, for templates."""
        return {name: getattr(self, name) for name in SCORER_CONTEXT}


RUNNER_CONTEXT = ("item", "input", "expected", "context", "metadata", "vars", "models", "deadline", "config_dir",
                  "network")
SCORER_CONTEXT = ("output", "expected", "input", "item", "context", "assertions", "metadata", "trace", "vars",
                  "models", "latency_ms", "usage", "baseline")

_NEVER_AWAITABLE = frozenset({bool, int, float, str, type(None), dict, list, tuple})


class EventLoops:
    """The event loops async plugins run on for one experiment's run: one per thread that calls
    them, kept from item to item (a plugin's async client stays usable) and closed with the run
    (``close``). Made by whoever runs the items (``engine.item.ItemProcessor``)."""

    def __init__(self):
        self._here = threading.local()
        self._made: list = []
        self._lock = threading.Lock()

    def run(self, awaitable: Any) -> Any:
        """Run a coroutine to completion on this thread's loop of the run."""
        loop = getattr(self._here, "loop", None)
        if loop is None or loop.is_closed():
            import asyncio  # only when a plugin is async: asyncio is slow to import

            loop = self._here.loop = asyncio.new_event_loop()
            with self._lock:
                self._made.append(loop)
        return loop.run_until_complete(awaitable)

    def close(self) -> None:
        """Close every loop the run's threads made."""
        with self._lock:
            made, self._made = self._made, []
        for loop in made:
            if not loop.is_closed() and not loop.is_running():
                loop.close()


def run_awaitable(awaitable: Any, loops: EventLoops | None = None) -> Any:
    """Run a coroutine to completion: on the run's loop of this thread, or on a loop of its own."""
    if loops is not None:
        return loops.run(awaitable)
    import asyncio

    return asyncio.run(awaitable)


class BoundCall:
    """A plugin function with its options fixed and its context names known. ``wanted``: the
    context names it is called with (all of them for ``**kwargs``); ``named``: those its
    signature spells out; ``hooks``: what else it implements, read once when it was bound."""

    __slots__ = ("function", "wanted", "named", "static", "templated", "is_async", "requires_expected", "hooks")

    def __init__(self, function: Callable, wanted: tuple[str, ...], static: Mapping[str, Any],
                 templated: Mapping[str, Callable] | None, is_async: bool, requires_expected: bool,
                 named: tuple[str, ...] | None = None, hooks: plugin_hooks.Hooks = plugin_hooks.NONE):
        self.function = function
        self.wanted = wanted
        self.named = wanted if named is None else named
        self.static = dict(static)
        self.templated = templated or None
        self.is_async = is_async
        self.requires_expected = requires_expected
        self.hooks = hooks

    def asks_for(self, name: str) -> bool:
        """Whether the plugin names the context value ``name`` among its parameters: accepting
        anything (``**kwargs``) is not asking for it."""
        return name in self.named

    def arguments(self, context: ItemContext) -> dict[str, Any]:
        """The keyword arguments the plugin is called with for this item: the context names it
        asks for and its ``with:`` values, templates rendered."""
        kwargs = {name: getattr(context, name) for name in self.wanted}
        if self.static:
            kwargs.update(self.static)
        if self.templated:
            names = context.names()
            for key, render in self.templated.items():
                kwargs[key] = render(names)
        return kwargs

    def __call__(self, context: ItemContext) -> Any:
        result = self.function(**self.arguments(context))
        if self.is_async or (type(result) not in _NEVER_AWAITABLE and inspect.isawaitable(result)):
            result = run_awaitable(result, context.loops)
        return result


def bind(spec: PluginSpec, target: Any, kind: str, reserved: tuple[str, ...], context: str | None = None,
         instantiate: bool = True) -> BoundCall | None:
    """Check the ``with:`` keys of ``spec`` against ``target`` (what ``plugins.resolve`` found for
    it), compile its templates; raise ConfigErrors.

    With ``instantiate=False`` (for ``validate``) a class plugin is checked but not created,
    and None is returned for it.
    """
    constructor, function = plugins.unwrap_class(target)
    if not callable(function):
        raise spec.error(f"'{spec.uses}' is a {type(function).__name__}, not a function or class",
                         context=context)
    sig = plugins.signature_of(constructor or function, () if constructor else reserved)
    errors = plugins.check_arguments(spec, sig, spec.with_, kind, context)
    static, templated = {}, {}
    for key, value in spec.with_.items():
        if not templating.has_templates(value):
            static[key] = value
        elif constructor is not None:
            errors.append(spec.error("templates are not rendered for a class plugin: its `with:` goes to "
                                     "the constructor once", sub=("with", key), context=context))
        else:
            try:
                templated[key] = templating.compile_value(value)
            except templating.TemplateProblem as exc:
                errors.append(_template_error(spec, key, value, exc, context))
    try:
        found = plugin_hooks.hooks_of(constructor or function)
    except plugin_hooks.HookProblem as exc:
        errors.append(spec.error(f"'{spec.uses}' cannot be used: {exc}", context=context))
        found = plugin_hooks.NONE
    if found.validate_with is not None and not errors:
        errors.extend(_validate_with(spec, found.validate_with, static, context))
    raise_all(errors)
    if constructor is None:
        return BoundCall(function, sig.wanted, static, templated, sig.is_async, _requires_expected(function),
                         sig.named, found)
    if not instantiate:
        return None
    try:
        instance = constructor(**spec.with_)
    except Exception as exc:
        where = plugins.raised_at(exc)
        raise spec.error(f"creating '{spec.uses}' raised {describe_exception(exc)}", context=context,
                         hint=f"raised at {where}" if where else None) from None
    call_sig = plugins.signature_of(instance, reserved)
    try:
        own = plugin_hooks.hooks_of(instance)
    except plugin_hooks.HookProblem as exc:
        raise spec.error(f"'{spec.uses}' cannot be used: {exc}", context=context) from None
    return BoundCall(instance, call_sig.wanted, {}, None, call_sig.is_async, _requires_expected(instance),
                     call_sig.named, own)


def _validate_with(spec: PluginSpec, check: Callable[[dict], None], static: dict, context: str | None) -> list:
    """The errors of the plugin's own load-time check of its ``with:`` values."""
    try:
        check(dict(static))
    except ValueError as exc:
        key = getattr(exc, "key", None)  # the with: key at fault, when the plugin says
        at = ("with", key) if key in spec.with_ else (
            ("with",) if (spec.path + ("with",)) in spec.source.values else ())
        return [spec.error(str(exc), sub=at, hint=getattr(exc, "hint", None), context=context)]
    except Exception as exc:  # the check itself is broken: say so, at the plugin
        where = plugins.raised_at(exc)
        return [spec.error(f"checking the `with:` values of '{spec.uses}' raised {describe_exception(exc)}",
                           context=context, hint=f"raised at {where}" if where else None)]
    return []


def _template_error(spec: PluginSpec, key: str, value: Any, problem: templating.TemplateProblem,
                    context: str | None):
    """The error at the template's own line when it is a ``|`` block, else at its value."""
    path = spec.where(("with", key))
    message = str(problem)
    line = None
    if isinstance(value, str) and problem.line is not None:
        line = spec.source.line_in_value(path, problem.line)
        if line is None and "\n" in value.strip():
            message += f", on line {problem.line} of the template"
    return spec.source.error(path, message, context=context, line=line,
                             hint="a template is made of {{ expression }} and {% statement %}")


def _requires_expected(function: Callable) -> bool:
    try:
        parameter = inspect.signature(function).parameters.get("expected")
    except (TypeError, ValueError):
        return False
    return parameter is not None and parameter.default is parameter.empty
