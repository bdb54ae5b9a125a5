"""Compare argument values with what was expected.

Plain JSON equality by default: `1 == 1.0`, a boolean never equals a number, strings exactly
(no case folding, trimming or Unicode normalisation), objects by key set, arrays in order.
An `ArgumentRule` loosens this for one argument of one tool (or of every tool).
"""

from __future__ import annotations

from typing import Any

from judge.checks._rules import ArgumentRule as ArgumentRule  # (its old home: re-exported)
from judge.checks._rules import Rules as Rules

_NUMBER = (int, float)


def rule_for(rules: Rules | None, tool: str, argument: str) -> ArgumentRule | None:
    """The most specific rule for an argument, or None for plain JSON equality."""
    if not rules:
        return None
    for tool_key in (tool, "*"):
        by_arg = rules.get(tool_key)
        if by_arg:
            rule = by_arg.get(argument) or by_arg.get("*")
            if rule is not None:
                return rule
    return None


def json_equal(actual: Any, expected: Any) -> bool:
    """JSON equality: numbers by value (`1 == 1.0`), booleans only with booleans."""
    ta, tb = type(actual), type(expected)
    if ta is str and tb is str:
        return bool(actual == expected)
    if ta is bool or tb is bool:
        return ta is tb and actual == expected
    if isinstance(actual, _NUMBER) and isinstance(expected, _NUMBER):
        return bool(actual == expected)
    if ta is dict and tb is dict:
        return actual.keys() == expected.keys() and all(
            json_equal(actual[k], expected[k]) for k in actual
        )
    if isinstance(actual, list | tuple) and isinstance(expected, list | tuple):
        return len(actual) == len(expected) and all(
            json_equal(x, y) for x, y in zip(actual, expected, strict=True)
        )
    return actual is None and expected is None
