"""A deterministic arithmetic "model" that is wrong on purpose for large numbers."""
from __future__ import annotations


def calculate(input: str) -> str:
    """Evaluate ``a op b``; like a weak model, it rounds products above 1000 to hundreds."""
    left, op, right = input.split()
    a, b = float(left), float(right)
    value = {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else float("nan")}[op]
    if op == "*" and value > 1000:
        value = round(value, -2)
    return f"{value:g}"
