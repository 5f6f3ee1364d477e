"""Dataset items from inline lists, files, plugins and registered names, streamed lazily."""
from __future__ import annotations

import csv
import difflib
import inspect
import itertools
import os
from typing import Any, Callable, Iterable, Iterator, Mapping

from yamleval.config.model import DatasetSpec
from yamleval.builtins.datasets.files import Row, counted_rows, detect_format, plain, read_rows
from yamleval.records.errors import ConfigError, Location, describe_exception, display_path
from yamleval.records.reviews import verdict_of
from yamleval.records.types import Item

ITEM_FIELDS = ("id", "label", "input", "expected", "context", "assertions", "metadata", "human_verdict")


class Dataset:
    """An opened dataset: an iterator of items and, when known up front, their count."""

    def __init__(self, items: Iterator[Item], total: int | None, description: str):
        self.items = items
        self.total = total
        self.description = description

    def __iter__(self) -> Iterator[Item]:
        return self.items


_KINDS = {dict: "a mapping", list: "a list", str: "a string", int: "a number", float: "a number", bool: "true or false"}
_LIKELY_INPUTS = ("question", "prompt", "query", "text", "message", "problem", "instruction", "request")


def _missing_input(row: Row, fields: Mapping[str, str]) -> ConfigError:
    """No input column: name the columns there are and the `fields:` line that would fix it."""
    value = row.value
    column = fields.get("input", "input")
    columns = [str(c) for c in value]
    taken = {v for k, v in fields.items() if k != "input"}
    free = [c for c in columns if c not in taken]
    if "input" in fields:
        close = difflib.get_close_matches(column, free, n=1, cutoff=0.6)
        hint = (f"did you mean `fields: {{input: {close[0]}}}`?" if close
                else f"its fields are: {', '.join(columns) or 'none'}")
    else:
        likely = next((c for c in free if c.lower() in _LIKELY_INPUTS), free[0] if free else None)
        listed = f"its fields are: {', '.join(columns)}" if columns else "it has no fields"
        hint = f"{listed}; map one with `fields: {{input: {likely or '<field>'}}}`"
    named = ", which `fields:` names as its input" if "input" in fields else ""
    return row.error(f"{row.what} has no '{column}' field{named}", hint=hint)


class _RowToItem:
    """Builds items from source rows with one ``fields:`` mapping, worked out once; with
    ``located``, each item keeps the file and line of its row (rows of a plugin or a remote
    source point at the config's entry, not at a row of their own)."""

    def __init__(self, fields: Mapping[str, str], located: bool):
        self.fields = fields
        self.located = located
        self.columns = tuple(fields.get(name, name) for name in ITEM_FIELDS)
        self.known = frozenset(self.columns)

    def __call__(self, row: Row, index: int) -> Item:
        value = row.value
        if type(value) is not dict:
            if isinstance(value, Item):
                return value
            if not isinstance(value, dict):
                kind = _KINDS.get(type(value), "null" if value is None else type(value).__name__)
                raise row.error(f"{row.what} must be a mapping of fields (input, expected, ...), got {kind}")
        id_col, label_col, input_col, expected_col, context_col, assertions_col, metadata_col, human_col = self.columns
        if input_col not in value:
            raise _missing_input(row, self.fields)
        get = value.get
        metadata = get(metadata_col)
        if not self.known.issuperset(value):  # columns that map to no field are kept as metadata
            extra = {k: v for k, v in value.items() if k not in self.known}
            metadata = {**extra, **metadata} if isinstance(metadata, dict) else extra
        given_id = get(id_col)
        human = get(human_col)
        if human is not None and human != "":  # an empty cell: no label
            human = verdict_of(human)
            if human is None:
                raise row.error(f"{row.what}'s '{human_col}' is {get(human_col)!r}, not a verdict",
                                hint="a person's verdict is pass or fail (true/false, yes/no and 1/0 are read too)")
        return Item(
            id=f"item-{index + 1}" if given_id is None or given_id == "" else str(given_id),
            index=index, input=value[input_col], expected=get(expected_col), context=get(context_col),
            assertions=get(assertions_col), metadata=metadata, label=get(label_col),
            source=row.where.file_line() if self.located else None, human_verdict=human or None,
        )


