"""Rows from dataset files, streamed, each with the line it came from.

JSONL and CSV are read lazily line by line; JSON and YAML files are parsed whole
(their formats cannot be streamed with the standard library).

Every format is UTF-8, with or without a byte-order mark. A file in another encoding,
an empty file, and a value nested too deeply or a number too long for Python to read
are errors at the file and line; blank lines of a JSONL file and empty rows of a CSV
file are skipped; a CSV value may be of any length.
"""
from __future__ import annotations

import codecs
import csv
import json
import os
import re
from typing import Any, Iterator, NamedTuple

from yamleval.config import yaml_source
from yamleval.config.yaml_source import Path, SourceMap
from yamleval.records.errors import ConfigError, Location

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".csv": "csv"}
_SHOWN = 200  # characters of a source line shown under a message
_ENCODING = "utf-8-sig"  # UTF-8, and a byte-order mark at the start is dropped (editors on Windows write one)
_OTHER_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),  # UTF-32 LE starts like UTF-16 LE
               (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))

# The csv module refuses values over 128 KiB by default; a long document or transcript is a
# fair dataset value. (The limit is the module's, so this sets it for the whole process.)
csv.field_size_limit(max(csv.field_size_limit(), 2 ** 31 - 1))


class Row(NamedTuple):
    """One raw row and where it is: ``text`` is its source line; rows read from YAML also
    carry their file's source map and path, so a message can point at one of their fields."""

    value: Any
    where: Location
    text: str | None = None
    source: SourceMap | None = None
    path: Path = ()
    what: str = "the item"

    def error(self, message: str, *, hint: str | None = None, field: str | None = None) -> ConfigError:
        if self.source is not None:
            has_field = field is not None and isinstance(self.value, dict) and field in self.value
            return self.source.error(self.path + (field,) if has_field else self.path, message, hint=hint)
        shown = self.text.rstrip("\r\n")[:_SHOWN] if self.text is not None else None
        return ConfigError(message, self.where, hint=hint, source_line=shown)


