"""``calculator``: arithmetic and common math functions, from a parsed expression tree (no eval)."""
from __future__ import annotations

import ast
import math
import operator

from yamleval.builtins.tools.tool import ToolError

MAX_EXPRESSION = 2000
# An integer result above this many bits is refused: it would take long to build and to print.
MAX_BITS = 4096

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
FUNCTIONS = {"sqrt": math.sqrt, "sin": math.sin, "cos": math.cos, "tan": math.tan,
             "log": math.log, "log10": math.log10, "exp": math.exp, "abs": abs,
             "round": round, "floor": math.floor, "ceil": math.ceil}
CONSTANTS = {"pi": math.pi, "e": math.e}


def _check_size(value: int | float) -> int | float:
    if isinstance(value, int) and value.bit_length() > MAX_BITS:
        raise ToolError(f"result is too large (more than {MAX_BITS} bits)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("result is not a finite number")
    return value


def _power(base: int | float, exponent: int | float) -> int | float:
    # Estimate the size before computing, so 9**9**9 is refused at once instead of hanging.
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        if exponent * math.log2(abs(base)) > MAX_BITS:
            raise ToolError(f"result is too large (more than {MAX_BITS} bits)")
    try:
        result = base ** exponent
    except OverflowError:
        raise ToolError("result is too large") from None
    if isinstance(result, complex):
        raise ToolError("result is a complex number")
    return result


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return _check_size(node.value)
        raise ToolError(f"only numbers are allowed, not {node.value!r}")
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        raise ToolError(f"unknown name '{node.id}' (constants: {', '.join(CONSTANTS)})")
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            return _check_size(_power(left, right))
        try:
            return _check_size(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise ToolError("division by zero") from None
        except OverflowError:
            raise ToolError("result is too large") from None
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in FUNCTIONS:
            shown = f"'{name}'" if name else "this call"
            raise ToolError(f"{shown} is not allowed (functions: {', '.join(FUNCTIONS)})")
        if node.keywords:
            raise ToolError(f"{name}() takes positional arguments only")
        arguments = [_evaluate(a) for a in node.args]
        try:
            return _check_size(FUNCTIONS[name](*arguments))
        except (TypeError, ValueError, OverflowError) as exc:
            raise ToolError(f"{name}(): {exc}") from None
    raise ToolError(f"'{type(node).__name__}' is not allowed in an expression")


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression and return the number.

    Args:
        expression: e.g. "(3 + 4) * 2 ** 3" or "sqrt(2) * sin(pi / 4)"; operators + - * / // % **,
            functions sqrt, sin, cos, tan, log, log10, exp, abs, round, floor, ceil; constants pi, e.
    """
    if len(expression) > MAX_EXPRESSION:
        raise ToolError(f"expression is longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"not a valid expression: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ToolError("expression is nested too deeply") from None
    try:
        return repr(_evaluate(tree))
    except RecursionError:
        raise ToolError("expression is nested too deeply") from None
