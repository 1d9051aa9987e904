"""Arithmetic and calculus answers read by a parser of our own, never by ``eval``.

reasoning-gym's scorers for countdown, puzzle24 and the two integration datasets hand the
model's answer to ``sympy.parse_expr``, which runs it as Python: ``__import__('os')...``
executes and ``9**9**9`` never returns.  Here an answer is tokenized and parsed by a small
recursive-descent grammar (numbers, one variable, a constant's name, ``+ - * / **``,
parentheses, a fixed list of functions); nothing else is admitted, nothing is looked up by
name in any namespace, and every size is bounded before it is built, so reading an answer
takes time and memory proportional to its length.

Two readers share the parser: :func:`arithmetic` (exact rational value, no powers: what
countdown and puzzle24 ask for) and :func:`calculus` (a sympy expression in one variable).
Anything outside the grammar raises :class:`Unreadable`.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from fractions import Fraction
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sympy

# Bounds a real answer never meets: the panels' longest reference answers are 60 characters.
MAX_CHARS = 1000
MAX_DEPTH = 40  # nested parentheses, unary signs and powers together
MAX_DIGITS = 30  # one number literal
MAX_EXPONENT = 100  # |n| in x**n, and n's numerator and denominator when n is a fraction
MAX_POWER_DIGITS = 2000  # the size of a number raised to a number, estimated before it is computed

_TOKEN = re.compile(r"\s*(?:(?P<number>\d+(?:\.\d*)?|\.\d+)|(?P<name>[A-Za-z]+)|(?P<op>\*\*|[-+*/()]))")


class Unreadable(ValueError):
    """The answer is not in the grammar, or is over a bound (the message says which)."""


@dataclass(frozen=True)
class Node:
    """One parsed piece: ``kind`` is number, name, call, neg, or an operator; ``parts`` its operands."""

    kind: str
    text: str = ""
    parts: tuple[Node, ...] = ()


def tokens(text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` pairs; :class:`Unreadable` on a character outside the grammar or over :data:`MAX_CHARS`."""
    if len(text) > MAX_CHARS:
        raise Unreadable(f"longer than {MAX_CHARS} characters")
    found, position, end = [], 0, len(text.rstrip())
    while position < end:
        match = _TOKEN.match(text, position)
        if match is None:
            raise Unreadable(f"unexpected {text[position:position + 10]!r} at {position}")
        kind = match.lastgroup or ""
        if kind == "number" and len(match.group(kind)) > MAX_DIGITS:
            raise Unreadable(f"a number longer than {MAX_DIGITS} digits")
        found.append((kind, match.group(kind)))
        position = match.end()
    return found


def parse(text: str) -> Node:
    """The expression tree of ``text`` (Python's precedence: ``-x**2`` is ``-(x**2)``, ``**`` is right-assoc)."""
    parser = _Parser(tokens(text))
    tree = parser.sum(0)
    if parser.position != len(parser.items):
        raise Unreadable(f"unexpected {parser.items[parser.position][1]!r} after the expression")
    return tree


