"""Tiny custom tools for the agent runner tests (``uses: runners.agent_test_tools:add``)."""
from __future__ import annotations

import time


def add(a: int, b: int) -> int:
    """Add two whole numbers.

    Args:
        a: the first number
        b: the second number
    """
    return a + b


def multiply(a: int, b: int) -> int:
    """Multiply two whole numbers."""
    return a * b


def explode(reason: str) -> str:
    """Always fails, with the given reason."""
    raise ValueError(f"boom: {reason}")


def nap(seconds: float) -> str:
    """Sleep, then say so."""
    time.sleep(seconds)
    return "rested"
