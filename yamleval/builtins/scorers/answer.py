"""The ``answer`` scorer: a final answer extracted from the output, compared with the expected value.

Patterns (``with: {pattern: ...}``), each taking the *last* answer the output gives, as a model
that reconsiders gives its final one last:

    answer_prefix  the text after ``ANSWER:`` to the end of its line (any case: ``Answer: Paris``)
    number         the last number: ``1,234.5``, ``-3``, ``.5``, ``2e3``; commas are removed and it
                   is compared with the expected number numerically (``42.0`` matches ``42``)
    letter         a choice letter A-Z: ``Answer: B`` / ``answer is (B)`` first, else the last
                   ``(B)``, else the last ``B)``, else an output that is the letter alone (``B.``);
                   compared with the expected letter in any case (``b`` and ``(B)`` are ``B``)
    line           the last line that is not blank
    regex          the last match of ``with: {regex: ...}``: its first group if it has one, else
                   the whole match (Python ``re`` syntax)

The extracted text and the expected text are compared whole, after ``normalize:`` (see
``yamleval.builtins.scorers.normalize``) when it is given, with surrounding whitespace trimmed. An output
where the pattern finds nothing fails, and the reason says so.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from yamleval.plugins.registry import OptionError, accepted_hint
from yamleval.builtins.scorers.normalize import described, normalizer
from yamleval.builtins.scorers.text import compiled_regex, quoted, to_text
from yamleval.records.types import Score

_PREFIX = re.compile(r"answer\s*:\s*([^\n]*)", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
_LETTER_STATED = re.compile(r"\b(?i:answer)\s*(?:(?i:is)\s*:?|:)\s*\(?([A-Z])\)?(?![\w'])")
_LETTER_FORMS = (re.compile(r"\(([A-Z])\)"), re.compile(r"(?<![\w(])([A-Z])\)"),
                 re.compile(r"^\W*([A-Z])\W*$"))


def _last(pattern: re.Pattern[str], text: str) -> str | None:
    found = None
    for found in pattern.finditer(text):
        pass
    if found is None:
        return None
    return found.group(1) if pattern.groups else found.group(0)


def _answer_prefix(text: str) -> str | None:
    found = _last(_PREFIX, text)
    return found.strip() if found and found.strip() else None


def _number(text: str) -> str | None:
    return _last(_NUMBER, text)


def _letter(text: str) -> str | None:
    found = _last(_LETTER_STATED, text)
    for form in _LETTER_FORMS:
        found = found or _last(form, text.strip())
    return found.upper() if found else None


def _line(text: str) -> str | None:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else None


PATTERNS: dict[str, Callable[[str], str | None]] = {
    "answer_prefix": _answer_prefix,
    "number": _number,
    "letter": _letter,
    "line": _line,
}
NOTHING = {
    "answer_prefix": "no 'ANSWER:' line",
    "number": "no number",
    "letter": "no choice letter",
    "line": "no line that is not blank",
    "regex": "no match of the regex",
}


def answer(output: Any, expected: Any, pattern: str, regex: str | None = None, normalize: Any = None) -> Score:
    """Passes when the final answer found in the output by ``pattern`` (``answer_prefix``,
    ``number``, ``letter``, ``line`` or ``regex``) equals the expected value; the reason says
    what was extracted, or that nothing was found (which fails).

    ``number`` compares numbers (an expected value that is not a number is the score's error);
    the others compare text, ``letter`` in any case, after ``normalize`` when given.
    """
    _check({"pattern": pattern, "regex": regex, "normalize": normalize})
    text = to_text(output)
    if pattern == "regex":
        found = _last(compiled_regex(regex, 0), text)
        found = None if found is None else found.strip()
    else:
        found = PATTERNS[pattern](text)
    if found is None:
        return Score(score=0.0, passed=False, reason=f"{NOTHING[pattern]} in the output")
    if pattern == "number":
        same, shown = _as_number(found, "extracted") == _as_number(to_text(expected), "expected"), to_text(expected)
    else:
        norm = normalizer(normalize)
        shown = to_text(expected).strip()
        got, wanted = norm(found), norm(shown)
        if pattern == "letter":  # the expected letter may be written "b" or "(B)" too
            got, wanted = got.upper(), (_letter(wanted) or wanted).upper()
        same = got == wanted
    verdict = "matches" if same else "is not"
    return Score(score=1.0 if same else 0.0, passed=same,
                 reason=f"extracted {quoted(found)} ({pattern}), which {verdict} the expected {quoted(shown)}"
                        + ("" if pattern == "number" else described(normalize)))


def _as_number(text: str, role: str) -> float:
    try:
        return float(text.strip().replace(",", ""))
    except ValueError:
        raise ValueError(f"answer: the {role} value {text!r} is not a number") from None


def _check(arguments: dict) -> None:
    """Load-time check of ``with:``: a known pattern, a regex that compiles when it is ``regex``,
    known normalizations."""
    pattern, regex = arguments.get("pattern"), arguments.get("regex")
    if pattern != "regex" and pattern not in PATTERNS:
        raise OptionError(f"unknown pattern {pattern!r}", key="pattern", hint=accepted_hint(str(pattern), NOTHING))
    if pattern == "regex":
        if not isinstance(regex, str):
            raise OptionError("pattern 'regex' needs `regex:`, a regular expression", key="pattern",
                              hint="add `regex: ...` under `with:`")
        try:
            compiled_regex(regex, 0)
        except ValueError as err:
            raise OptionError(str(err).removeprefix("regex: "), key="regex") from None
    elif regex is not None:
        raise OptionError(f"`regex:` is used only with pattern 'regex', not {pattern!r}", key="regex")
    normalizer(arguments.get("normalize"))


answer.validate_with = _check
