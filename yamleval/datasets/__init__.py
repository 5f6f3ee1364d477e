"""Dataset items from inline lists, files, plugins and registered names, streamed lazily."""
from __future__ import annotations

import inspect
import itertools
import os
from typing import Any, Callable, Iterable, Iterator, Mapping

from yamleval.config.model import DatasetSpec
from yamleval.datasets.files import detect_format, read_rows
from yamleval.errors import ConfigError, Location
from yamleval.types import Item

ITEM_FIELDS = ("id", "label", "input", "expected", "context", "assertions", "metadata")


class Dataset:
    """An opened dataset: an iterator of items and, when known up front, their count."""

    def __init__(self, items: Iterator[Item], total: int | None, description: str):
        self.items = items
        self.total = total
        self.description = description

    def __iter__(self) -> Iterator[Item]:
        return self.items


def _item_from_row(row: Any, index: int, where: Location, fields: Mapping[str, str]) -> Item:
    if isinstance(row, Item):
        return row
    if not isinstance(row, dict):
        raise ConfigError(f"an item must be a mapping, got {type(row).__name__}", where)
    values: dict[str, Any] = {}
    used = set()
    for name in ITEM_FIELDS:
        column = fields.get(name, name)
        if column in row:
            values[name] = row[column]
            used.add(column)
    if "input" not in values:
        column = fields.get("input", "input")
        columns = ", ".join(map(str, row)) or "none"
        raise ConfigError(f"item has no '{column}' field", where,
                          hint=f"its fields are: {columns}; map one with `fields: {{input: <field>}}`")
    extra = {k: v for k, v in row.items() if k not in used}
    metadata = values.get("metadata")
    if extra:
        metadata = {**extra, **metadata} if isinstance(metadata, dict) else extra
    given_id = values.get("id")
    return Item(
        id=f"item-{index + 1}" if given_id is None or given_id == "" else str(given_id),
        index=index, input=values["input"], expected=values.get("expected"),
        context=values.get("context"), assertions=values.get("assertions"),
        metadata=metadata, label=values.get("label"),
    )


def _items(rows: Iterable[tuple[Any, Location]], fields: Mapping[str, str]) -> Iterator[Item]:
    seen: dict[str, Location] = {}
    for index, (row, where) in enumerate(rows):
        item = _item_from_row(row, index, where, fields)
        if item.id in seen:
            first = seen[item.id]
            raise ConfigError(f"duplicate item id '{item.id}'", where,
                              hint=f"first used at {first.prefix().rstrip(': ')}; ids must be unique")
        seen[item.id] = where
        yield item


def _plugin_rows(result: Any, spec: DatasetSpec) -> Iterator[tuple[Any, Location]]:
    where = spec.source.locate(spec.path + ("uses",) if spec.plugin else spec.path + ("name",))
    if result is None or isinstance(result, (str, bytes, dict)) or not isinstance(result, Iterable):
        raise ConfigError(f"dataset plugin returned {type(result).__name__}; it must return an iterable "
                          "(list or generator) of items", where)
    for index, row in enumerate(result):
        yield row, Location(where.file, where.line, where.col, f"{where.path} item {index + 1}")


def open_dataset(spec: DatasetSpec, limit: int | None = None,
                 load_plugin: Callable[[DatasetSpec], Callable[..., Any]] | None = None) -> Dataset:
    """Open ``spec`` for reading; ``limit`` (e.g. from the command line) caps the spec's own."""
    limits = [n for n in (spec.limit, limit) if n is not None]
    cap = min(limits) if limits else None
    if spec.items is not None:
        rows = ((row, spec.source.locate(spec.path + ("items", i))) for i, row in enumerate(spec.items))
        total = len(spec.items) if cap is None else min(cap, len(spec.items))
        description = f"{len(spec.items)} inline items"
    elif spec.file is not None:
        path = os.path.join(spec.base_dir, spec.file)
        fmt = detect_format(path, spec.format)
        if fmt is None:
            raise spec.error(f"cannot tell the format of '{spec.file}'", sub=("file",),
                             hint="use a .jsonl, .json, .yaml or .csv file, or set `format:`")
        if not os.path.isfile(path):
            raise spec.error(f"dataset file not found: {spec.file}", sub=("file",),
                             hint=f"paths are relative to the config file's folder ({spec.base_dir})")
        rows = read_rows(path, fmt, spec.file)
        total = None
        description = spec.file
    else:
        assert load_plugin is not None, "plugin datasets need a loader"
        function = load_plugin(spec)
        arguments = dict(spec.plugin.with_) if spec.plugin else {}
        if "limit" in inspect.signature(function).parameters and cap is not None:
            arguments["limit"] = cap
        try:
            result = function(**arguments)
        except Exception as exc:
            raise spec.error(f"dataset plugin '{spec.plugin.uses if spec.plugin else spec.name}' raised "
                             f"{type(exc).__name__}: {exc}") from None
        rows = _plugin_rows(result, spec)
        total = None
        description = spec.plugin.uses if spec.plugin else f"dataset '{spec.name}'"
    items = _items(rows, spec.fields)
    if cap is not None:
        items = itertools.islice(items, cap)
    return Dataset(items, total, description)
