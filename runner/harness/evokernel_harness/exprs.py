"""Safe evaluation of the small arithmetic expressions tasks use for shapes and costs."""

import ast
import operator
from typing import Any

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


class ExprError(ValueError):
    pass


def evaluate(expr: Any, dims: dict[str, Any]) -> int | float:
    """Evaluate an int, a dimension name or an arithmetic expression over dims."""
    if isinstance(expr, bool):
        raise ExprError(f"not a number: {expr!r}")
    if isinstance(expr, (int, float)):
        return expr
    if not isinstance(expr, str):
        raise ExprError(f"expected a number or an expression, got {expr!r}")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as err:
        raise ExprError(f"cannot parse expression {expr!r}: {err.msg}") from None
    return _eval(tree.body, dims, expr)


def _eval(node, dims, src):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in dims:
            raise ExprError(f"{src!r} uses {node.id!r}, which this configuration does not define")
        return dims[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval(node.left, dims, src), _eval(node.right, dims, src))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, dims, src)
    raise ExprError(f"unsupported syntax in expression {src!r}")


def evaluate_int(expr: Any, dims: dict[str, Any]) -> int:
    value = evaluate(expr, dims)
    if isinstance(value, float):
        if not value.is_integer():
            raise ExprError(f"{expr!r} evaluates to {value}, not an integer")
        value = int(value)
    return value
