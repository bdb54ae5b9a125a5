"""Compare argument values with what was expected.

Plain JSON equality by default: `1 == 1.0`, a boolean never equals a number, strings exactly
(no case folding, trimming or Unicode normalisation), objects by key set, arrays in order.
An `ArgumentRule` (`_rules`, with the comparison it makes) loosens it for one argument of one
tool, or of every tool.
"""

from __future__ import annotations

from typing import Any

from judge.checks._rules import ArgumentRule, Rules


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
    """JSON equality: numbers by value (`1 == 1.0`), booleans only with booleans. Iterative:
    values nested as deep as a JSON parser goes compare without recursion."""
    pending = [(actual, expected)]
    while pending:
        a, b = pending.pop()
        ta, tb = type(a), type(b)
        if ta is str and tb is str:
            if a != b:
                return False
        elif ta is bool or tb is bool:
            if ta is not tb or a != b:
                return False
        # (tuples of types written out, not a global: mypyc tests them inline)
        elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if a != b:
                return False
        elif ta is dict and tb is dict:
            if a.keys() != b.keys():
                return False
            pending.extend([(a[k], b[k]) for k in a])
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if len(a) != len(b):
                return False
            pending.extend([(a[i], b[i]) for i in range(len(a))])
        elif a is not None or b is not None:
            return False
    return True
