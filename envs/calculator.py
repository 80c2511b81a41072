"""A calculator for agents: arithmetic over numbers only, evaluated from the parsed syntax tree."""

from __future__ import annotations

import ast
import math
import operator

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS = {"min": min, "max": max, "abs": abs, "round": round, "sqrt": math.sqrt}


class CalculatorError(ValueError):
    """An expression the calculator refuses."""


def evaluate(expression: str) -> float:
    """Evaluate +, -, *, /, //, %, ** and min/max/abs/round/sqrt over numeric literals."""
    if not isinstance(expression, str) or not expression.strip() or len(expression) > 500:
        raise CalculatorError("expression must be a non-empty string of at most 500 characters")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise CalculatorError(f"cannot parse expression {expression!r}") from None
    try:
        result = float(_eval(tree.body))
    except OverflowError:
        result = math.inf
    except (ZeroDivisionError, ValueError, TypeError) as error:
        raise CalculatorError(f"cannot evaluate {expression!r}: {error}") from None
    if not math.isfinite(result):  # 1e308 * 10 is inf, inf - inf is nan: no JSON number says either
        raise CalculatorError(f"cannot evaluate {expression!r}: the result is not a finite number (overflow)")
    return result


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise CalculatorError("exponent too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS
            and not node.keywords and 0 < len(node.args) <= 20):
        return _FUNCTIONS[node.func.id](*(_eval(arg) for arg in node.args))
    if isinstance(node, (ast.List, ast.Tuple)):
        raise CalculatorError("lists are not supported; pass numbers to min/max directly")
    raise CalculatorError(f"unsupported syntax: {type(node).__name__}")
