"""Safe YAML loading that remembers where every key and value stands.

The node tree from ``yaml.compose`` gives positions; the data is built from it by
hand so that duplicate keys are caught (PyYAML keeps the last one silently) and
every JSON path maps to a line and column.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from yamleval.errors import ConfigError, Location

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
        lines = self.text.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else None

    def error(self, path: Path, message: str, *, key: bool = False, hint: str | None = None,
              context: str | None = None) -> ConfigError:
        loc = self.locate(path, key=key)
        return ConfigError(message, loc, hint=hint, context=context,
                           source_line=self.line_text(loc.line))


def _mark(node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Builder:
    def __init__(self, source: SourceMap, loader):
        self.source = source
        self.loader = loader

    def build(self, node, path: Path) -> Any:
        self.source.values[path] = _mark(node)
        if isinstance(node, yaml.MappingNode):
            self.loader.flatten_mapping(node)  # resolves `<<: *anchor` merge keys
            out: dict = {}
            for key_node, value_node in node.value:
                key = self.loader.construct_object(key_node)
                key = key if isinstance(key, str) else str(key)
                child = path + (key,)
                if key in out:
                    first = self.source.keys.get(child, (None, None))[0]
                    self.source.keys[child] = _mark(key_node)
                    raise self.source.error(child, f"duplicate key '{key}' (first defined on line {first})",
                                            key=True, hint="remove one of them")
                self.source.keys[child] = _mark(key_node)
                out[key] = self.build(value_node, child)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(child, path + (i,)) for i, child in enumerate(node.value)]
        return self.loader.construct_object(node)


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
            problem = exc.problem or exc.context or "invalid YAML"
            loc = Location(file, line, col)
            raise ConfigError(f"YAML syntax: {problem}", loc, hint="check indentation and quoting",
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
        with open(file_path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise ConfigError("file not found", Location(name), hint="check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc}", Location(name)) from None
    return parse(text, name)
