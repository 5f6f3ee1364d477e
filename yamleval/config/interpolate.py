"""``${VAR}`` and ``${VAR:-default}`` from the environment, applied at load time.

Only the expanded copy is used to run; the stored and reported config keeps the
original text, so a secret's value never reaches a file. ``$${`` is a literal ``${``.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from yamleval.config.yaml_source import SourceMap
from yamleval.errors import ConfigError

_REFERENCE = re.compile(r"\$(\$)?\{([^}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def expand_text(text: str, environ: Mapping[str, str]) -> str:
    """Expand the references in one string; raise ``KeyError(name)`` or ``ValueError``."""
    def replace(match: re.Match) -> str:
        if match.group(1):
            return "${" + match.group(2) + "}"
        body = match.group(2)
        name, sep, default = body.partition(":-")
        if not _NAME.match(name):
            raise ValueError(f"'${{{body}}}' is not a valid reference; use ${{NAME}} or ${{NAME:-default}}")
        value = environ.get(name)
        if value is None or (sep and value == ""):
            if sep:
                return default
            raise KeyError(name)
        return value

    return _REFERENCE.sub(replace, text)


def expand(data: Any, source: SourceMap, environ: Mapping[str, str], path: tuple = ()) -> tuple[Any, list[ConfigError]]:
    """Return a copy of ``data`` with every string expanded, and the errors met."""
    errors: list[ConfigError] = []

    def walk(value: Any, at: tuple) -> Any:
        if isinstance(value, str):
            if "$" not in value:
                return value
            try:
                return expand_text(value, environ)
            except KeyError as exc:
                errors.append(source.error(at, f"environment variable {exc.args[0]} is not set",
                                           hint=f"set it, or give a default: ${{{exc.args[0]}:-value}}"))
            except ValueError as exc:
                errors.append(source.error(at, str(exc)))
            return value
        if isinstance(value, dict):
            return {k: walk(v, at + (k,)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, at + (i,)) for i, v in enumerate(value)]
        return value

    return walk(data, path), errors


def references(data: Any) -> bool:
    """Whether any string in ``data`` holds a ``${`` reference (so there is something to hide)."""
    if isinstance(data, str):
        return "${" in data
    if isinstance(data, dict):
        return any(references(v) for v in data.values())
    if isinstance(data, list):
        return any(references(v) for v in data)
    return False
