"""Jinja2 templates in ``with:`` strings, rendered per item in a sandbox.

Only strings written in the config are templates; dataset values are passed in as
data and never rendered themselves.
"""
from __future__ import annotations

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


def compile_value(value: Any) -> Callable[[Mapping[str, Any]], Any]:
    """A function of the template variables that renders every template inside ``value``."""
    from jinja2 import TemplateSyntaxError

    if isinstance(value, dict):
        parts = {k: compile_value(v) for k, v in value.items()}
        return lambda names: {k: part(names) for k, part in parts.items()}
    if isinstance(value, list):
        parts_list = [compile_value(v) for v in value]
        return lambda names: [part(names) for part in parts_list]
    if not is_template(value):
        return lambda names: value
    try:
        template = _environment().from_string(value)
    except TemplateSyntaxError as exc:
        raise TemplateProblem(f"template syntax: {exc.message}", exc.lineno) from None

    def render(names: Mapping[str, Any]) -> str:
        return template.render(names)

    return render
