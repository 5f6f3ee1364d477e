"""Safe YAML loading that remembers where every key and value stands.

The node tree from ``yaml.compose`` gives positions; the data is built from it by
hand so that duplicate keys are caught (PyYAML keeps the last one silently) and
every JSON path maps to a line and column.
"""
from __future__ import annotations

import difflib
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any

import yaml

from yamleval.records.errors import ConfigError, Location

try:
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader

Path = tuple  # of str keys and int indexes


def format_path(path: Path) -> str:
    """``("experiments", 0, "id")`` -> ``$.experiments[0].id``."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}"
        else:
            out += f"[{part!r}]"
    return out


@dataclass
class SourceMap:
    """Positions of the values (and of the keys) of one file, by JSON path."""

    file: str
    text: str = ""
    values: dict = field(default_factory=dict)
    keys: dict = field(default_factory=dict)
    raw: Any = None
    literal_blocks: set = field(default_factory=set)
    _lines: list | None = field(default=None, repr=False, compare=False)

    def raw_value(self, path: Path, default: Any) -> Any:
        """The value at ``path`` as written (before ``${VAR}`` expansion), else ``default``."""
        node = self.raw
        try:
            for part in path:
                node = node[part]
        except (KeyError, IndexError, TypeError):
            return default
        return node

    def locate(self, path: Path, key: bool = False) -> Location:
        """The position of ``path``; of its key when ``key``; else the nearest parent's."""
        table = self.keys if key and path in self.keys else self.values
        probe = tuple(path)
        while probe and probe not in table:
            probe = probe[:-1]
            table = self.values
        line, col = table.get(probe, (None, None))
        return Location(self.file, line, col, format_path(path))

    def line_text(self, line: int | None) -> str | None:
        if line is None:
            return None
        if self._lines is None:
            self._lines = self.text.splitlines()
        return self._lines[line - 1] if 0 < line <= len(self._lines) else None

    def line_in_value(self, path: Path, number: int) -> int | None:
        """The file line of line ``number`` (1-based) of a ``|`` block scalar's text, else None."""
        if path not in self.literal_blocks:
            return None
        return self.values[path][0] + number

    def error(self, path: Path, message: str, *, key: bool = False, hint: str | None = None,
              context: str | None = None, find: str | None = None, line: int | None = None) -> ConfigError:
        """A located error. With ``find``, the caret moves to that text when the value's line holds
        it; with ``line``, to that file line (within a block scalar)."""
        loc = self.locate(path, key=key)
        if line is not None and self.line_text(line) is not None:
            text = self.line_text(line)
            loc = Location(loc.file, line, len(text) - len(text.lstrip()) + 1, loc.path)
        text = self.line_text(loc.line)
        if find and text is not None and loc.col is not None:
            at = text.find(find, loc.col - 1)
            if at >= 0:
                loc = Location(loc.file, loc.line, at + 1, loc.path)
        return ConfigError(message, loc, hint=hint, context=context, source_line=text)


_MERGE_TAG = "tag:yaml.org,2002:merge"
_PLAIN_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


