"""How one call's arguments are compared with its reference call: the argument modes
(`exact`, `ignore`, `subset`, `superset`), a list of paths, or the user's predicate."""

from __future__ import annotations

from typing import Any

from judge.cases._form import ArgsCompare, ArgsMode
from judge.cases._json import dumps, pointer
from judge.cases._lean import no_dollar_key
from judge.cases._lean_form import Expected
from judge.checks._kinds import FailureKind
from judge.checks._matchers import ABSENT, ValueDefaults, hint, value_fault
from judge.checks._rules import (
    ArgumentRule,
    Rules,
    not_a_verdict,
    predicate_name,
    predicate_verdict,
)
from judge.checks._values import json_equal, rule_for

Problem = tuple[FailureKind, str, str]  # kind, JSON pointer, message
MAX_SHOWN = 120

# A fault is found cheaply for every candidate pairing; its message is written only for the
# pairing that is kept: (kind, path to the argument, the value given, the acceptable values
# (a list, or None; `Any`, as a matcher-like value deep in the arguments may hold anything),
# or a ready message).
Fault = tuple[FailureKind, tuple[str, ...], Any, Any, str | None]
_ABSENT = ABSENT
_SCALARS = frozenset((str, int, float, bool, type(None)))
# (an enum's member is looked up through its class at each use: read once here)
_WRONG, _MISSING = FailureKind.WRONG_VALUE, FailureKind.MISSING_ARGUMENT


def faults(
    arguments: dict[str, Any] | None,
    expected: Expected,
    compare: ArgsMode | list[str] | ArgsCompare,
    rules: Rules | None,
    values: ValueDefaults | None = None,
) -> list[Fault] | None:
    """What is wrong with `arguments` for `expected` under an argument mode (and the value
    defaults); None when they could not be parsed."""
    if arguments is None:
        return None
    if isinstance(compare, list):
        return _pathfaults(arguments, expected, compare, rules, values)
    if not isinstance(compare, str):  # the user's predicate
        return _judged_by(compare, arguments, expected)
    if compare == "ignore":
        return []
    found: list[Fault] = []
    subset = compare == "subset"
    absent = _ABSENT  # (a global is looked up at each use)
    for key, want in expected.arguments.items():
        got = arguments.get(key, absent)
        if got is absent:
            if subset:
                continue
        elif rules is None and values is None:  # the common outcomes, found cheaply
            if type(want) is dict:
                options = want.get("$any")
                if type(options) is list and got in options and _typed_in(got, options):
                    continue
            elif want == got and type(want) is type(got) and type(got) in _SCALARS:
                continue
        fault = _value_fault(expected.name, (key,), got, want, rules, values)
        if fault is not None:
            found.append(fault)
    if compare in ("exact", "subset"):
        for key in [key for key in arguments if key not in expected.arguments]:  # in order
            rule = rule_for(rules, expected.name, key) if rules else None
            if rule is None or not rule.ignore:
                found.append((_WRONG, (key,), arguments[key], [], None))
    return found


def _value_fault(
    tool: str,
    path: tuple[str, ...],
    got: Any,
    want: Any,
    rules: Rules | None,
    values: ValueDefaults | None,
) -> Fault | None:
    """The fault of one value (`_ABSENT` when left out) against an expected one: a literal, or
    one that is or holds matchers (`_matchers`, which compares under the value defaults)."""
    rule = rule_for(rules, tool, path[0]) if rules else None
    if rule is not None and rule.ignore:
        return None
    if values is None:  # literals, and `$any` of literals: compared without the general way
        kind = type(want)
        if kind in _SCALARS:  # the plain case
            if got is _ABSENT:
                return _MISSING, path, None, [want], None
            return None if _matches(got, want, rule) else (_WRONG, path, got, [want], None)
        if kind is dict and _any_only(want):
            return _any_fault(path, got, want, rule)
        if (kind is dict or kind is list) and no_dollar_key(want):
            if got is _ABSENT:
                return _MISSING, path, None, [want], None
            return None if _matches(got, want, rule) else (_WRONG, path, got, [want], None)
    return value_fault(path, got, want, values, rule)


