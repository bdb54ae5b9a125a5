"""Compare argument values with what was expected.

Plain JSON equality by default: `1 == 1.0`, a boolean never equals a number, strings exactly
(no case folding, trimming or Unicode normalisation), objects by key set, arrays in order.
An `ArgumentRule` loosens this for one argument of one tool (or of every tool).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

_WHITESPACE = re.compile(r"\s+")
_NUMBER = (int, float)


@dataclass(frozen=True, slots=True)
class ArgumentRule:
    """How to compare one argument's value with the expected one.

    The string options apply to every string inside the value, nested ones too.
    """

    ignore: bool = False
    """Never compare this argument (it may also be left out)."""
    case_sensitive: bool = True
    """False: compare strings case-insensitively (`str.casefold`)."""
    whitespace: Literal["exact", "strip", "collapse"] = "exact"
    """`strip`: ignore leading and trailing whitespace; `collapse`: also treat runs as one space."""
    unicode_form: Literal["NFC", "NFD", "NFKC", "NFKD"] | None = None
    """Normalise strings to this Unicode form before comparing."""
    abs_tol: float = 0.0
    """Numbers within this absolute difference are equal."""
    rel_tol: float = 0.0
    """Numbers within this relative difference are equal."""
    int_float_equal: bool = True
    """False: an integer never equals a float (`3` vs `3.0`)."""
    compare: Callable[[Any, Any], bool] | None = None
    """A custom predicate `compare(actual, expected)`; replaces every other option."""

    def matches(self, actual: Any, expected: Any) -> bool:
        """Whether `actual` is acceptable for `expected` under this rule."""
        if self.compare is not None:
            return bool(self.compare(actual, expected))
        return _equal(actual, expected, self)


# Rules by tool name, then by argument name; "*" stands for any tool or any argument.
Rules = Mapping[str, Mapping[str, ArgumentRule]]


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
    return _equal(actual, expected, None)


def _equal(a: Any, b: Any, rule: ArgumentRule | None) -> bool:
    ta, tb = type(a), type(b)
    if ta is str and tb is str:
        return a == b if rule is None else _norm(a, rule) == _norm(b, rule)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if isinstance(a, _NUMBER) and isinstance(b, _NUMBER):
        if rule is None:
            return bool(a == b)
        if not rule.int_float_equal and ta is not tb:
            return False
        if rule.abs_tol or rule.rel_tol:
            return math.isclose(a, b, rel_tol=rule.rel_tol, abs_tol=rule.abs_tol)
        return bool(a == b)
    if ta is dict and tb is dict:
        return a.keys() == b.keys() and all(_equal(a[k], b[k], rule) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y, rule) for x, y in zip(a, b, strict=True))
    return a is None and b is None


def _norm(text: str, rule: ArgumentRule) -> str:
    if rule.unicode_form is not None:
        text = unicodedata.normalize(rule.unicode_form, text)
    if rule.whitespace == "strip":
        text = text.strip()
    elif rule.whitespace == "collapse":
        text = _WHITESPACE.sub(" ", text).strip()
    if not rule.case_sensitive:
        text = text.casefold()
    return text