def _mark(node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


MAX_DEPTH = 100
"""Levels of nesting a file may have. Deeper data would exhaust the recursion of the
checks after parsing (and no config or dataset needs it)."""

MAX_ALIAS_NODES = 100_000
"""Values an alias may copy in one file, in total. Every ``*alias`` is expanded into a
copy, so a few lines of nested aliases (a "billion laughs") would otherwise take all
memory; real configs reuse a runner or a list of scorers, a few hundred values."""


class _Builder:
    def __init__(self, source: SourceMap, loader):
        self.source = source
        self.loader = loader
        self.built: set[int] = set()   # nodes built once; building one again is an alias's copy
        self.open: set[int] = set()    # collections being built: meeting one again is a cycle
        self.copied = 0
        self.merged: dict[int, int] = {}  # mapping node -> how many of its pairs came from `<<:` merges

    def build(self, node, path: Path) -> Any:
        self.source.values[path] = _mark(node)
        if not isinstance(node, yaml.ScalarNode) and node.tag not in _PLAIN_TAGS:
            raise self._tag_error(node, path)
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        if len(path) > MAX_DEPTH:
            raise self._limit_error(node, path, f"the value is nested more than {MAX_DEPTH} levels deep",
                                    "flatten it; nesting this deep is not supported")
        key = id(node)
        if key in self.open:
            raise self._limit_error(node, path, "an alias refers to a value that contains it",
                                    "a value cannot include itself; copy the part you need instead")
        if key in self.built:
            self.copied += len(node.value)
            if self.copied > MAX_ALIAS_NODES:
                raise self._limit_error(node, path, f"aliases expand to more than {MAX_ALIAS_NODES:,} values",
                                        "aliases are copied where they are used; use fewer or smaller ones")
        self.built.add(key)
        self.open.add(key)
        try:
            return self._collection(node, path)
        finally:
            self.open.discard(key)

    def _collection(self, node, path: Path) -> Any:
        if isinstance(node, yaml.MappingNode):
            merged = self.merged.get(id(node))
            if merged is None:  # an alias's copy meets the node flattened already
                own = sum(1 for key_node, _ in node.value if key_node.tag != _MERGE_TAG)
                self.loader.flatten_mapping(node)  # resolves `<<: *anchor` merge keys
                merged = self.merged[id(node)] = len(node.value) - own  # merged pairs come first; own keys override
            out: dict = {}
            own_keys: set = set()
            for index, (key_node, value_node) in enumerate(node.value):
                if not isinstance(key_node, yaml.ScalarNode):
                    kind = "a list" if isinstance(key_node, yaml.SequenceNode) else "a mapping"
                    line, col = _mark(key_node)
                    raise ConfigError(f"a key must be plain text, not {kind}", Location(self.source.file, line, col,
                                      format_path(path)), source_line=self.source.line_text(line))
                key = self._scalar(key_node, path)
                key = key if isinstance(key, str) else str(key)
                child = path + (key,)
                if index >= merged:
                    if key in own_keys:
                        first = self.source.keys.get(child, (None, None))[0]
                        self.source.keys[child] = _mark(key_node)
                        raise self.source.error(child, f"duplicate key '{key}'", key=True,
                                                hint=f"it is already set on line {first}; remove one of them")
                    own_keys.add(key)
                self.source.keys[child] = _mark(key_node)
                out[key] = self.build(value_node, child)
            return out
        return [self.build(child, path + (i,)) for i, child in enumerate(node.value)]

    def _scalar(self, node, path: Path) -> Any:
        if node.style == "|":
            self.source.literal_blocks.add(path)
        try:
            return self.loader.construct_object(node)
        except yaml.constructor.ConstructorError as exc:
            if "constructor for the tag" not in (exc.problem or ""):
                raise
            raise self._tag_error(node, path) from None
        except Exception as exc:  # an integer of over 4300 digits, 2020-02-30, `!!timestamp` on other text
            tag = node.tag.replace("tag:yaml.org,2002:", "!!", 1)
            why = str(exc).split(";")[0] if isinstance(exc, ValueError) else f"it is not a valid {tag}"
            raise self._limit_error(node, path, f"cannot read this value: {why}",
                                    "write it as a string in quotes") from None

    def _limit_error(self, node, path: Path, message: str, hint: str) -> ConfigError:
        line, col = _mark(node)
        return ConfigError(message, Location(self.source.file, line, col, format_path(path)), hint=hint,
                           source_line=self.source.line_text(line))

    def _tag_error(self, node, path: Path) -> ConfigError:
        tag = node.tag.replace("tag:yaml.org,2002:", "!!", 1)
        line, col = _mark(node)
        return ConfigError(f"the YAML tag '{tag}' is not allowed", Location(self.source.file, line, col,
                           format_path(path)), hint="yamleval reads plain YAML only; remove the tag",
                           source_line=self.source.line_text(line))


_OPENED_BY = {
    "while parsing a flow sequence": "the [...] list",
    "while parsing a flow mapping": "the {...} mapping",
    "while parsing a block mapping": "the mapping",
    "while parsing a block collection": "the list",
    "while scanning a simple key": "the key",
}


def _syntax_problem(exc: yaml.MarkedYAMLError, text: str) -> tuple[str, str]:
    """What PyYAML found, and a hint naming where the construct it was reading starts."""
    problem = exc.problem or exc.context or "invalid YAML"
    problem_mark = exc.problem_mark
    lines = text.splitlines()
    if problem_mark is not None and problem_mark.line < len(lines) and \
            lines[problem_mark.line][problem_mark.column:problem_mark.column + 1] == "\t":
        return "a tab character where YAML expects spaces", "indent with spaces; YAML does not allow tabs there"
    hint = "check indentation and quoting"
    if exc.context == "expected a single document in the stream":
        return "a second document ('---') in the file", "a config file holds one YAML document; remove the '---' line"
    if problem == "found undefined alias" and problem_mark is not None:
        alias = re.match(r"\*([^\s,\[\]{}]+)", lines[problem_mark.line][problem_mark.column:]) \
            if problem_mark.line < len(lines) else None
        if alias:
            name = alias.group(1)
            before = "\n".join(lines[:problem_mark.line])
            anchors = re.findall(r"&([^\s,\[\]{}]+)", before)
            close = difflib.get_close_matches(name, anchors, n=1, cutoff=0.6)
            hint = f"did you mean *{close[0]}?" if close else f"define &{name} on a value above this line"
            return f"the alias *{name} has no anchor &{name} before it", hint
        return "an alias (*name) whose anchor is not defined", "define &name on a value before using *name"
    start = exc.context_mark
    if exc.problem and exc.context and start is not None and (
            problem_mark is None or (start.line, start.column) != (problem_mark.line, problem_mark.column)):
        what = _OPENED_BY.get(exc.context, exc.context.removeprefix("while parsing ").removeprefix("while scanning "))
        where = f"line {start.line + 1}, column {start.column + 1}"
        if exc.context == "while scanning a quoted scalar":
            hint = f"the quote at {where} is never closed"
        elif exc.context == "while parsing a block mapping":
            hint = f"in {what} that starts at {where}: its keys must be indented alike"
        elif exc.context == "while parsing a block collection":
            hint = f"in {what} that starts at {where}: its items must be indented alike"
        else:
            hint = f"in {what} that starts at {where}; check indentation and quoting"
    return problem, hint


def parse(text: str, file: str) -> tuple[Any, SourceMap]:
    """Parse one YAML document into plain data and its source map."""
    source = SourceMap(file, text)
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
            problem, hint = _syntax_problem(exc, text)
            loc = Location(file, line, col)
            raise ConfigError(f"YAML syntax: {problem}", loc, hint=hint,
                              source_line=source.line_text(line)) from None
        except yaml.reader.ReaderError as exc:
            line = text.count("\n", 0, exc.position) + 1
            col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
            code = exc.character if isinstance(exc.character, int) else ord(exc.character)
            raise ConfigError(f"YAML syntax: character #x{code:04x} is not allowed", Location(file, line, col),
                              hint=f"{exc.reason}; remove it, or write it as an escape in double quotes",
                              source_line=source.line_text(line)) from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"YAML syntax: {exc}", Location(file)) from None
        if node is None:
            return None, source
        try:
            return _Builder(source, loader).build(node, ()), source
        except yaml.constructor.ConstructorError as exc:
            mark = exc.problem_mark
            loc = Location(file, mark.line + 1, mark.column + 1) if mark else Location(file)
            raise ConfigError(f"YAML: {exc.problem}", loc, source_line=source.line_text(loc.line)) from None
    finally:
        loader.dispose()


