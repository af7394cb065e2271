"""Safe evaluation of the small arithmetic expressions tasks use for shapes and costs. The
grammar is the contract's (src/shared/contract/expressions.ts, read from the generated
expression-grammar.json), as the runner parses it: the source is cut into the grammar's
tokens, then parsed by Python, whose precedence the grammar states, and only the grammar's
operators are evaluated."""

import ast
import operator
import re
from typing import Any

from .schemas import schema

GRAMMAR = schema("expression-grammar.json")

# What each of the grammar's operators means here: one the grammar names and this does not
# fails the import (KeyError); the shared cases use every one (test_contract).
_MEANINGS = {
    "+": (ast.Add, operator.add),
    "-": (ast.Sub, operator.sub),
    "*": (ast.Mult, operator.mul),
    "/": (ast.Div, operator.truediv),
    "//": (ast.FloorDiv, operator.floordiv),
    "%": (ast.Mod, operator.mod),
    "**": (ast.Pow, operator.pow),
}
_BINOPS = {_MEANINGS[op][0]: _MEANINGS[op][1] for level in GRAMMAR["binary"] for op in level}
_BINOPS[_MEANINGS[GRAMMAR["power"]][0]] = _MEANINGS[GRAMMAR["power"]][1]
if GRAMMAR["unary"] != "-":
    raise ImportError(f"the contract's unary operator {GRAMMAR['unary']!r} has no meaning here")

# longest first, so that ** is one token, not two *
_OPERATORS = sorted({op for level in GRAMMAR["binary"] for op in level} | {GRAMMAR["power"], "(", ")"}, key=len)[::-1]
_TOKEN = re.compile(
    f"{GRAMMAR['space']}(?:({GRAMMAR['number']})|({GRAMMAR['name']})|({'|'.join(map(re.escape, _OPERATORS))}))"
)
_ONLY_SPACE = re.compile(f"{GRAMMAR['space']}")


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
        tree = ast.parse(" ".join(_tokens(expr)), mode="eval")
    except SyntaxError as err:
        raise ExprError(f"cannot parse expression {expr!r}: {err.msg}") from None
    return _eval(tree.body, dims, expr)


def _tokens(expr: str) -> list[str]:
    """The grammar's tokens of expr, as the runner cuts them (numbers written as Python reads
    them: 007 is 7); ExprError where something else stands."""
    tokens, at = [], 0
    while at < len(expr):
        match = _TOKEN.match(expr, at)
        if match is None:
            if _ONLY_SPACE.fullmatch(expr, at):
                break
            raise ExprError(f"{expr!r} has {expr[at:].strip()!r} that is not arithmetic")
        number, name, op = match.groups()
        if number is not None:
            tokens.append(str(int(number)) if number.isdigit() else repr(float(number)))
        else:
            tokens.append(name if name is not None else op)
        at = match.end()
    if not tokens:
        raise ExprError("an expression is empty")
    return tokens


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