def _any_only(want: dict[str, Any]) -> bool:
    """Whether `want` is `{"$any": [...]}`, with `$optional` or not."""
    if type(want.get("$any")) is not list:
        return False
    return len(want) == 1 or (len(want) == 2 and "$optional" in want)


def _any_fault(
    path: tuple[str, ...], got: Any, want: dict[str, Any], rule: ArgumentRule | None
) -> Fault | None:
    """`$any`'s fault, its literal options compared here (one that holds a matcher, and a
    mismatch of an optional value, which says it could be left out, by `value_fault`)."""
    options: list[Any] = want["$any"]
    optional = want.get("$optional") is True
    if got is _ABSENT:
        return None if optional else (_MISSING, path, None, options, None)
    literal = True
    for option in options:
        if type(option) in _SCALARS or no_dollar_key(option):
            if _matches(got, option, rule):
                return None
        else:
            literal = False
    if literal and not optional:
        return _WRONG, path, got, options, None
    return value_fault(path, got, want, None, rule)


def _typed_in(got: Any, options: list[Any]) -> bool:
    """Whether a scalar equal to `got` and of its type is among `options` (`in` found an equal
    one, but `1 == True == 1.0`). False leaves the question to `_value_fault`."""
    kind = type(got)
    if kind not in _SCALARS:
        return False
    if type(options[options.index(got)]) is kind:  # the first equal option: mostly the one
        return True
    return any(type(o) is kind and o == got for o in options)


def _pathfaults(
    arguments: dict[str, Any],
    expected: Expected,
    paths: list[str],
    rules: Rules | None,
    values: ValueDefaults | None,
) -> list[Fault]:
    found: list[Fault] = []
    for path in paths:
        parts = _parts(path)
        want = _lookup(expected.arguments, parts)
        got = _lookup(arguments, parts)
        if want is _ABSENT:
            if got is not _ABSENT:
                found.append((FailureKind.WRONG_VALUE, parts, got, [], None))
            continue
        fault = _value_fault(expected.name, parts, got, want, rules, values)
        if fault is not None:
            found.append(fault)
    return found


def _judged_by(compare: ArgsCompare, arguments: dict[str, Any], expected: Expected) -> list[Fault]:
    """The user's predicate's verdict: a failure when it rejects the arguments, raises, or
    answers anything but True or False (never a pass by truthiness)."""
    try:
        said = compare(arguments, dict(expected.arguments))
    except Exception as exc:
        message = f"{predicate_name(compare)} raised {type(exc).__name__}: {exc}"
    else:
        verdict = predicate_verdict(said)
        if verdict is True:
            return []
        if verdict is None:
            message = not_a_verdict(compare, said)
        else:
            message = f"the arguments were rejected by {predicate_name(compare)}"
    return [(FailureKind.WRONG_VALUE, (), arguments, None, message)]


def _parts(path: str) -> tuple[str, ...]:
    """An argument path: a name (`order_id`) or a JSON pointer (`/address/city`)."""
    if not path.startswith("/"):
        return (path,)
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/"))


def _lookup(data: Any, parts: tuple[str, ...]) -> Any:
    for part in parts:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return _ABSENT
    return data


def describe(fault: Fault) -> Problem:
    kind, parts, got, options, note = fault
    path = pointer(parts)
    shown = "/".join(parts)
    if note is not None:
        return kind, path, note
    if kind is FailureKind.MISSING_ARGUMENT:
        return kind, path, f"expected argument {shown!r} is missing"
    if not options:
        return kind, path, f"argument {shown!r} must be left out, got {show(got)}"
    if len(options) == 1:
        told = f"argument {shown!r} is {show(got)}, expected {show(options[0])}"
        return kind, path, told + hint(got, options[0])
    return kind, path, f"argument {shown!r} is {show(got)}, expected one of {show(options)}"


def _matches(got: Any, want: Any, rule: ArgumentRule | None) -> bool:
    if rule is not None:
        return rule.matches(got, want)
    return got == want if type(got) is str and type(want) is str else json_equal(got, want)


def show(value: Any) -> str:
    text = dumps(value, default=repr).decode()
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."
