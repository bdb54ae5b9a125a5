"""`ArgumentRule`: how one argument's value is compared with the expected one.

Outside the compiled core (`judge/_core.py`), which reads it as it reads any object: a frozen
dataclass compiled by mypyc can be neither pickled, copied nor subclassed, and users do all
three with their rules (`--jobs` and Ray send them to other processes). The comparison it
loosens is here too; plain JSON equality, the hot path, is the core's `json_equal`.
"""

from __future__ import annotations

import math
import re
import sys
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from judge.cases._form import USER_MODULE

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
    """A custom predicate `compare(actual, expected)`; replaces every other option. It
    returns True or False: anything else is a `TypeError` (`"no"` is no verdict)."""

    def matches(self, actual: Any, expected: Any) -> bool:
        """Whether `actual` is acceptable for `expected` under this rule."""
        if self.compare is not None:
            said = self.compare(actual, expected)
            verdict = predicate_verdict(said)
            if verdict is None:
                raise TypeError(not_a_verdict(self.compare, said))
            return verdict
        return _equal(actual, expected, self)


def predicate_verdict(said: Any) -> bool | None:
    """What a user's predicate answered: True or False (NumPy's too, as `np.isclose` gives
    them), else None: a predicate that returns `"no"` or `[]` must not pass or fail a value
    by its truthiness."""
    if said is True or said is False:
        return said
    kind = type(said)
    if kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_"):
        return bool(said)
    return None


def predicate_name(predicate: Any) -> str:
    """`module:function`, as `--override` names a predicate (the file's path for one loaded
    from `path/to/file.py`)."""
    name = getattr(predicate, "__qualname__", None) or type(predicate).__qualname__
    module = getattr(predicate, "__module__", None)
    if not isinstance(module, str):
        return str(name)
    if module.startswith(USER_MODULE):
        module = getattr(sys.modules.get(module), "__file__", None) or module
    return f"{module}:{name}"


def not_a_verdict(predicate: Any, said: Any) -> str:
    """Why what `predicate` returned is no verdict."""
    shown = repr(said)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return (
        f"{predicate_name(predicate)} returned {shown} ({type(said).__name__}), not True or "
        "False: a predicate must return a bool"
    )


# Rules by tool name, then by argument name; "*" stands for any tool or any argument.
Rules = Mapping[str, Mapping[str, ArgumentRule]]


def _equal(actual: Any, expected: Any, rule: ArgumentRule) -> bool:
    """`json_equal` loosened by the rule's options (plain JSON equality, without them, is the
    compiled core's `json_equal`); iterative, as it is."""
    pending = [(actual, expected)]
    while pending:
        a, b = pending.pop()
        ta, tb = type(a), type(b)
        if ta is str and tb is str:
            same = _norm(a, rule) == _norm(b, rule)
        elif ta is bool or tb is bool:
            same = ta is tb and a == b
        elif isinstance(a, _NUMBER) and isinstance(b, _NUMBER):
            if not rule.int_float_equal and ta is not tb:
                same = False
            elif rule.abs_tol or rule.rel_tol:
                same = math.isclose(a, b, rel_tol=rule.rel_tol, abs_tol=rule.abs_tol)
            else:
                same = bool(a == b)
        elif ta is dict and tb is dict:
            same = a.keys() == b.keys()
            pending.extend([(a[k], b[k]) for k in a] if same else ())
        elif isinstance(a, list | tuple) and isinstance(b, list | tuple):
            same = len(a) == len(b)
            pending.extend(zip(a, b, strict=True) if same else ())
        else:
            same = a is None and b is None
        if not same:
            return False
    return True


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
