"""Jinja2 templates in ``with:`` strings, rendered per item in a sandbox.

Only strings written in the config are templates; dataset values are passed in as
data and never rendered themselves.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable, Mapping

MARKERS = ("{{", "{%")


def is_template(value: Any) -> bool:
    return isinstance(value, str) and any(m in value for m in MARKERS)


def has_templates(value: Any) -> bool:
    if isinstance(value, dict):
        return any(has_templates(v) for v in value.values())
    if isinstance(value, list):
        return any(has_templates(v) for v in value)
    return is_template(value)


@lru_cache(maxsize=1)
def _environment():
    from jinja2 import StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True,
                                         autoescape=False)


class TemplateProblem(Exception):
    """A template that does not compile or render; ``line`` is within the template."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


# ``{{ input }}`` and the like: the value of one name as text, as Jinja gives it (``str()``)
_ONE_NAME = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def compile_value(value: Any) -> Callable[[Mapping[str, Any]], Any]:
    """A function of the template variables that renders every template inside ``value``.

    A template that is one name and nothing else is rendered without Jinja (which costs
    more to import than a small run's items take); any other goes through Jinja's sandbox."""
    if isinstance(value, dict):
        parts = {k: compile_value(v) for k, v in value.items()}
        return lambda names: {k: part(names) for k, part in parts.items()}
    if isinstance(value, list):
        parts_list = [compile_value(v) for v in value]
        return lambda names: [part(names) for part in parts_list]
    if not is_template(value):
        return lambda names: value
    one = _ONE_NAME.fullmatch(value)
    if one is not None:
        return _one_name(one.group(1), value)
    return _jinja(value)


def _one_name(name: str, source: str) -> Callable[[Mapping[str, Any]], str]:
    jinja: list[Callable] = []

    def render(names: Mapping[str, Any]) -> str:
        if name in names:
            return str(names[name])
        if not jinja:  # Jinja's own error for a name that is not there
            jinja.append(_jinja(source))
        return jinja[0](names)

    return render


def _jinja(value: str) -> Callable[[Mapping[str, Any]], str]:
    from jinja2 import TemplateSyntaxError

    try:
        template = _environment().from_string(value)
    except TemplateSyntaxError as exc:
        raise TemplateProblem(f"template syntax: {exc.message}", exc.lineno) from None

    def render(names: Mapping[str, Any]) -> str:
        return template.render(names)

    return render
