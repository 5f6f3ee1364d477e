"""Rows from dataset files, streamed, each with the line it came from.

JSONL and CSV are read lazily line by line; JSON and YAML files are parsed whole
(their formats cannot be streamed with the standard library).
"""
from __future__ import annotations

import csv
import json
import os
from typing import Any, Iterator

from yamleval.config import yaml_source
from yamleval.errors import ConfigError, Location

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".csv": "csv"}

Row = tuple[Any, Location]


def detect_format(path: str, given: str | None) -> str | None:
    return given or FORMATS.get(os.path.splitext(path)[1].lower())


def _jsonl(path: str, shown: str) -> Iterator[Row]:
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"line is not valid JSON: {exc.msg}", Location(shown, number, exc.colno),
                                  hint="each line of a .jsonl file must be one JSON object",
                                  source_line=line.rstrip("\n")[:200]) from None
            yield value, Location(shown, number, 1)


def _json(path: str, shown: str) -> Iterator[Row]:
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg}", Location(shown, exc.lineno, exc.colno),
                          source_line=text.splitlines()[exc.lineno - 1][:200] if text else None) from None
    if not isinstance(data, list):
        raise ConfigError("a .json dataset must be an array of objects", Location(shown, 1, 1, "$"))
    for index, value in enumerate(data):
        yield value, Location(shown, None, None, f"$[{index}]")


def _yaml(path: str, shown: str) -> Iterator[Row]:
    data, source = yaml_source.load(path, shown)
    if not isinstance(data, list):
        raise ConfigError("a YAML dataset must be a list of mappings", Location(shown, 1, 1, "$"))
    for index, value in enumerate(data):
        yield value, source.locate((index,))


def _csv(path: str, shown: str) -> Iterator[Row]:
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        try:
            header = next(reader, None)
            if header is None:
                return
            width = len(header)
            for row in reader:
                if not row:
                    continue
                if len(row) != width:
                    raise ConfigError(f"row has {len(row)} fields but the header has {width}",
                                      Location(shown, reader.line_num, 1),
                                      hint="quote values that contain commas")
                yield dict(zip(header, row)), Location(shown, reader.line_num, 1)
        except csv.Error as exc:
            raise ConfigError(f"CSV: {exc}", Location(shown, reader.line_num, 1)) from None


READERS = {"jsonl": _jsonl, "json": _json, "yaml": _yaml, "csv": _csv}


def read_rows(path: str, fmt: str, shown: str) -> Iterator[Row]:
    """Rows of a dataset file, lazily; errors name the file and line."""
    try:
        yield from READERS[fmt](path, shown)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"the file is not UTF-8 text: {exc.reason}", Location(shown)) from None