class _Parser:
    def __init__(self, items: list[tuple[str, str]]) -> None:
        self.items, self.position = items, 0

    def peek(self) -> str:
        return self.items[self.position][1] if self.position < len(self.items) else ""

    def take(self) -> tuple[str, str]:
        if self.position == len(self.items):
            raise Unreadable("the expression ends early")
        self.position += 1
        return self.items[self.position - 1]

    def sum(self, depth: int) -> Node:
        left = self.product(depth)
        while self.peek() in ("+", "-"):
            left = Node(self.take()[1], parts=(left, self.product(depth)))
        return left

    def product(self, depth: int) -> Node:
        left = self.unary(depth)
        while self.peek() in ("*", "/"):
            left = Node(self.take()[1], parts=(left, self.unary(depth)))
        return left

    def unary(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise Unreadable(f"nested deeper than {MAX_DEPTH}")
        if self.peek() in ("+", "-"):
            sign = self.take()[1]
            operand = self.unary(depth + 1)
            return Node("neg", parts=(operand,)) if sign == "-" else operand
        base = self.atom(depth)
        if self.peek() == "**":
            self.take()
            return Node("**", parts=(base, self.unary(depth + 1)))
        return base

    def atom(self, depth: int) -> Node:
        kind, text = self.take()
        if kind == "number":
            return Node("number", text)
        if kind == "name":
            if self.peek() != "(":
                return Node("name", text)
            self.take()
            argument = self.sum(depth + 1)
            self._close()
            return Node("call", text, (argument,))
        if text == "(":
            inner = self.sum(depth + 1)
            self._close()
            return inner
        raise Unreadable(f"unexpected {text!r}")

    def _close(self) -> None:
        if self.take()[1] != ")":
            raise Unreadable("a parenthesis is not closed")


# -- exact arithmetic (countdown, puzzle24) ----------------------------------------------------


def arithmetic(text: str) -> Fraction:
    """The exact value of ``text``: numbers, ``+ - * /``, signs and parentheses only.

    Division by zero is :class:`Unreadable` (sympy would make it ``zoo``, which the
    scorers cannot turn into a number either).
    """
    return _value(parse(text))


# The four operations, for exact fractions and sympy expressions alike.
_ARITHMETIC = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def _value(node: Node) -> Fraction:
    if node.kind == "number":
        return Fraction(node.text)
    if node.kind == "neg":
        return -_value(node.parts[0])
    if node.kind not in _ARITHMETIC:
        raise Unreadable(f"{node.text or node.kind!r} is not arithmetic on numbers")
    left, right = (_value(part) for part in node.parts)
    if node.kind == "/" and right == 0:
        raise Unreadable("division by zero")
    return _ARITHMETIC[node.kind](left, right)


# -- calculus (simple_integration, intermediate_integration) ----------------------------------

# What a name in an answer may mean, and nothing else: no sympy namespace is consulted, so
# Integral, S, N, sympify and attribute access are simply not in the grammar.
FUNCTIONS = ("sin", "cos", "tan", "cot", "sec", "csc", "asin", "acos", "atan", "sinh", "cosh", "tanh",
             "exp", "log", "ln", "sqrt", "Abs", "abs")
CONSTANTS = ("pi", "E")
_FUNCTION_ALIASES = {"ln": "log", "abs": "Abs"}


def calculus(text: str, variable: str) -> sympy.Expr:
    """``text`` as a sympy expression in ``variable``.

    A name is ``variable``, one of :data:`CONSTANTS`, a function of :data:`FUNCTIONS` applied
    to one argument, or any other single letter (a free constant, as the integration constant
    ``C``).  ``a**b`` needs a bounded numeric exponent (|n| ≤ :data:`MAX_EXPONENT`) or a
    symbolic one; a number raised to a number is refused when its result would be over
    :data:`MAX_POWER_DIGITS` digits.
    """
    import sympy

    return _build(sympy, parse(text), variable)


def _build(sp: ModuleType, node: Node, variable: str) -> sympy.Expr:
    if node.kind == "number":
        # sympy reads "1.5" as a Float and "3" as an Integer; the scorers compare them so.
        return sp.Float(node.text) if "." in node.text else sp.Integer(node.text)
    if node.kind == "name":
        return _name(sp, node.text, variable)
    if node.kind == "call":
        if node.text not in FUNCTIONS:
            raise Unreadable(f"unknown function {node.text!r}")
        return getattr(sp, _FUNCTION_ALIASES.get(node.text, node.text))(_build(sp, node.parts[0], variable))
    if node.kind == "neg":
        return -_build(sp, node.parts[0], variable)
    left, right = (_build(sp, part, variable) for part in node.parts)
    if node.kind == "**":
        _check_power(left, right)
        return left**right
    return _ARITHMETIC[node.kind](left, right)


def _name(sp: ModuleType, name: str, variable: str) -> sympy.Expr:
    if name == variable or (len(name) == 1 and name not in ("E", "I")):
        return sp.Symbol(name)
    if name in CONSTANTS:
        return getattr(sp, name)
    raise Unreadable(f"unknown name {name!r}")


def _check_power(base: sympy.Expr, exponent: sympy.Expr) -> None:
    """Refuse the powers that would take unbounded time or memory to build or to simplify."""
    if not exponent.is_Number:
        return
    if exponent.is_Rational:
        if max(abs(exponent.p), exponent.q) > MAX_EXPONENT:
            raise Unreadable(f"an exponent over {MAX_EXPONENT}")
    elif abs(exponent) > MAX_EXPONENT:
        raise Unreadable(f"an exponent over {MAX_EXPONENT}")
    if base.is_Rational and base != 0:
        digits = (math.log10(abs(base.p)) + math.log10(base.q) + 1) * abs(float(exponent))
        if digits > MAX_POWER_DIGITS:
            raise Unreadable(f"a power over {MAX_POWER_DIGITS} digits")
