"""``--set PATH=VALUE``: one scalar of every experiment (or of one: ``ID:PATH=VALUE``) replaced
before the schema checks it, as if the file said so (``--set runner.with.model=big``). A number in
the path is a list position (``scorers.0.threshold``); the value is read as YAML (``0.5``, ``true``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from yamleval.records.errors import UsageError


@dataclass(frozen=True)
class Override:
    text: str  # as given
    experiment: str | None
    path: tuple[str | int, ...]
    value: Any


def parse(given: Sequence[str]) -> tuple[Override, ...]:
    """Each ``[ID:]PATH=VALUE``, checked."""
    import yaml

    out = []
    for text in given:
        target, equals, value = text.partition("=")
        experiment, colon, path = target.rpartition(":")
        parts = tuple(int(p) if p.isdigit() else p for p in path.strip().split("."))
        if not equals or not all(str(p) for p in parts) or (colon and not experiment):
            raise UsageError(f"--set {text}: give PATH=VALUE, e.g. --set runner.with.model=big (or ID:PATH=VALUE"
                             " for one experiment)")
        try:
            parsed = yaml.safe_load(value) if value.strip() else value
        except yaml.YAMLError:
            parsed = value
        if isinstance(parsed, (dict, list)):
            raise UsageError(f"--set {text}: the value must be a single value (text, a number, true/false),"
                             " not a list or a mapping")
        out.append(Override(text, experiment or None, parts, parsed))
    return tuple(out)


def _set(node: Any, override: Override, experiment_id: Any) -> None:
    *parents, last = override.path
    for depth, part in enumerate(override.path):
        where = ".".join(map(str, override.path[:depth])) or "the experiment"
        if isinstance(part, int) and not (isinstance(node, list) and part < len(node)):
            raise UsageError(f"--set {override.text}: {where} of experiment '{experiment_id}' has no item {part}")
        if isinstance(part, str) and not isinstance(node, dict):
            raise UsageError(f"--set {override.text}: {where} of experiment '{experiment_id}' is"
                             f" {type(node).__name__ if node is not None else 'empty'}, not a mapping")
        if depth == len(parents):
            break
        if isinstance(part, str) and part not in node:
            node[part] = {}
        node = node[part]
    if isinstance(node[last] if isinstance(last, int) else node.get(last), (dict, list)):
        raise UsageError(f"--set {override.text}: {'.'.join(map(str, override.path))} of experiment"
                         f" '{experiment_id}' is a mapping or a list; --set replaces a single value")
    node[last] = override.value


def apply(overrides: Iterable[Override], experiments: Iterable[tuple[dict, dict]], applied: set[str]) -> None:
    """Each override set in each (expanded, as written) experiment mapping it is for; the texts of
    those that found an experiment are added to ``applied``."""
    for data, raw in experiments:
        for override in overrides:
            if override.experiment in (None, data.get("id")):
                _set(data, override, data.get("id"))
                _set(raw, override, data.get("id"))
                applied.add(override.text)


def unapplied(overrides: Iterable[Override], applied: set[str]) -> None:
    """Fail for an ``ID:PATH=VALUE`` whose ID names no experiment."""
    for override in overrides:
        if override.text not in applied:
            raise UsageError(f"--set {override.text}: no experiment with the id '{override.experiment}'")