def load(file_path: str, display: str | None = None) -> tuple[Any, SourceMap]:
    """Read and parse a YAML file; ``display`` is the name used in messages."""
    name = display or file_path
    try:
        with open(file_path, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):  # /dev/zero never ends, a terminal waits for typing
                raise ConfigError("this is a device, not a file", Location(name), hint="name a YAML file")
            data = handle.read()
    except FileNotFoundError:
        raise ConfigError("file not found", Location(name), hint="check the path") from None
    except IsADirectoryError:
        raise ConfigError("this is a folder, not a file", Location(name)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc.strerror or exc}", Location(name)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise not_utf8(data, exc, name) from None
    return parse(text, name)


def not_utf8(data: bytes, exc: UnicodeDecodeError, name: str) -> ConfigError:
    """The error for bytes that are not UTF-8, at the line and column of the first bad byte."""
    line_start = data.rfind(b"\n", 0, exc.start) + 1
    line = data.count(b"\n", 0, exc.start) + 1
    col = len(data[line_start:exc.start].decode("utf-8", "replace")) + 1
    line_end = data.find(b"\n", exc.start)
    shown = data[line_start:line_end if line_end >= 0 else len(data)].decode("utf-8", "replace").rstrip("\r")
    return ConfigError(f"the file is not UTF-8 text: byte 0x{data[exc.start]:02x} cannot be read here",
                       Location(name, line, col), hint=f"{exc.reason}; save the file as UTF-8",
                       source_line=shown[:200])
