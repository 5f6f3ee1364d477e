"""A runner that answers without calling anything: for demos, tests and dry runs."""
from __future__ import annotations

import time
from typing import Any


def echo(input: Any, output: Any = None, delay: float = 0.0) -> Any:
    """Return ``output`` when given (usually a template such as ``"{{ expected }}"``),
    else the item's input unchanged; wait ``delay`` seconds first."""
    if delay:
        time.sleep(delay)
    return input if output is None else output
