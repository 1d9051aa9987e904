"""A small, bounded arithmetic evaluator for model-written equations.

Model text is data: it is tokenised and parsed here by a recursive-descent parser and
never reaches ``eval``/``exec``/``compile``.  Grammar (whitespace ignored)::

    expression := term (("+" | "-") term)*
    term       := factor (("*" | "/") factor)*
    factor     := ("+" | "-") factor | integer | "(" expression ")"

``×``, ``x``, ``X`` and ``·`` are read as ``*``; ``÷`` as ``/``; ``−`` (U+2212) as ``-``;
every Unicode space (NBSP, thin space, ideographic space, ...) counts as whitespace.
Arithmetic is exact (:class:`fractions.Fraction`).  Anything outside the grammar,
division by zero, input longer than ``MAX_CHARS``, nesting deeper than ``MAX_DEPTH``
or a value beyond ``MAX_MAGNITUDE`` gives ``None``; no input raises, and the work is
linear in the (bounded) input length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

MAX_CHARS = 256
MAX_DEPTH = 32
MAX_LITERAL_DIGITS = 12
MAX_MAGNITUDE = 10**40

_OPERATOR_ALIASES = {"*": "*", "×": "*", "x": "*", "X": "*", "·": "*", "/": "/", "÷": "/", "+": "+", "-": "-", "−": "-"}
_TOKEN = re.compile(r"\s*(?:([0-9]+)|(\S))")


@dataclass(frozen=True)
class Evaluation:
    """A parsed expression: its exact value and its integer literals in reading order."""

    value: Fraction
    numbers: tuple[int, ...]


class _Reject(Exception):
    """Internal signal: the text is not a bounded, well-formed expression."""


def _tokenize(text: str) -> list[str | int]:
    tokens: list[str | int] = []
    position = 0
    stripped_end = len(text.rstrip())
    while position < stripped_end:
        match = _TOKEN.match(text, position)
        if match is None:  # only trailing whitespace can fail to match, and we stop before it
            raise _Reject
        digits, symbol = match.groups()
        if digits is not None:
            if len(digits) > MAX_LITERAL_DIGITS:
                raise _Reject
            tokens.append(int(digits))
        elif symbol in _OPERATOR_ALIASES:
            tokens.append(_OPERATOR_ALIASES[symbol])
        elif symbol in "()":
            tokens.append(symbol)
        else:
            raise _Reject
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[str | int]) -> None:
        self.tokens = tokens
        self.position = 0
        self.numbers: list[int] = []

    def peek(self) -> str | int | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self) -> str | int | None:
        token = self.peek()
        self.position += 1
        return token

    def expression(self, depth: int) -> Fraction:
        value = self.term(depth)
        while self.peek() in ("+", "-"):
            value = _bounded(value + self.term(depth) if self.take() == "+" else value - self.term(depth))
        return value

    def term(self, depth: int) -> Fraction:
        value = self.factor(depth)
        while self.peek() in ("*", "/"):
            operator = self.take()
            right = self.factor(depth)
            if operator == "*":
                value = _bounded(value * right)
            elif right == 0:
                raise _Reject
            else:
                value = _bounded(value / right)
        return value

    def factor(self, depth: int) -> Fraction:
        if depth > MAX_DEPTH:
            raise _Reject
        token = self.take()
        if token == "-":
            return -self.factor(depth + 1)
        if token == "+":
            return self.factor(depth + 1)
        if isinstance(token, int):
            self.numbers.append(token)
            return Fraction(token)
        if token == "(":
            value = self.expression(depth + 1)
            if self.take() != ")":
                raise _Reject
            return value
        raise _Reject


def _bounded(value: Fraction) -> Fraction:
    if abs(value.numerator) > MAX_MAGNITUDE or value.denominator > MAX_MAGNITUDE:
        raise _Reject
    return value


def evaluate(text: object) -> Evaluation | None:
    """The exact value and literals of ``text``, or ``None`` if it is not a bounded expression."""
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return None
    try:
        parser = _Parser(_tokenize(text))
        if not parser.tokens:
            return None
        value = parser.expression(0)
        if parser.position != len(parser.tokens):
            return None
    except _Reject:
        return None
    return Evaluation(value=value, numbers=tuple(parser.numbers))
