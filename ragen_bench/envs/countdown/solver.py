"""Exhaustive search for Countdown: every value reachable from a list of numbers.

A value counts as reachable when some expression over + - * / (exact rational
arithmetic) uses every number exactly once.  The search is a dynamic programme over
subsets of the numbers: the values of a subset are all combinations ``a op b`` of a
value of one part and a value of the other, over every split of the subset in two.
Each value remembers how it was first made, so one expression per value can be
written out on demand.  Tables are cached per (ordered) number tuple, so generating an
instance and then solving it searches once.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from ragen_bench.envs.countdown import arith

# The tables grow ~30x per extra number (5 numbers: ~27,000 values in ~0.3 s; 6: ~770,000
# values in ~14 s), so searches stop at 5 numbers.
MAX_NUMBERS = 5

# Exact values: ints where integral (fast), Fractions otherwise; equal values hash equal,
# so a dict keyed by them never holds 2 and Fraction(2) apart.
Value = int | Fraction
# How a value was made: None for a given number, else (op, left mask, left value, right mask, right value).
Recipe = tuple[str, int, Value, int, Value] | None
Table = dict[int, dict[Value, Recipe]]


def _divide(a: Value, b: Value) -> Value:
    """Exact ``a / b``, staying a plain int when it divides evenly (ints are much faster)."""
    if isinstance(a, int) and isinstance(b, int):
        quotient, remainder = divmod(a, b)
        return quotient if remainder == 0 else Fraction(a, b)
    return Fraction(a) / b


def _combine_into(found: dict[Value, Recipe], left: int, a: Value, right: int, b: Value) -> None:
    found.setdefault(a + b, ("+", left, a, right, b))
    found.setdefault(a * b, ("*", left, a, right, b))
    found.setdefault(a - b, ("-", left, a, right, b))
    found.setdefault(b - a, ("-", right, b, left, a))
    if b:
        found.setdefault(_divide(a, b), ("/", left, a, right, b))
    if a:
        found.setdefault(_divide(b, a), ("/", right, b, left, a))


@lru_cache(maxsize=256)
def _table(numbers: tuple[int, ...]) -> Table:
    if not 1 <= len(numbers) <= MAX_NUMBERS:
        raise ValueError(f"Countdown search takes 1 to {MAX_NUMBERS} numbers, got {len(numbers)}")
    table: Table = {1 << i: {int(n): None} for i, n in enumerate(numbers)}
    for mask in sorted(range(1, 1 << len(numbers)), key=lambda m: (bin(m).count("1"), m)):
        if mask in table:
            continue
        found: dict[Value, Recipe] = {}
        part = (mask - 1) & mask
        while part:
            rest = mask ^ part
            if part < rest:  # each unordered split once; _combine_into tries both orders
                for a in table[part]:
                    for b in table[rest]:
                        _combine_into(found, part, a, rest, b)
            part = (part - 1) & mask
        table[mask] = found
    return table


def _write(table: Table, mask: int, value: Value, outermost: bool = True) -> str:
    recipe = table[mask][value]
    if recipe is None:
        return str(value.numerator)
    op, left_mask, left_value, right_mask, right_value = recipe
    text = f"{_write(table, left_mask, left_value, False)} {op} {_write(table, right_mask, right_value, False)}"
    return text if outermost else f"({text})"


def reachable_values(numbers: tuple[int, ...] | list[int]) -> frozenset[Value]:
    """Every value reachable using each number exactly once."""
    numbers = tuple(numbers)
    return frozenset(_table(numbers)[(1 << len(numbers)) - 1])


def solve(numbers: tuple[int, ...] | list[int], target: int) -> str | None:
    """An equation using every number once that equals ``target``, or ``None``.

    Deterministic: the first recipe found in a fixed search order.
    """
    numbers = tuple(numbers)
    table = _table(numbers)
    full = (1 << len(numbers)) - 1
    if target not in table[full]:
        return None
    solution = _write(table, full, target)
    # The reference answer must itself pass the env's checker.
    checked = arith.evaluate(solution)
    assert checked is not None and checked.value == target and sorted(checked.numbers) == sorted(numbers)
    return solution
