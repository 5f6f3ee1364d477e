"""The ``normalize:`` option of the matching scorers: text forms applied to the output and the
expected value alike before they are compared, as Inspect AI's ``match`` and ``includes``
normalise answers.

    nfkc         Unicode NFKC: compatibility forms folded (``ﬁ`` is ``fi``, full-width ``Ａ`` is ``A``)
    case         case-folded (``str.casefold``: ``Straße`` matches ``STRASSE``)
    punctuation  every Unicode punctuation character removed (``"Paris."`` is ``Paris``;
                 ``3.14`` is ``314``: keep it off for numbers)
    articles     the English articles ``a``, ``an``, ``the`` removed as whole words, in any case
    whitespace   runs of whitespace made one space, and both ends trimmed

They apply in that order, whatever order the list gives, so ``[case, articles]`` and
``[articles, case]`` are the same. One name may be given alone instead of a list.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any, Callable

from yamleval.plugins.registry import OptionError, accepted_hint

_ARTICLES = re.compile(r"\b(?:a|an|the)\b\s*", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")


def _punctuation(text: str) -> str:
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))


STEPS: dict[str, Callable[[str], str]] = {  # in the order they apply
    "nfkc": lambda text: unicodedata.normalize("NFKC", text),
    "case": str.casefold,
    "punctuation": _punctuation,
    "articles": lambda text: _ARTICLES.sub("", text),
    "whitespace": lambda text: _WHITESPACE.sub(" ", text).strip(),
}


def normalizer(normalize: Any) -> Callable[[str], str]:
    """The function that applies the ``normalize:`` option (None: text unchanged); an unknown
    name raises ``OptionError`` naming the closest one."""
    names = (normalize,) if isinstance(normalize, str) else normalize
    if names is None:
        return _unchanged
    if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) for name in names):
        raise OptionError(f"normalize must be one of {', '.join(STEPS)} or a list of them, got {normalize!r}",
                          key="normalize")
    return _chain(tuple(names))


def _unchanged(text: str) -> str:
    return text


@functools.lru_cache(maxsize=64)
def _chain(names: tuple[str, ...]) -> Callable[[str], str]:
    for name in names:
        if name not in STEPS:
            raise OptionError(f"unknown normalization '{name}'", key="normalize", hint=accepted_hint(name, STEPS))
    steps = [step for name, step in STEPS.items() if name in names]

    def apply(text: str) -> str:
        for step in steps:
            text = step(text)
        return text

    return apply


def described(normalize: Any) -> str:
    """The ``normalize:`` option for a reason: ``" (normalized: case, whitespace)"``, or nothing."""
    names = (normalize,) if isinstance(normalize, str) else normalize
    return f" (normalized: {', '.join(name for name in STEPS if name in names)})" if names else ""


def check_normalize(arguments: dict) -> None:
    """Load-time check of a matching scorer's ``with:``: its ``normalize`` names are known."""
    normalizer(arguments.get("normalize"))
