"""Text scorers: exact_match, levenshtein, contains, contains_any, contains_all, regex, starts_with.

yamleval follows the JavaScript autoevals library, so values are compared as text coerced
the way JavaScript does it (``to_text``):

- a ``str`` is used as it is; ``None`` is ``""``; ``True``/``False`` are ``"true"``/``"false"``;
- an ``int`` is its decimal digits; a ``float`` prints like a JS number: ``1.0`` is ``"1"``,
  ``0.5`` is ``"0.5"``, ``1e-7`` is ``"1e-7"``, NaN is ``"NaN"``, infinity ``"Infinity"``;
- a ``dict``, ``list`` or ``tuple`` is compact JSON (``to_json``): no spaces, keys in their
  given order, non-ASCII kept as it is, integral floats written as integers and NaN or
  infinity as ``null`` (as ``JSON.stringify`` does); other non-integral floats inside JSON
  use Python's shortest form, which differs from JS only in the exponent spelling of
  numbers below 1e-4 (``1e-05`` against ``0.00001``);
- anything else is ``str(value)``.

Lengths and edit distances count Unicode code points. JS counts UTF-16 code units, so
scores differ from VoltAgent only for text outside the Basic Multilingual Plane (emoji).
JSON text is parsed strictly (``parse_json``): ``NaN`` and ``Infinity`` are not JSON.
``ignore_case`` compares ``str.casefold()`` forms.

``exact_match`` keeps autoevals' own rule that ``None`` is JSON ``null`` (``None`` against
``None`` is 1; VoltAgent first turns ``None`` into ``""``), and fixes autoevals-Python's
TypeError on a scalar against a list (``5`` against ``[5]`` is 0). ``levenshtein`` reads
``None`` as ``""`` on both sides (VoltAgent reads an expected ``null`` as ``"null"``).
"""
from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

import Levenshtein

from yamleval.builtins.scorers.normalize import check_normalize, described, normalizer
from yamleval.records.types import Score


