"""Custom tools the build tests reference as ``tools.sample_tools:<name>``."""
from __future__ import annotations

from typing import Literal, Optional

PRICES = {"apple": 1.25, "pear": 2.0}


def lookup(item: str, quantity: int = 1, unit: Literal["each", "dozen"] = "each",
           note: Optional[str] = None, tags: list[str] | None = None) -> dict:
    """Price of an item in the shop.

    Only fruit is listed.

    Args:
        item: the fruit's name, lower case.
        quantity: how many to price.
    """
    each = PRICES[item] * (12 if unit == "dozen" else 1)
    return {"item": item, "total": each * quantity}


def greet(name: str, *, greeting: str = "hello", sandbox: str = "") -> str:
    """Greet someone."""
    return f"{greeting} {name} from {sandbox}"
