"""Known secret values kept out of everything a run writes.

A ``${VAR}`` value reaches runners, models and tools; a server may echo it in an error
body, a program may print it, a model may repeat it. Results are cleaned as each item
finishes, before the database, the reports or the terminal see them: every value the
project's load expanded from the environment (``Secrets``, gathered by
``yamleval.config.interpolate``), in any form it would stand in a reply or a URL (JSON-escaped,
percent-encoded whole or in part, form-encoded), becomes the ``${VAR}`` it came from.
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import InitVar, dataclass, field
from typing import Any, Callable, Mapping

from yamleval.records.types import ExperimentResult, ItemResult

# Shorter values ("1", "true", "gpt-4") are no credentials, and replacing them in model text
# would garble it: results keep them; a preview of the requests hides them too.
MIN_LENGTH = 8


@dataclass(frozen=True)
class Secrets:
    """The values one load of a project expanded from the environment, each with the
    ``${NAME}`` it came from; a run of that project keeps them out of what it writes."""

    names: InitVar[Mapping[str, str] | None] = None  # value -> "${NAME}"
    every: InitVar[bool] = False  # also the values shorter than MIN_LENGTH
    # each value kept -> its "${NAME}", longest first, and one pattern of every form of them (never shown in a repr)
    replacements: Mapping[str, str] = field(init=False, repr=False, default_factory=dict)
    named: tuple[str, ...] = field(init=False, repr=False, default=())  # the "${NAME}" of each group of ``pattern``
    pattern: re.Pattern | None = field(init=False, repr=False, default=None)
    values: Mapping[str, str] = field(init=False, repr=False, default_factory=dict)  # ``names``, whatever their length

    def __post_init__(self, names: Mapping[str, str] | None, every: bool) -> None:
        values = {value: name for value, name in (names or {}).items() if value}
        kept = values if every else {value: name for value, name in values.items() if len(value) >= MIN_LENGTH}
        longest = sorted(kept, key=len, reverse=True)  # the longest value wins where two overlap
        object.__setattr__(self, "replacements", {value: kept[value] for value in longest})
        object.__setattr__(self, "named", tuple(kept[value] for value in longest))
        object.__setattr__(self, "pattern", re.compile("|".join(f"(?P<s{n}>{_written(value)})" for n, value
                                                                 in enumerate(longest))) if longest else None)
        object.__setattr__(self, "values", values)

    def name_of(self, found: re.Match) -> str:
        """The ``${VAR}`` of the secret ``found`` (a match of ``pattern``) is a form of."""
        return self.named[int(found.lastgroup[1:])]

    def every_value(self) -> "Secrets":
        """These secrets with the short values too: for a request shown as it would be sent
        (``preview``), where a 7-character token is a token (in results, "gpt-4" or "true"
        replaced by the ``${VAR}`` it came from would garble the answers)."""
        return Secrets(self.values, every=True)


def _written(value: str) -> str:
    """A pattern of every way ``value`` is written in text, JSON and URLs: each character as it
    is, JSON-escaped, or percent-encoded (either case, or encoded twice), a space also as ``+``
    and a ``+`` also as the space a form decodes it to; a client encodes some characters and
    keeps others, so each is matched on its own."""
    return "".join(_character(c) for c in value)


def _character(c: str) -> str:
    forms = {re.escape(c), re.escape(json.dumps(c)[1:-1]), re.escape(json.dumps(c, ensure_ascii=False)[1:-1])}
    forms.add("".join("%(?:25)?" + "".join(f"[{h}{h.lower()}]" if h.isalpha() else h for h in f"{b:02X}")
                      for b in c.encode("utf-8", "surrogatepass")))
    if c in " +":
        forms.add(r"[ +]")
    return "(?:" + "|".join(sorted(forms, key=len, reverse=True)) + ")"


def redact_text(text: str, secrets: Secrets) -> str:
    """``text`` with each of ``secrets`` replaced by its ``${VAR}``."""
    if secrets.pattern is None or not isinstance(text, str):
        return text
    return secrets.pattern.sub(secrets.name_of, text)


def _walk(value: Any, pattern: re.Pattern, replace: Callable[[re.Match], str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(replace, value) if pattern.search(value) else value
    if isinstance(value, dict):
        items = [(_walk(k, pattern, replace), _walk(v, pattern, replace)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items())):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        walked = [_walk(v, pattern, replace) for v in value]
        if all(a is b for a, b in zip(walked, value)):
            return value
        return type(value)(walked) if isinstance(value, list) else tuple(walked)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            old = getattr(value, f.name)
            new = _walk(old, pattern, replace)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


def redact_value(value: Any, secrets: Secrets) -> Any:
    """A JSON-like value with each of ``secrets`` replaced by its ``${VAR}``, in keys and values."""
    return value if secrets.pattern is None else _walk(value, secrets.pattern, secrets.name_of)


_LITERAL, _ESCAPED = re.compile(r"\$(\$*)\{"), re.compile(r"\$(\$+)\{")


def kept_redacted(value: Any, secrets: Secrets) -> Any:
    """``value`` as the answer cache keeps it: each secret replaced by its ``${VAR}``, after a
    ``${`` that was in it already is written ``$${`` (so that ``restored`` tells the two apart)."""
    escaped = _walk_sub(value, _LITERAL, lambda m: f"${m.group(1)}${{")
    return redact_value(escaped, secrets)


def restored(value: Any, secrets: Secrets) -> Any:
    """A value ``kept_redacted`` made, as it was given: each ``${VAR}`` it wrote back as the value
    it stood for (as written raw: a JSON-escaped or percent-encoded form comes back raw), and each
    ``$${`` as the ``${`` that was there."""
    names = {name: raw for raw, name in secrets.values.items() if raw in secrets.replacements}
    if names:
        pattern = re.compile("(?<!\\$)(?:" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + ")")
        value = _walk(value, pattern, lambda m: names[m.group()])
    return _walk_sub(value, _ESCAPED, lambda m: f"{m.group(1)[1:]}${{")


def _walk_sub(value: Any, pattern: re.Pattern, replace: Callable[[re.Match], str]) -> Any:
    """``value`` with ``pattern`` replaced in every string of it (keys too)."""
    if isinstance(value, str):
        return pattern.sub(replace, value) if pattern.search(value) else value
    if isinstance(value, dict):
        return {_walk_sub(k, pattern, replace): _walk_sub(v, pattern, replace) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        walked = [_walk_sub(v, pattern, replace) for v in value]
        return walked if isinstance(value, list) else tuple(walked)
    return value


def redact_item(result: ItemResult, secrets: Secrets) -> ItemResult:
    """An item's result with none of ``secrets`` in its item, output, error, scores, metadata or trace.

    Every item of a run passes here: a quick look for any secret comes first, and only an
    item that holds one is copied."""
    pattern = secrets.pattern
    if pattern is None or not _holds(result, pattern.search):
        return result
    return _walk(result, pattern, secrets.name_of)


def _holds(result: ItemResult, search: Callable[[str], Any]) -> bool:
    item = result.item
    for value in (result.output, result.error, item.input, item.expected, item.id, item.label, item.context,
                  item.metadata, result.metadata, result.trace, item.assertions, item.source):
        if value is not None and _contains(value, search):
            return True
    for score in result.scores.values():
        for value in (score.reason, score.error, score.metadata):
            if value is not None and _contains(value, search):
                return True
    return False


def _contains(value: Any, search: Callable[[str], Any]) -> bool:
    kind = type(value)
    if kind is str:
        return search(value) is not None
    if kind is dict:
        return any(_contains(k, search) or _contains(v, search) for k, v in value.items())
    if kind is list or kind is tuple:
        return any(_contains(v, search) for v in value)
    return isinstance(value, (dict, list, tuple, str)) and _contains(_plain(value), search)


def _plain(value: Any) -> Any:
    """A subclass of str, dict, list or tuple as its base type, for ``_contains``."""
    for base in (str, dict, list, tuple):
        if isinstance(value, base):
            return base(value)
    return value


def _named_values(text: str, redacted: str) -> str:
    """For a stop reason whose values were replaced by their ``${VAR}``: how to see what they
    were (a URL that refused every call is of no use to a user who cannot see it)."""
    names = [n for n in dict.fromkeys(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", redacted)) if f"${{{n}}}" not in text]
    if not names:
        return ""
    shown = " and ".join(f"${{{name}}}" for name in names)
    echo = " ".join(f'"${name}"' for name in names)
    return (f". {shown} stand{'s' * (len(names) == 1)} for the value of the environment variable"
            f"{'s' * (len(names) > 1)}, which yamleval never prints: `echo {echo}` shows what was tried")


def redact_experiment(result: ExperimentResult, secrets: Secrets) -> ExperimentResult:
    """An experiment's warnings and stop reason redacted (its items were, one by one)."""
    if secrets.pattern is None:
        return result
    warnings = tuple(redact_text(w, secrets) for w in result.warnings)
    aborted = redact_text(result.aborted, secrets) if result.aborted else result.aborted
    if aborted != result.aborted:  # say what to look at where the reason names a value by its variable
        aborted += _named_values(result.aborted, aborted)
    if warnings == result.warnings and aborted == result.aborted:
        return result
    return dataclasses.replace(result, warnings=warnings, aborted=aborted)