def to_text(value: Any) -> str:
    """The text a scorer compares for ``value``, coerced as JavaScript would (see the module docstring)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _number_text(value)
    if isinstance(value, (dict, list, tuple)):
        return to_json(value)
    return str(value)


def to_json(value: Any, *, sort_keys: bool = False) -> str:
    """Compact JSON for ``value`` as ``JSON.stringify`` writes it (non-ASCII kept, 1.0 written as 1)."""
    try:
        return json.dumps(
            _js_numbers(value), separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys, default=str
        )
    except (TypeError, ValueError) as err:
        raise ValueError(f"cannot write {type(value).__name__} value as JSON: {err}") from None
    except RecursionError:
        raise ValueError(
            f"cannot write {type(value).__name__} value as JSON: circular or too deeply nested"
        ) from None


def parse_json(text: str) -> Any:
    """Parse ``text`` as strict JSON; raises ``json.JSONDecodeError`` (a ``ValueError``) if it is not."""
    return json.loads(text, parse_constant=_reject_constant)


def _reject_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not valid JSON", name, 0)


def _number_text(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x.is_integer() and abs(x) < 1e21:
        return str(int(x))
    text = repr(x)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = int(exponent)
    if -7 < power < 21:
        from decimal import Decimal  # rare, and decimal is slow to import

        return format(Decimal(text), "f")
    return f"{mantissa}e{'+' if power > 0 else '-'}{abs(power)}"


def _js_numbers(value: Any) -> Any:
    """A copy of ``value`` whose floats json.dumps writes as JS does (1.0 -> 1, NaN -> null)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if value.is_integer() and abs(value) < 1e21:
            return int(value)
        return value
    if isinstance(value, dict):
        return {key: _js_numbers(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_js_numbers(item) for item in value]
    return value


def _needs_json(value: Any) -> bool:
    return value is None or isinstance(value, (dict, list, tuple))


def exact_match(output: Any, expected: Any, normalize: Any = None) -> bool | Score:
    """True (score 1) when the output and the expected value are the same text, else
    False (score 0). It is a verdict: a mismatch fails the item, with or without a threshold.
    With ``normalize`` (see ``yamleval.builtins.scorers.normalize``) both texts are normalized first and
    the result is a ``Score`` whose reason shows the two normalized texts when they differ.

    Text follows JS autoevals' ExactMatch: a dict, list or ``None`` is written as compact
    JSON (``None`` is ``null``, so ``None`` against ``None`` gives 1); when either side is
    such a value, a string on the other side that parses as JSON is parsed and rewritten
    the same way, so ``{"a": 1}`` matches ``'{"a": 1}'``; everything else goes through
    ``to_text``, so ``123`` matches ``"123"`` and ``1.0`` matches ``1``. Key order matters:
    ``{"a": 1, "b": 2}`` does not match ``{"b": 2, "a": 1}``. ``5`` against ``[5]`` gives 0.
    """
    if type(output) is str and type(expected) is str:
        texts = output, expected
    else:
        maybe_object = _needs_json(output) or _needs_json(expected)
        texts = _exact_text(output, maybe_object), _exact_text(expected, maybe_object)
    if normalize is None:
        return texts[0] == texts[1]
    norm = normalizer(normalize)
    got, wanted = norm(texts[0]), norm(texts[1])
    if got == wanted:
        return Score(score=1.0, passed=True, reason="same text" + described(normalize))
    return Score(score=0.0, passed=False, reason=f"{quoted(got)} is not {quoted(wanted)}{described(normalize)}")


def _exact_text(value: Any, maybe_object: bool) -> str:
    if _needs_json(value):
        return to_json(value)
    if maybe_object and isinstance(value, str):
        try:
            return to_json(parse_json(value))
        except ValueError:
            return value
    return to_text(value)


LEVENSHTEIN_CELLS = 10 ** 10  # about half a second of work here


def levenshtein(output: Any, expected: Any) -> Score:
    """Edit-distance similarity: ``1 - distance(o, e) / max(len(o), len(e))``; when the texts
    differ, the reason gives the distance and both lengths (``distance 3 (output 12
    characters, expected 10)``).

    Both values go through ``to_text``; the distance counts unit-cost insertions,
    deletions and substitutions of code points. Two empty texts give 1.0 (so do two
    ``None``); one empty text against a non-empty one gives 0.0. Case and whitespace count.
    Texts whose lengths multiply past ``LEVENSHTEIN_CELLS`` are the score's error.
    """
    output, expected = to_text(output), to_text(expected)
    distance = _distance(output, expected)
    if not distance:
        return Score(score=1.0)
    return Score(score=1.0 - distance / max(len(output), len(expected)),
                 reason=f"distance {distance:,} (output {len(output):,} characters, expected {len(expected):,})")


def similarity(output: Any, expected: Any) -> float:
    """``levenshtein``'s score alone, for scorers that compare the parts of a value."""
    output, expected = to_text(output), to_text(expected)
    distance = _distance(output, expected)
    return 1.0 - distance / max(len(output), len(expected)) if distance else 1.0


def _distance(output: str, expected: str) -> int:
    if output == expected:
        return 0
    if len(output) * len(expected) > LEVENSHTEIN_CELLS:
        # the distance is computed in C holding the interpreter lock: no timeout or Ctrl-C could stop it
        raise ValueError(f"texts too long to compare ({len(output):,} and {len(expected):,} characters; the"
                         f" product of the lengths may be at most {LEVENSHTEIN_CELLS:,}, about 100,000 characters"
                         " each): score long texts with contains, regex or a judge")
    return Levenshtein.distance(output, expected)


def contains(output: Any, expected: Any, ignore_case: bool = False, normalize: Any = None) -> Score:
    """Passes (score 1) when the text of ``expected`` occurs anywhere in the text of
    ``output``, else fails (score 0); the reason says it was found or is missing.

    Both go through ``to_text``; with ``ignore_case`` both are case-folded first, with
    ``normalize`` both are normalized (``yamleval.builtins.scorers.normalize``). An empty expected text
    (or one that normalizes to nothing) is contained in every output (as JS ``includes("")``).
    """
    needle = to_text(expected)
    haystack, (folded,) = _prepared(to_text(output), [needle], ignore_case, normalize)
    found = folded in haystack
    return Score(score=1.0 if found else 0.0, passed=found,
                 reason=("found " if found else "missing ") + quoted(needle) + described(normalize))


def contains_any(output: Any, expected: Any, ignore_case: bool = False, normalize: Any = None) -> Score:
    """Passes (score 1) when at least one of the expected strings occurs in the text of
    ``output``, else fails (score 0); the reason names the first found, or says none was.

    ``expected`` is a non-empty list of strings (numbers and booleans are taken as their
    ``to_text``); a single string counts as a one-element list. With ``ignore_case`` the
    comparison is case-folded; ``normalize`` normalizes both sides. An empty list or an element that is a list, dict or
    ``None`` raises ``ValueError``.
    """
    originals = as_texts("contains_any", expected)
    haystack, needles = _prepared(to_text(output), originals, ignore_case, normalize)
    found = next((original for original, needle in zip(originals, needles) if needle in haystack), None)
    if found is None:
        return Score(score=0.0, passed=False,
                     reason="missing all of " + ", ".join(map(quoted, originals)) + described(normalize))
    return Score(score=1.0, passed=True, reason="found " + quoted(found) + described(normalize))


def contains_all(output: Any, expected: Any, ignore_case: bool = False, normalize: Any = None) -> Score:
    """Passes when every expected string occurs in the text of ``output``.

    ``expected``, ``ignore_case`` and ``normalize`` are read as in ``contains_any``. The score is the fraction of expected
    strings found (so a partial hit still shows); ``passed`` is True only when all are
    found; the reason names the missing ones.
    """
    originals = as_texts("contains_all", expected)
    haystack, needles = _prepared(to_text(output), originals, ignore_case, normalize)
    missing = [original for original, needle in zip(originals, needles) if needle not in haystack]
    found = len(needles) - len(missing)
    if missing:
        return Score(
            score=found / len(needles),
            passed=False,
            reason="missing " + ", ".join(map(quoted, missing)) + described(normalize),
        )
    return Score(score=1.0, passed=True, reason=f"found all {len(needles)}" + described(normalize))


QUOTED = 80  # characters of an expected text that a reason quotes


def quoted(text: str) -> str:
    return repr(text if len(text) <= QUOTED else text[:QUOTED] + "…")


def as_texts(scorer: str, expected: Any) -> list[str]:
    """``expected`` as a non-empty list of texts: a string is a list of one; numbers and booleans
    are their ``to_text``; anything else is a ValueError naming ``scorer``."""
    items = [expected] if isinstance(expected, str) else expected
    if not isinstance(items, (list, tuple)) or not items:
        raise ValueError(
            f"{scorer}: expected must be a string or a non-empty list of strings, got {expected!r}"
        )
    needles = []
    for item in items:
        if item is None or isinstance(item, (dict, list, tuple)):
            raise ValueError(f"{scorer}: expected must be a list of strings, got element {item!r}")
        needles.append(to_text(item))
    return needles


def _prepared(haystack: str, needles: list[str], ignore_case: bool, normalize: Any) -> tuple[str, list[str]]:
    """The texts as compared: normalized, then case-folded with ``ignore_case``."""
    norm = normalizer(normalize)
    if ignore_case:
        return norm(haystack).casefold(), [norm(needle).casefold() for needle in needles]
    return norm(haystack), [norm(needle) for needle in needles]


def regex(output: Any, expected: Any, ignore_case: bool = False) -> bool:
    """True when the regular expression ``expected`` matches somewhere in the text of ``output``.

    Python ``re`` syntax, searched anywhere (anchor with ``^``/``$`` to match the whole
    text); ``ignore_case`` adds ``re.IGNORECASE``. Compiled patterns are cached. A pattern
    that is not a string or does not compile raises ``ValueError`` naming the pattern.
    """
    if not isinstance(expected, str):
        raise ValueError(
            f"regex: expected must be a pattern string, got {type(expected).__name__} {expected!r}"
        )
    return compiled_regex(expected, re.IGNORECASE if ignore_case else 0).search(to_text(output)) is not None


@functools.lru_cache(maxsize=256)
def compiled_regex(pattern: str, flags: int) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as err:
        raise ValueError(f"regex: invalid regular expression {pattern!r}: {err}") from None


def starts_with(output: Any, expected: Any, ignore_case: bool = False, normalize: Any = None) -> bool | Score:
    """True when the text of ``output`` begins with the text of ``expected``.

    Leading whitespace is ignored on both sides, so ``"  Yes, ..."`` starts with ``"Yes"``;
    ``ignore_case`` compares case-folded text. An empty expected text always matches. With
    ``normalize`` both texts are normalized first and the result is a ``Score`` whose reason
    shows the normalized prefix and how the output begins.
    """
    prefix = to_text(expected)
    text, (folded,) = _prepared(to_text(output), [prefix], ignore_case, normalize)
    text, folded = text.lstrip(), folded.lstrip()
    found = text.startswith(folded)
    if normalize is None:
        return found
    if found:
        return Score(score=1.0, passed=True, reason=f"starts with {quoted(folded)}{described(normalize)}")
    return Score(score=0.0, passed=False, reason=f"starts with {quoted(text[:len(folded) + 10])}, not"
                                                 f" {quoted(folded)}{described(normalize)}")


for _scorer in (exact_match, contains, contains_any, contains_all, starts_with):
    _scorer.validate_with = check_normalize  # an unknown normalization is a config error at load time
del _scorer
