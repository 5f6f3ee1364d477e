"""``${VAR}`` and ``${VAR:-default}`` from the environment, applied at load time.

Only the expanded copy is used to run; the stored and reported config keeps the
original text. Every value taken from the environment is noted in the ``secrets`` given,
so that what a run of that config writes can be cleaned of it (``yamleval.records.redaction``):
a server or a program may repeat a key in an error, a reply or a trace. ``$${`` is a
literal ``${``. A variable set to the empty string is an error where a key, a URL or a
header value is expected.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from yamleval.config.yaml_source import SourceMap
from yamleval.records.errors import ConfigError

_REFERENCE = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SYNTAX_HINT = "write ${NAME} or ${NAME:-default}; $${ is a literal ${"

# Settings an empty value never suits: there an empty variable is a secret the job did not get
# (GitHub Actions runs a pull request from a fork without the repository's secrets), not a value.
_NOT_EMPTY = ("api_key", "base_url", "url")

class ReferenceSyntaxError(ValueError):
    """A ``${`` that is not a valid reference: ``text`` as written, ``hint`` on how to write one."""

    def __init__(self, message: str, text: str, hint: str = _SYNTAX_HINT):
        super().__init__(message)
        self.text = text
        self.hint = hint


class EmptyVariable(LookupError):
    """A variable that is set but empty where a value is needed; ``name`` says which."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _needs_value(at: tuple) -> bool:
    """Whether the setting at ``at`` is a key, an address or a header value, which cannot be empty."""
    return bool(at) and (at[-1] in _NOT_EMPTY or at[-2:-1] == ("headers",))


def expand_text(text: str, environ: Mapping[str, str], secrets: dict[str, str], required: bool = False) -> str:
    """Expand the references in one string, noting each value taken in ``secrets`` (value ->
    ``${NAME}``); raise ``KeyError(name)`` or ``ReferenceSyntaxError``, and with ``required``
    ``EmptyVariable`` for a variable set to the empty string (a default written is used)."""
    def replace(match: re.Match) -> str:
        if match.group(0) == "$${":
            return "${"
        body = match.group(1)
        if body is None:
            rest = text[match.start():]
            shown = rest if len(rest) <= 40 else rest[:37] + "..."
            raise ReferenceSyntaxError(f"'{shown}' has no closing '}}'", match.group(0))
        name, sep, default = body.partition(":-")
        if not _NAME.match(name):
            fixed = name.strip() + (sep + default if sep else "")
            hint = f"did you mean '${{{fixed}}}'?" if _NAME.match(name.strip()) else _SYNTAX_HINT
            raise ReferenceSyntaxError(f"'${{{body}}}' is not a valid reference", match.group(0), hint)
        value = environ.get(name)
        if value is None or (sep and value == ""):
            if sep:
                return default
            raise KeyError(name)
        if required and value == "":
            raise EmptyVariable(name)
        secrets.setdefault(value, "${" + name + "}")  # the short ones are hidden only where requests are shown
        return value

    return _REFERENCE.sub(replace, text)


def expand(data: Any, source: SourceMap, environ: Mapping[str, str],
           secrets: dict[str, str]) -> tuple[Any, list[ConfigError]]:
    """Return a copy of ``data`` with every string expanded, and the errors met; the values
    taken from ``environ`` are noted in ``secrets``."""
    errors: list[ConfigError] = []

    def walk(value: Any, at: tuple) -> Any:
        if isinstance(value, str):
            if "$" not in value:
                return value
            try:
                return expand_text(value, environ, secrets, _needs_value(at))
            except KeyError as exc:
                errors.append(source.error(at, f"environment variable {exc.args[0]} is not set",
                                           hint=f"set it, or give a default: ${{{exc.args[0]}:-value}}",
                                           find=f"${{{exc.args[0]}}}"))
            except EmptyVariable as exc:
                errors.append(source.error(at, f"environment variable {exc.name} is set but empty",
                                           hint="a key, URL or header value cannot be empty; in CI, a pull "
                                                "request from a fork gets no secrets", find=f"${{{exc.name}}}"))
            except ReferenceSyntaxError as exc:
                errors.append(source.error(at, str(exc), hint=exc.hint, find=exc.text))
            return value
        if isinstance(value, dict):
            return {k: walk(v, at + (k,)) for k, v in value.items()}
        if isinstance(value, list):
            if at[-2:] == ("dataset", "items"):
                return value  # inline items are data, reported as written: never expanded
            return [walk(v, at + (i,)) for i, v in enumerate(value)]
        return value

    return walk(data, ()), errors
