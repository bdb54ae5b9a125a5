"""How one call's arguments are compared with its reference call: the argument modes
(`exact`, `ignore`, `subset`, `superset`), a list of paths, or the user's predicate."""

from __future__ import annotations

from typing import Any

from judge.cases._calls import pointer
from judge.cases._case import ExpectedCall, is_matcher
from judge.cases._json import dumps
from judge.cases._match import ArgsCompare, ArgsMode
from judge.checks._result import FailureKind
from judge.checks._values import ArgumentRule, Rules, json_equal, rule_for

Problem = tuple[FailureKind, str, str]  # kind, JSON pointer, message
MAX_SHOWN = 120

# A fault is found cheaply for every candidate pairing; its message is written only for the
# pairing that is kept: (kind, path to the argument, the value given, the acceptable values,
# or a ready message).
Fault = tuple[FailureKind, tuple[str, ...], Any, list[Any] | None, str | None]
_ABSENT = object()


def faults(
    arguments: dict[str, Any] | None,
    expected: ExpectedCall,
    compare: ArgsMode | list[str] | ArgsCompare,
    rules: Rules | None,
) -> list[Fault] | None:
    """What is wrong with `arguments` for `expected` under an argument mode; None when they
    could not be parsed."""
    if arguments is None:
        return None
    if compare == "ignore":
        return []
    if callable(compare):
        return _judged_by(compare, arguments, expected)
    if isinstance(compare, list):
        return _pathfaults(arguments, expected, compare, rules)
    found: list[Fault] = []
    for key, want in expected.arguments.items():
        if key not in arguments and compare == "subset":
            continue
        fault = _value_fault(expected.name, (key,), arguments.get(key, _ABSENT), want, rules)
        if fault is not None:
            found.append(fault)
    if compare in ("exact", "subset"):
        for key in arguments.keys() - expected.arguments.keys():
            rule = rule_for(rules, expected.name, key) if rules else None
            if rule is None or not rule.ignore:
                found.append((FailureKind.WRONG_VALUE, (key,), arguments[key], [], None))
    return found


def _value_fault(
    tool: str, path: tuple[str, ...], got: Any, want: Any, rules: Rules | None
) -> Fault | None:
    """The fault of one value (`_ABSENT` when left out) against an expected one or a matcher."""
    rule = rule_for(rules, tool, path[0]) if rules else None
    if rule is not None and rule.ignore:
        return None
    if is_matcher(want):
        options: list[Any] | None = want.get("$any")
        optional = bool(want.get("$optional", False))
    else:
        options, optional = [want], False
    if got is _ABSENT:
        return None if optional else (FailureKind.MISSING_ARGUMENT, path, None, options, None)
    if options is not None and not any(_matches(got, o, rule) for o in options):
        return FailureKind.WRONG_VALUE, path, got, options, None
    return None


def _pathfaults(
    arguments: dict[str, Any], expected: ExpectedCall, paths: list[str], rules: Rules | None
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
        fault = _value_fault(expected.name, parts, got, want, rules)
        if fault is not None:
            found.append(fault)
    return found


def _judged_by(
    compare: ArgsCompare, arguments: dict[str, Any], expected: ExpectedCall
) -> list[Fault]:
    name = getattr(compare, "__qualname__", type(compare).__name__)
    try:
        if compare(arguments, dict(expected.arguments)):
            return []
        message = f"the arguments were rejected by {name}"
    except Exception as exc:
        message = f"{name} raised {type(exc).__name__}: {exc}"
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
    want = show(options[0]) if len(options) == 1 else f"one of {show(options)}"
    return kind, path, f"argument {shown!r} is {show(got)}, expected {want}"


def _matches(got: Any, want: Any, rule: ArgumentRule | None) -> bool:
    return json_equal(got, want) if rule is None else rule.matches(got, want)


def show(value: Any) -> str:
    text = dumps(value, default=repr).decode()
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."
