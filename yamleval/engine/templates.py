"""The ``with:`` templates of an experiment rendered against its first items before anything
runs (``yamleval validate``): a name that none of them has (``{{ vars.sytem }}``) is an error at
the template's file:line:col, with the name it was likely meant to be, instead of the same
error on every item of the run."""
from __future__ import annotations

import difflib
import re
from typing import Any, Iterator, Sequence

from yamleval.config.model import Experiment, PluginSpec
from yamleval.plugins import templating
from yamleval.plugins.calls import ItemContext
from yamleval.records.errors import ConfigError
from yamleval.records.types import Item

CHECKED_ITEMS = 3
# a scorer's template that names what only the runner's answer gives cannot be rendered before it
_ANSWERED = re.compile(r"\b(output|trace|latency_ms|usage|baseline)\b")
_MISSING = re.compile(r"has no attribute '([^']*)'|'([^']*)' is undefined|has no element '([^']*)'")


def template_errors(experiment: Experiment, items: Sequence[Item]) -> list[ConfigError]:
    """An error for each template of the runner's and the scorers' ``with:`` that fails to render
    for one of ``items`` because a name it uses is not there."""
    errors = []
    plugins = [(experiment.runner, None)] + [(scorer.plugin, scorer.id) for scorer in experiment.scorers]
    for spec, scorer_id in plugins:
        for sub, text in _templates(spec.with_, ("with",)):
            if scorer_id is not None and _ANSWERED.search(text):
                continue
            error = _rendered(spec, sub, text, items, experiment, experiment.context(scorer_id))
            if error is not None:
                errors.append(error)
    return errors


def _templates(value: Any, path: tuple) -> Iterator[tuple[tuple, str]]:
    """Each template string inside ``value``, with its path."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _templates(inner, path + (key,))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _templates(inner, path + (index,))
    elif templating.is_template(value):
        yield path, value


def _rendered(spec: PluginSpec, sub: tuple, text: str, items: Sequence[Item], experiment: Experiment,
              context: str) -> ConfigError | None:
    """The error of the first item ``text`` cannot be rendered for, for want of a name; else None."""
    from jinja2.exceptions import UndefinedError

    try:
        render = templating.compile_value(text)
    except templating.TemplateProblem:  # a syntax error: binding the plugin reports it already
        return None
    for item in items:
        names = ItemContext(item, item.expected, experiment.vars).names()
        try:
            render(names)
        except UndefinedError as exc:
            found = _MISSING.search(exc.message or "")
            missing = next((g for g in found.groups() if g), None) if found else None
            close = difflib.get_close_matches(missing, _known(names), n=1, cutoff=0.6) if missing else []
            return spec.source.error(spec.where(sub), f"template: {exc.message} (rendered for item '{item.id}')",
                                     context=context, find=missing,
                                     hint=f"did you mean '{close[0]}'?" if close else
                                     "the names a template has are: " + ", ".join(sorted(names)))
    return None


def _known(names: dict[str, Any]) -> list[str]:
    """The names a template may mean: its own, and the keys of its mappings (vars, metadata, input)."""
    known = list(names)
    for value in names.values():
        if isinstance(value, dict):
            known.extend(str(key) for key in value)
    return known