def plain(value: Any) -> Any:
    """``value`` as JSON would give it back (YAML dates become text, keys become strings),
    so an item reads the same in this run and when the stored run is read again."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return json.loads(json.dumps(value, default=str))


def detect_format(path: str, given: str | None) -> str | None:
    return given or FORMATS.get(os.path.splitext(path)[1].lower())


def _unreadable_json(exc: Exception, where: Location, source_line: str | None) -> ConfigError:
    """JSON that parses as text but not into Python values: too deep, or a number too long."""
    if isinstance(exc, RecursionError):
        return ConfigError("a value is nested too deeply to read", where, source_line=source_line,
                           hint="flatten it; nesting this deep is not supported")
    return ConfigError(f"a value cannot be read: {str(exc).split(';')[0]}", where, source_line=source_line,
                       hint="write a number this long as a string")


_LONG_NUMBER = re.compile(r"\d{4301,}")


def _unreadable_spot(text: str, exc: Exception) -> int:
    """The offset of what made valid JSON unreadable: the first number too long, or the
    first bracket opened 100 levels deep. Only run when reading has failed."""
    if not isinstance(exc, RecursionError):
        found = _LONG_NUMBER.search(text)
        return found.start() if found else 0
    depth, quoted, escaped = 0, False, False
    for offset, char in enumerate(text):
        if quoted:
            escaped, quoted = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            quoted = True
        elif char in "[{":
            depth += 1
            if depth > 100:
                return offset
        elif char in "]}":
            depth -= 1
    return 0


def _jsonl(path: str, shown: str) -> Iterator[Row]:
    with open(path, encoding=_ENCODING) as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:  # past the line's end (lineno 2) means at its end
                col = exc.colno if exc.lineno == 1 else len(line.rstrip("\r\n")) + 1
                raise ConfigError(f"line is not valid JSON: {exc.msg}", Location(shown, number, col),
                                  hint="each line of a .jsonl file must be one JSON object",
                                  source_line=line.rstrip("\r\n")[:_SHOWN]) from None
            except (RecursionError, ValueError) as exc:
                raise _unreadable_json(exc, Location(shown, number, 1), line.rstrip("\r\n")[:_SHOWN]) from None
            yield Row(value, Location(shown, number, 1), line)


_JSON_SPACE = " \t\n\r"


def _json(path: str, shown: str) -> Iterator[Row]:
    yield from _json_counted(path, shown)[0]


def _json_counted(path: str, shown: str) -> tuple[Iterator[Row], int]:
    with open(path, encoding=_ENCODING) as handle:
        text = handle.read()
    lines = text.splitlines()
    # offset reached, its line, the offset of the last newline before it: each character is counted once
    counted = [0, 1, -1]

    def position(offset: int) -> tuple[int, int]:
        done, line, newline = counted if offset >= counted[0] else (0, 1, -1)
        line += text.count("\n", done, offset)
        last = text.rfind("\n", done, offset)
        newline = last if last >= 0 else newline
        counted[:] = [offset, line, newline]
        return line, offset - newline

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg}", Location(shown, exc.lineno, exc.colno),
                          source_line=lines[exc.lineno - 1][:_SHOWN] if exc.lineno <= len(lines) else None) from None
    except (RecursionError, ValueError) as exc:
        line, col = position(_unreadable_spot(text, exc))
        raise _unreadable_json(exc, Location(shown, line, col),
                               lines[line - 1][:_SHOWN] if line <= len(lines) else None) from None
    if not isinstance(data, list):
        start = len(text) - len(text.lstrip(_JSON_SPACE))
        line, col = position(start)
        raise ConfigError("a .json dataset must be an array of objects", Location(shown, line, col, "$"),
                          source_line=lines[line - 1][:_SHOWN] if line <= len(lines) else None)
    def rows() -> Iterator[Row]:
        # Find where each element starts: the text is valid JSON, so this walk cannot fail.
        decoder = json.JSONDecoder()
        offset = text.index("[") + 1
        for index in range(len(data)):
            while text[offset] in _JSON_SPACE + ",":
                offset += 1
            line, col = position(offset)
            yield Row(data[index], Location(shown, line, col, f"$[{index}]"), lines[line - 1][:_SHOWN])
            offset = decoder.raw_decode(text, offset)[1]

    return rows(), len(data)


def _yaml(path: str, shown: str) -> Iterator[Row]:
    yield from _yaml_counted(path, shown)[0]


def counted_rows(path: str, fmt: str, shown: str) -> tuple[Iterator[Row], int]:
    """A YAML or JSON dataset's rows and how many there are: the file is parsed whole before its
    first row, so its count costs nothing more and the progress line can show a total and the time left."""
    _check_start(path, shown)
    try:
        return (_yaml_counted if fmt == "yaml" else _json_counted)(path, shown)
    except UnicodeDecodeError:
        raise _first_bad_byte(path, shown) from None


def _yaml_counted(path: str, shown: str) -> tuple[Iterator[Row], int]:
    data, source = yaml_source.load(path, shown)
    if data is None and not source.values:  # nothing but comments and white space
        raise _empty(shown)
    if not isinstance(data, list):
        raise source.error((), "a YAML dataset must be a list of mappings")
    rows = (Row(plain(value), source.locate((index,)), None, source, (index,)) for index, value in enumerate(data))
    return rows, len(data)


def _line_at(path: str, number: int) -> str | None:
    """Line ``number`` of a file as a csv reader counts lines, read again to show it."""
    with open(path, encoding=_ENCODING, newline="") as handle:
        for count, line in enumerate(handle, 1):
            if count == number:
                return line.rstrip("\r\n")[:_SHOWN]
    return None


def _check_header(header: list[str], where: Location, path: str) -> None:
    """A column named twice would lose one of its values in every row without a word."""
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise ConfigError(f"the header names the column '{name}' twice", where,
                              hint="rename one of them; each column becomes a field of the item",
                              source_line=_line_at(path, 1))
        seen.add(name)


def _csv(path: str, shown: str) -> Iterator[Row]:
    with open(path, encoding=_ENCODING, newline="") as handle:
        reader = csv.reader(handle)
        start = 1
        try:
            header = next(reader, None)
            if header is None:
                return
            _check_header(header, Location(shown, 1, 1), path)
            width = len(header)
            while True:
                start = reader.line_num + 1
                row = next(reader, None)
                if row is None:
                    return
                if not row:
                    continue
                where = Location(shown, start, 1)
                if len(row) != width:
                    raise ConfigError(f"row has {len(row)} fields but the header has {width}", where,
                                      hint="quote values that contain commas", source_line=_line_at(path, start))
                yield Row(dict(zip(header, row)), where)
        except csv.Error as exc:
            raise ConfigError(f"CSV: {exc}", Location(shown, start, 1), source_line=_line_at(path, start)) from None


READERS = {"jsonl": _jsonl, "json": _json, "yaml": _yaml, "csv": _csv}


def _check_start(path: str, shown: str) -> None:
    """Errors a file's first bytes show: another encoding's byte-order mark, or nothing at all."""
    with open(path, "rb") as handle:
        start = handle.read(4096)
        for bom, name in _OTHER_BOMS:
            if start.startswith(bom):
                raise ConfigError(f"the file is {name} text, not UTF-8", Location(shown, 1, 1),
                                  hint="save it as UTF-8")
        rest = start.removeprefix(codecs.BOM_UTF8)
        while not rest.strip():  # only white space so far: read on until some text or the end
            if not rest:
                raise _empty(shown)
            rest = handle.read(65536)


def _empty(shown: str) -> ConfigError:
    return ConfigError("the dataset file is empty", Location(shown, 1, 1),
                       hint="add items to it, or use `items: []` for a deliberately empty dataset")


def _first_bad_byte(path: str, shown: str) -> ConfigError:
    """The not-UTF-8 error at its line and column, found by reading the file again line by line
    (decoding errors surface with offsets into an internal buffer, not into the file)."""
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if number == 1:
                line = line.removeprefix(codecs.BOM_UTF8)
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                error = yaml_source.not_utf8(line, exc, shown)
                error.location = Location(shown, number, error.location.col)
                return error
    return ConfigError("the file is not UTF-8 text", Location(shown), hint="save it as UTF-8")


def read_rows(path: str, fmt: str, shown: str) -> Iterator[Row]:
    """Rows of a dataset file, lazily; errors name the file and line."""
    _check_start(path, shown)
    try:
        yield from READERS[fmt](path, shown)
    except UnicodeDecodeError:
        raise _first_bad_byte(path, shown) from None
