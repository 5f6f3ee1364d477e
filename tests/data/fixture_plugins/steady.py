"""A deterministic runner for crash tests: the same item always gets the same result."""
from __future__ import annotations

import time

from yamleval import RunnerResult


def answer(input, item, pad: int = 0, seconds: float = 0.0, offset: int = 0):
    """The expected answer for most items, a wrong one for every third, an error for every
    seventh. ``pad`` characters of runner metadata make each stored record (and so each
    batch the store writes) large, so that writes take measurable time; ``seconds`` makes
    each item take that long; ``offset`` shifts which items get a wrong answer."""
    if seconds:
        time.sleep(seconds)
    number = int(item.id.rsplit("-", 1)[1])
    if number % 7 == 3:
        raise RuntimeError(f"no answer for {item.id}")
    text = item.expected if (number + offset) % 3 else f"wrong {number}"
    return RunnerResult(output=text, metadata={"pad": "." * pad}) if pad else text
