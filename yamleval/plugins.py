"""One resolver for every plugin kind: runners, scorers and datasets.

A reference is ``package.module:attr`` (imported; the config file's folder is on
``sys.path``) or a bare name looked up in the entry-point group
``yamleval.<kind>``, where the built-ins are registered too.
"""
from __future__ import annotations

import asyncio
import difflib
import importlib
import inspect
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable

from yamleval.config.model import PluginSpec
from yamleval.errors import ConfigError

KINDS = ("runners", "scorers", "datasets")


@lru_cache(maxsize=None)
def entry_points(kind: str) -> dict[str, Any]:
    """Name -> entry point for one group; a name two distributions claim is kept once, with both noted."""
    from importlib.metadata import entry_points as all_entry_points

    found: dict[str, Any] = {}
    for ep in all_entry_points(group=f"yamleval.{kind}"):
        found.setdefault(ep.name, ep)
    return found


def available(kind: str) -> list[str]:
    return sorted(entry_points(kind))


def _import_attr(ref: str) -> Any:
    module_name, _, attr = ref.partition(":")
    module = importlib.import_module(module_name)
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def resolve(spec: PluginSpec, kind: str, context: str | None = None) -> Any:
    """The object a reference names, or a located ConfigError saying why not."""
    ref = spec.uses
    singular = kind[:-1]
    at = ("uses",) if (spec.path + ("uses",)) in spec.source.values else ()
    if ":" not in ref:
        names = entry_points(kind)
        if ref not in names:
            close = difflib.get_close_matches(ref, list(names), n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'?" if close else (
                f"built-in {kind}: {', '.join(sorted(names))}; or use package.module:function")
            raise spec.error(f"unknown {singular} '{ref}'", sub=at, hint=hint, context=context)
        try:
            return names[ref].load()
        except Exception as exc:  # a broken third-party distribution
            raise spec.error(f"{singular} '{ref}' failed to load: {type(exc).__name__}: {exc}",
                             sub=at, context=context) from None
    module_name = ref.partition(":")[0]
    try:
        return _import_attr(ref)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise spec.error(f"{singular} '{ref}': no module named '{exc.name}'", sub=at, context=context,
                             hint="module paths are relative to the config file's folder") from None
        raise spec.error(f"{singular} '{ref}': importing '{module_name}' failed: {exc}", sub=at,
                         context=context) from None
    except AttributeError:
        module = sys.modules.get(module_name)
        names = [n for n in dir(module) if not n.startswith("_")] if module else []
        attr = ref.partition(":")[2]
        close = difflib.get_close_matches(attr.split(".")[-1], names, n=1, cutoff=0.6)
        hint = f"did you mean '{module_name}:{close[0]}'?" if close else None
        raise spec.error(f"{singular} '{ref}': '{module_name}' has no attribute '{attr}'", sub=at,
                         context=context, hint=hint) from None
    except Exception as exc:
        raise spec.error(f"{singular} '{ref}': importing '{module_name}' raised {type(exc).__name__}: {exc}",
                         sub=at, context=context, hint="fix the error in the plugin module") from None


@dataclass(frozen=True)
class Signature:
    """What a plugin function accepts: context names it wants, user options, and whether it is async."""

    wanted: tuple[str, ...]
    options: tuple[str, ...]
    required: tuple[str, ...]
    any_keyword: bool
    is_async: bool


def signature_of(func: Callable, reserved: Iterable[str]) -> Signature:
    reserved = set(reserved)
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return Signature((), (), (), True, False)
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
    is_async = asyncio.iscoroutinefunction(func) or asyncio.iscoroutinefunction(target)
    if any_keyword:
        wanted = list(reserved)
    return Signature(tuple(wanted), tuple(options), tuple(required), any_keyword, is_async)


def check_arguments(spec: PluginSpec, sig: Signature, given: Iterable[str], kind: str,
                    context: str | None = None) -> list[ConfigError]:
    """Errors for ``with:`` keys the plugin does not take, and for required ones missing."""
    errors = []
    given = list(given)
    for key in given:
        if key not in sig.options and not sig.any_keyword:
            close = difflib.get_close_matches(key, list(sig.options), n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'?" if close else (
                f"it takes: {', '.join(sig.options)}" if sig.options else "it takes no arguments")
            errors.append(spec.error(f"unexpected argument '{key}' for {kind[:-1]} '{spec.uses}'",
                                     sub=("with", key), key=True, hint=hint, context=context))
    for name in sig.required:
        if name not in given:
            errors.append(spec.error(f"{kind[:-1]} '{spec.uses}' needs the argument '{name}'",
                                     hint=f"add it under `with:`", context=context))
    return errors


def unwrap_class(obj: Any) -> tuple[Callable | None, Callable]:
    """For a class: (its ``__init__`` for ``with:``, its ``__call__`` for each call); else (None, obj)."""
    if inspect.isclass(obj):
        return obj, obj.__call__
    return None, obj
