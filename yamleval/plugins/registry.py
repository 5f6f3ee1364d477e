"""One registry and one resolver for every plugin kind: runners, scorers, datasets, tools, reports.

A reference is ``package.module:attr`` (imported; the config file's folder is on
``sys.path`` while a project's plugins are imported, ``plugins.importpath``) or a bare
name looked up in the entry-point group ``yamleval.<kind>``. The built-ins are the entry
points of yamleval's own distribution (setup.cfg lists them); an entry is imported only
when it is used.
"""
from __future__ import annotations

import difflib
import importlib
import inspect
import os
import sys
import traceback
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Iterable

from yamleval.config.model import PluginSpec
from yamleval.records.errors import ConfigError, describe_exception, display_path

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint


@lru_cache(maxsize=None)
def builtins(kind: str) -> dict[str, EntryPoint]:
    """Name -> entry point of yamleval's own plugins of one kind, read from its distribution
    alone: reading every installed distribution costs more than a small run's start-up."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        own = distribution("yamleval").entry_points
    except PackageNotFoundError:  # not installed: no entry points at all
        return {}
    return {ep.name: ep for ep in own.select(group=f"yamleval.{kind}")}


@lru_cache(maxsize=None)
def entry_points(kind: str) -> dict[str, EntryPoint]:
    """Name -> entry point for every plugin of one kind; a built-in name always means the
    built-in, whatever another distribution registers under it."""
    from importlib.metadata import entry_points as all_entry_points

    found = dict(builtins(kind))
    for ep in all_entry_points(group=f"yamleval.{kind}"):
        found.setdefault(ep.name, ep)
    return found


def find(kind: str, name: str) -> EntryPoint | None:
    """The entry point registered as ``name``; other distributions are read only for a name
    that is not a built-in."""
    return builtins(kind).get(name) or entry_points(kind).get(name)


class OptionError(ValueError):
    """What a plugin's ``validate_with`` hook (``hooks.ValidatesWith``) raises for a bad
    ``with:`` value: ``key`` names the option at fault (the error points there), ``hint``
    suggests a fix."""

    def __init__(self, message: str, key: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.hint = hint


_OWN_CODE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")


def raised_at(exc: BaseException) -> str | None:
    """``file:line`` where ``exc`` was raised: the innermost frame in the user's code (not the
    standard library, an installed package, yamleval or the import machinery), else the innermost
    one. A SyntaxError names the spot it found itself: no frame of the module ever ran."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return f"{display_path(exc.filename)}:{exc.lineno}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
    installed = tuple({os.path.join(p, "") for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, _OWN_CODE)})
    own = [f for f in frames if not os.path.abspath(f.filename).startswith(installed)
           and "importlib" not in f.filename.split(os.sep)]
    frame = (own or frames or [None])[-1]
    return f"{display_path(frame.filename)}:{frame.lineno}" if frame else None


def _close_modules(module_name: str) -> list[str]:
    """Modules next to a missing one whose names are close to it, as dotted names."""
    import pkgutil

    parent, _, name = module_name.rpartition(".")
    try:
        where = importlib.import_module(parent).__path__ if parent else sys.path
    except Exception:
        return []
    names = [m.name for m in pkgutil.iter_modules(where) if not m.name.startswith("_")]
    return [f"{parent}.{n}" if parent else n for n in difflib.get_close_matches(name, names, n=1, cutoff=0.7)]