def _first_use(first: Location, here: Location) -> str:
    if first.line is None:
        return first.path or first.file
    return f"line {first.line}" if first.file == here.file else f"{first.file}:{first.line}"


# Ids remembered (with where they were read) to find a repeated one as soon as it is read;
# past this many, the results database's key finds repeats, so memory stays bounded.
REMEMBERED_IDS = 100_000


# A `fields:` entry naming a column that none of the first rows has is a typo, not a sparse
# column: it would silently skip every item (or put the real column into metadata).
FIELD_ROWS = 20


def _checked_fields(rows: Iterable[Row], spec: DatasetSpec) -> Iterator[Row]:
    """``rows``, once the first ``FIELD_ROWS`` of them have shown a column for every `fields:`
    entry (read ahead, so the error comes before any item runs)."""
    rows = iter(rows)
    first = list(itertools.islice(rows, FIELD_ROWS))
    mappings = [row.value for row in first if isinstance(row.value, dict)]
    if mappings:
        columns = list(dict.fromkeys(str(c) for value in mappings for c in value))
        for name, column in spec.fields.items():
            if name != "input" and not any(column in value for value in mappings):
                close = difflib.get_close_matches(str(column), columns, n=1, cutoff=0.6)
                rows_read = f"the first {len(mappings)} rows" if len(mappings) > 1 else "the first row"
                raise spec.error(f"`fields: {{{name}: {column}}}` names a column that none of {rows_read} has",
                                 sub=("fields", name),
                                 hint=(f"did you mean `{close[0]}`? " if close else "")
                                 + f"the columns are: {', '.join(columns) or 'none'}")
    yield from first
    yield from rows


def _items(rows: Iterable[Row], fields: Mapping[str, str], context: str | None, located: bool) -> Iterator[Item]:
    seen: dict[str, Location] = {}
    to_item = _RowToItem(fields, located)
    try:
        for index, row in enumerate(rows):
            item = to_item(row, index)
            if item.id in seen:
                raise row.error(f"duplicate item id '{item.id}'", field=fields.get("id", "id"),
                                hint=f"first used on {_first_use(seen[item.id], row.where)}; ids must be unique")
            if len(seen) < REMEMBERED_IDS:
                seen[item.id] = row.where
            yield item
    except ConfigError as exc:
        if exc.context is None:
            exc.context = context
        raise


def _plugin_rows(result: Any, spec: DatasetSpec) -> Iterator[Row]:
    at = spec.path + ("uses",) if spec.plugin else spec.path + ("name",)
    where = spec.source.locate(at)
    if result is None or isinstance(result, (str, bytes, dict)) or not isinstance(result, Iterable):
        raise spec.error(f"dataset plugin returned {type(result).__name__}; it must return an iterable "
                         "(list or generator) of items", sub=at[-1:])
    text = spec.source.line_text(where.line)
    rows = iter(result)
    number = 0
    while True:
        try:
            row = next(rows)
        except StopIteration:
            return
        except (Exception, SystemExit) as exc:  # a generator failing part way: stop at the plugin's entry
            from yamleval.plugins.registry import raised_at

            found = raised_at(exc)
            raise spec.error(f"dataset plugin '{_plugin_name(spec)}' raised {describe_exception(exc)} after "
                             f"{number} items", sub=at[-1:], hint=f"raised at {found}" if found else None) from None
        number += 1
        what = f"item {number} from the dataset plugin"
        try:
            value = row if isinstance(row, Item) else plain(row)
        except (ValueError, TypeError, RecursionError) as exc:  # a cycle, odd keys, too deep, a huge int
            raise spec.error(f"{what} cannot be read as data: {describe_exception(exc)}", sub=at[-1:],
                             hint="yield plain dicts of text, numbers, lists and dicts") from None
        yield Row(value, where, text, what=what)


def _plugin_name(spec: DatasetSpec) -> str:
    return spec.plugin.uses if spec.plugin else spec.name


def _inline_row(spec: DatasetSpec, index: int, value: Any) -> Row:
    path = spec.path + ("items", index)
    return Row(plain(value), spec.source.locate(path), None, spec.source, path)


def _missing_file_hint(spec: DatasetSpec, path: str) -> str:
    """A close file name in the folder the path names, else where paths are taken from."""
    folder, name = os.path.split(path)
    try:
        names = [n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n))]
    except OSError:
        names = []
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.8)
    if close:
        return f"did you mean '{os.path.join(os.path.dirname(spec.file), close[0])}'?"
    shown = display_path(path)
    looked = f"looked for {shown}; " if shown != spec.file else ""
    return f"{looked}paths are relative to the config file's folder"