class Unresolved(Exception):
    """Why a reference names nothing usable: a message and a hint; the caller says where."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


def _unknown(kind: str, name: str, others: str) -> Unresolved:
    names = entry_points(kind)
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    if close:
        return Unresolved(f"unknown {kind[:-1]} '{name}'", f"did you mean '{close[0]}'?")
    listed = (f"{'registered' if kind == 'datasets' else 'built-in'} {kind}: {', '.join(sorted(names))}" if names
              else f"no {kind} are registered")
    return Unresolved(f"unknown {kind[:-1]} '{name}'", f"{listed}; or use {others}")


def load(kind: str, ref: str, others: str = "package.module:function") -> Any:
    """The object ``ref`` names, a registered name or ``package.module:attr``; Unresolved
    saying why not. ``others``: the other ways to name one, offered for an unknown name."""
    singular = kind[:-1]
    if ":" not in ref:
        entry = find(kind, ref)
        if entry is None:
            raise _unknown(kind, ref, others)
        try:
            return entry.load()
        except (Exception, SystemExit) as exc:  # a broken third-party distribution
            raise Unresolved(f"{singular} '{ref}' failed to load: {describe_exception(exc)}") from None
    module_name, _, attr = ref.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            close = _close_modules(exc.name)
            hint = (f"did you mean '{close[0]}{module_name[len(exc.name):]}:{attr}'?" if close
                    else "module paths are relative to the config file's folder")
            raise Unresolved(f"{singular} '{ref}': no module named '{exc.name}'", hint) from None
        where = raised_at(exc)
        raise Unresolved(f"{singular} '{ref}': importing '{module_name}' failed: no module named '{exc.name}'",
                         f"{f'imported at {where}; ' if where else ''}install it, or fix the import") from None
    except (Exception, SystemExit) as exc:  # SystemExit: a module calling sys.exit() when imported
        where = raised_at(exc)
        raise Unresolved(f"{singular} '{ref}': importing '{module_name}' raised {describe_exception(exc)}",
                         f"fix the error {f'at {where}' if where else 'in the plugin module'}") from None
    target: Any = module
    walked = module_name
    parts = attr.split(".")
    for index, part in enumerate(parts):
        try:
            target = getattr(target, part)
        except AttributeError:
            names = [n for n in dir(target) if not n.startswith("_")]
            close = difflib.get_close_matches(part, names, n=1, cutoff=0.6)
            fixed = f"{module_name}:{'.'.join(parts[:index] + close[:1] + parts[index + 1:])}" if close else None
            hint = f"did you mean '{fixed}'?" if fixed else (
                f"it has: {', '.join(names[:10])}{', ...' if len(names) > 10 else ''}" if names else None)
            owner = f"module '{walked}'" if target is module else f"'{walked}'"
            raise Unresolved(f"{singular} '{ref}': {owner} has no attribute '{part}'", hint) from None
        except Exception as exc:  # a module-level __getattr__ that fails
            raise Unresolved(f"{singular} '{ref}': reading '{part}' from '{walked}' raised "
                             f"{describe_exception(exc)}") from None
        walked += ("." if walked != module_name else ":") + part
    return target


def resolve(spec: PluginSpec, kind: str, context: str | None = None) -> Any:
    """The object a reference names, or a located ConfigError saying why not."""
    at = ("uses",) if (spec.path + ("uses",)) in spec.source.values else ()
    by_name = kind == "datasets" and spec.path[-1:] == ("name",)
    try:
        return load(kind, spec.uses, "`file:`, `items:` or `uses: package.module:function`" if by_name
                    else "package.module:function")
    except Unresolved as exc:
        raise spec.error(exc.message, sub=at, hint=exc.hint, context=context) from None


@dataclass(frozen=True)
class Signature:
    """What a plugin function accepts: the context names it is given (``wanted``: every one for
    ``**kwargs``; ``named``: those its parameters spell out), user options, and whether it is async."""

    wanted: tuple[str, ...]
    options: tuple[str, ...]
    required: tuple[str, ...]
    any_keyword: bool
    is_async: bool
    named: tuple[str, ...] = ()


def signature_of(func: Callable, reserved: Iterable[str]) -> Signature:
    reserved = set(reserved)
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return Signature((), (), (), True, False, ())
    wanted, options, required, any_keyword = [], [], [], False
    for p in params:
        if p.kind is p.VAR_KEYWORD:
            any_keyword = True
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            if p.name in reserved:
                wanted.append(p.name)
            else:
                options.append(p.name)
                if p.default is p.empty:
                    required.append(p.name)
    target = func.__call__ if not inspect.isroutine(func) and callable(func) else func
    is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(target)
    named = tuple(wanted)
    if any_keyword:
        wanted = list(reserved)
    return Signature(tuple(wanted), tuple(options), tuple(required), any_keyword, is_async, named)


def accepted_hint(key: str, options: Iterable[str]) -> str:
    """For an argument a plugin does not take: the nearest one it does, then all of them."""
    options = list(options)
    if not options:
        return "it accepts no arguments"
    close = difflib.get_close_matches(key, options, n=1, cutoff=0.6)
    listed = f"accepts: {', '.join(options)}"
    return f"did you mean '{close[0]}'? It {listed}" if close else f"it {listed}"


def check_arguments(spec: PluginSpec, sig: Signature, given: Iterable[str], kind: str,
                    context: str | None = None) -> list[ConfigError]:
    """Errors for ``with:`` keys the plugin does not take, and for required ones missing."""
    errors = []
    given = list(given)
    for key in given:
        if key not in sig.options and not sig.any_keyword:
            hint = accepted_hint(key, sig.options)
            errors.append(spec.error(f"unexpected argument '{key}' for {kind[:-1]} '{spec.uses}'",
                                     sub=("with", key), key=True, hint=hint, context=context))
    has_with = (spec.path + ("with",)) in spec.source.values
    for name in sig.required:
        if name not in given:
            errors.append(spec.error(f"{kind[:-1]} '{spec.uses}' needs the argument '{name}'",
                                     sub=("with",) if has_with else (), key=has_with,
                                     hint=f"add `{name}:` under `with:`", context=context))
    return errors


def unwrap_class(obj: Any) -> tuple[Callable | None, Callable]:
    """For a class: (its ``__init__`` for ``with:``, its ``__call__`` for each call); else (None, obj)."""
    if inspect.isclass(obj):
        return obj, obj.__call__
    return None, obj