def _remote_rows(spec: DatasetSpec, cap: int | None) -> Iterator[Row]:
    """Rows of a paged JSON API, page by page as they are needed; errors point at ``url:``."""
    from yamleval.builtins.datasets.remote import Paging, RemoteDatasetError, remote_rows

    where = spec.source.locate(spec.path + ("url",))
    shown = spec.describe()
    try:
        pages = remote_rows(spec.url, dict(spec.headers),
                            Paging(spec.page_size, spec.items_path, spec.next_path, cap, spec.total_path))
        for index, row in enumerate(pages):
            yield Row(plain(row), where, None, what=f"item {index + 1} from {shown}")
    except (RemoteDatasetError, ValueError) as exc:
        raise spec.error(str(exc), sub=("url",)) from None


def _count_rows(path: str) -> int | None:
    """The rows of a JSONL file (its lines that are not blank), counted in one quick pass, for
    the progress line to show how many items there are; None when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return sum(1 for line in handle if not line.isspace())
    except OSError:
        return None


def _count_csv_rows(path: str) -> int | None:
    """The rows of a CSV file below its header (blank ones left out), counted in one quick pass;
    None when it cannot be read (reading it for the run says why)."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            return max(0, sum(1 for row in csv.reader(handle) if row) - 1)
    except (OSError, UnicodeDecodeError, csv.Error):
        return None


def open_dataset(spec: DatasetSpec, limit: int | None = None,
                 load_plugin: Callable[[DatasetSpec], Callable[..., Any]] | None = None) -> Dataset:
    """Open ``spec`` for reading; ``limit`` (e.g. from the command line) caps the spec's own."""
    limits = [n for n in (spec.limit, limit) if n is not None]
    cap = min(limits) if limits else None
    if spec.items is not None:
        rows = (_inline_row(spec, i, row) for i, row in enumerate(spec.items))
        total = len(spec.items) if cap is None else min(cap, len(spec.items))
        description = f"{len(spec.items)} inline items"
    elif spec.file is not None:
        path = os.path.join(spec.base_dir, spec.file)
        fmt = detect_format(path, spec.format)
        if fmt is None:
            raise spec.error(f"cannot tell the format of '{spec.file}'", sub=("file",),
                             hint="use a .jsonl, .json, .yaml or .csv file, or set `format:`")
        if not os.path.isfile(path):
            raise spec.error(f"dataset file not found: {spec.file}", sub=("file",), hint=_missing_file_hint(spec, path))
        if fmt in ("yaml", "json"):  # parsed whole before their first row anyway: counted as they are read
            rows, total = counted_rows(path, fmt, display_path(path))
        else:  # counted in a quick pass
            rows = read_rows(path, fmt, display_path(path))
            total = _count_rows(path) if fmt == "jsonl" else _count_csv_rows(path)
        if total is not None and cap is not None:
            total = min(total, cap)
        description = spec.file
    elif spec.url is not None:
        rows = _remote_rows(spec, cap)
        total = None
        description = spec.describe()
    else:
        assert load_plugin is not None, "plugin datasets need a loader"
        function = load_plugin(spec)
        arguments = dict(spec.plugin.with_) if spec.plugin else {}
        if "limit" in inspect.signature(function).parameters and cap is not None:
            arguments["limit"] = cap
        try:
            result = function(**arguments)
        except Exception as exc:
            from yamleval.plugins.registry import raised_at

            where = raised_at(exc)
            raise spec.error(f"dataset plugin '{_plugin_name(spec)}' raised "
                             f"{describe_exception(exc)}", sub=("uses",) if spec.plugin else ("name",),
                             hint=f"raised at {where}" if where else None) from None
        rows = _plugin_rows(result, spec)
        total = None
        description = spec.plugin.uses if spec.plugin else f"dataset '{spec.name}'"
    if any(name != "input" for name in spec.fields):
        rows = _checked_fields(rows, spec)
    items = _items(rows, spec.fields, spec.context(), located=spec.items is not None or spec.file is not None)
    if cap is not None:
        items = itertools.islice(items, cap)
    return Dataset(items, total, description)
