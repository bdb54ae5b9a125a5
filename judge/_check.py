"""Deterministic grading of a case: structure of every call, selection, argument values."""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterator
from itertools import permutations
from typing import Any

import orjson

from judge._case import Case, ExpectedCall
from judge._errors import CaseError
from judge._loading import fallback_id, iter_cases
from judge._result import CaseResult, CheckResults, Failure, FailureKind
from judge._structure import SchemaCache, parse_arguments, pointer
from judge._values import ArgumentRule, Rules, is_matcher, json_equal, rule_for

Problem = tuple[FailureKind, str, str]  # kind, JSON pointer, message
_MAX_SHOWN = 120
_EXHAUSTIVE = 6  # up to this many same-name calls (720 pairings), try them all


def check(cases: Any, *, rules: Rules | None = None) -> CheckResults:
    """Grade every case of `cases` (a JSONL path, a DataFrame, or an iterable of dicts or
    `Case`s). A malformed case becomes a result with an `InvalidCase` failure.

    `rules` loosens value matching per tool and argument: `{"get_weather": {"city":
    ArgumentRule(case_sensitive=False)}}`; "*" stands for any tool or any argument.
    """
    return CheckResults(iter_check(cases, rules=rules))


def iter_check(cases: Any, *, rules: Rules | None = None) -> Iterator[CaseResult]:
    """Like `check`, one result at a time, so a large file is graded in flat memory."""
    schemas = SchemaCache()
    for item in iter_cases(cases):
        if isinstance(item, CaseError):
            yield invalid_case_result(item)
        else:
            yield check_case(item, rules=rules, schemas=schemas)


def invalid_case_result(error: CaseError) -> CaseResult:
    """The result standing in for a case that could not be read."""
    failure = Failure(
        call=None, kind=FailureKind.INVALID_CASE, path=error.pointer, message=str(error)
    )
    return CaseResult(
        id=error.case_id or fallback_id(error.source, error.line),
        tool_selection=None,
        schema_valid=None,
        argument_values=None,
        passed=None,
        failures=(failure,),
    )


def check_case(
    case: Case, *, rules: Rules | None = None, schemas: SchemaCache | None = None
) -> CaseResult:
    """Grade one case against its tools and, where given, its `expected_calls`."""
    schemas = schemas or SchemaCache()
    calls = case.tool_calls
    tools = {tool.name: tool for tool in case.tools}
    problems: list[tuple[int | None, Problem]] = []
    parsed: list[dict[str, Any] | None] = []
    all_valid = True
    for index, call in enumerate(calls):
        arguments, why = parse_arguments(call.arguments)
        parsed.append(arguments)
        valid = arguments is not None
        if arguments is None:
            problems.append((index, (FailureKind.INVALID_JSON, "", why)))
        tool = tools.get(call.name)
        if tool is None:
            valid = False
            problems.append((index, (FailureKind.UNKNOWN_NAME, "", _unknown(call.name, tools))))
        elif arguments is not None:
            errors, broken = schemas.errors(tool.parameters, arguments)
            if broken is not None:
                problems.append((index, (FailureKind.INVALID_SCHEMA, "", broken)))
            for path, message in errors:
                problems.append((index, (FailureKind.SCHEMA_MISMATCH, path, message)))
            valid = valid and broken is None and not errors
        all_valid = all_valid and valid
    schema_valid = all_valid if calls else None

    expected = case.expected_calls
    if expected is None:
        return _result(case, None, schema_valid, None, None, problems)

    names = [call.name for call in calls]
    pairs, extra_calls, missing = _pair(names, parsed, expected, rules)
    values_ok = True
    for call_index, found in pairs:
        values_ok = values_ok and not found
        problems.extend((call_index, p) for p in found)
    selection = not extra_calls and not missing
    if extra_calls and len(calls) == len(expected):
        for call_index, exp_index in zip(extra_calls, missing, strict=True):
            message = f"called {names[call_index]!r}, expected {expected[exp_index].name!r}"
            problems.append((call_index, (FailureKind.WRONG_TOOL, "", message)))
    else:
        for exp_index in missing:
            message = f"expected a call to {expected[exp_index].name!r}, none made"
            problems.append(
                (None, (FailureKind.MISSING_CALL, f"/expected_calls/{exp_index}", message))
            )
        for call_index in extra_calls:
            message = (
                f"call to {names[call_index]!r} was not expected"
                if expected
                else f"no tool call was expected, got {names[call_index]!r}"
            )
            problems.append((call_index, (FailureKind.UNEXPECTED_CALL, "", message)))

    if not expected:
        return _result(case, selection, schema_valid, None, selection, problems)
    argument_values = schema_valid is True and selection and values_ok
    return _result(case, selection, schema_valid, argument_values, argument_values, problems)


def _result(
    case: Case,
    selection: bool | None,
    schema_valid: bool | None,
    argument_values: bool | None,
    passed: bool | None,
    problems: list[tuple[int | None, Problem]],
) -> CaseResult:
    problems.sort(key=lambda p: (p[0] is None, p[0] or 0))
    failures = tuple(
        Failure(call=call, kind=kind, path=path, message=message)
        for call, (kind, path, message) in problems
    )
    return CaseResult(
        id=case.id,
        tool_selection=selection,
        schema_valid=schema_valid,
        argument_values=argument_values,
        passed=passed,
        failures=failures,
    )


def _pair(
    names: list[str],
    parsed: list[dict[str, Any] | None],
    expected: tuple[ExpectedCall, ...],
    rules: Rules | None,
) -> tuple[list[tuple[int, list[Problem]]], list[int], list[int]]:
    """Match calls to expected calls of the same name with an optimal assignment (fewest
    argument faults), never greedily. Returns the pairs with their problems, and the calls
    and expected calls left unpaired."""
    if len(names) == 1 == len(expected) and names[0] == expected[0].name:
        faults = _faults(parsed[0], expected[0], rules)
        return [(0, [_describe(fault) for fault in faults or ()])], [], []
    calls_by_name: dict[str, list[int]] = defaultdict(list)
    for index, name in enumerate(names):
        calls_by_name[name].append(index)
    expected_by_name: dict[str, list[int]] = defaultdict(list)
    for index, exp in enumerate(expected):
        expected_by_name[exp.name].append(index)

    pairs: list[tuple[int, list[Problem]]] = []
    extra: list[int] = []
    missing: list[int] = []
    for name in dict.fromkeys([*calls_by_name, *expected_by_name]):
        call_ids, exp_ids = calls_by_name.get(name, []), expected_by_name.get(name, [])
        if not call_ids or not exp_ids:
            extra.extend(call_ids)
            missing.extend(exp_ids)
            continue
        table = [[_faults(parsed[c], expected[e], rules) for e in exp_ids] for c in call_ids]
        costs = [
            [_cost(f, expected[e]) for f, e in zip(row, exp_ids, strict=True)] for row in table
        ]
        chosen = _assign(costs)
        for a, b in chosen:
            pairs.append((call_ids[a], [_describe(fault) for fault in table[a][b] or ()]))
        paired_calls = {a for a, _ in chosen}
        paired_expected = {b for _, b in chosen}
        extra.extend(c for a, c in enumerate(call_ids) if a not in paired_calls)
        missing.extend(e for b, e in enumerate(exp_ids) if b not in paired_expected)
    extra.sort()
    missing.sort()
    return pairs, extra, missing


def _cost(faults: list[Fault] | None, expected: ExpectedCall) -> int:
    # Unparseable arguments cost more than any parseable call could.
    return len(expected.arguments) + 1 if faults is None else len(faults)


def _assign(cost: list[list[int]]) -> list[tuple[int, int]]:
    """Row-column pairs of least total cost (as many pairs as the smaller side)."""
    rows, cols = len(cost), len(cost[0])
    if rows <= _EXHAUSTIVE and cols <= _EXHAUSTIVE:
        # Trying every pairing of a few calls is exact and spares scipy's start-up (~0.3 s).
        if rows <= cols:
            options = [
                tuple(zip(range(rows), p, strict=True)) for p in permutations(range(cols), rows)
            ]
        else:
            options = [
                tuple(zip(p, range(cols), strict=True)) for p in permutations(range(rows), cols)
            ]
        return list(min(options, key=lambda pairs: sum(cost[r][c] for r, c in pairs)))
    from scipy.optimize import linear_sum_assignment

    picked_rows, picked_cols = linear_sum_assignment(cost)
    return [(int(r), int(c)) for r, c in zip(picked_rows, picked_cols, strict=True)]


# A fault is found cheaply for every candidate pairing; its message is written only for the
# pairing that is kept: (kind, argument, the value given, the acceptable values).
Fault = tuple[FailureKind, str, Any, list[Any] | None]


def _faults(
    arguments: dict[str, Any] | None, expected: ExpectedCall, rules: Rules | None
) -> list[Fault] | None:
    """What is wrong with `arguments` for `expected`; None when they could not be parsed."""
    if arguments is None:
        return None
    found: list[Fault] = []
    for key, want in expected.arguments.items():
        rule = rule_for(rules, expected.name, key) if rules else None
        if rule is not None and rule.ignore:
            continue
        if is_matcher(want):
            options: list[Any] | None = want.get("$any")
            optional = bool(want.get("$optional", False))
        else:
            options, optional = [want], False
        if key not in arguments:
            if not optional:
                found.append((FailureKind.MISSING_ARGUMENT, key, None, options))
            continue
        got = arguments[key]
        if options is not None and not any(_matches(got, o, rule) for o in options):
            found.append((FailureKind.WRONG_VALUE, key, got, options))
    return found


def _describe(fault: Fault) -> Problem:
    kind, key, got, options = fault
    path = pointer((key,))
    if kind is FailureKind.MISSING_ARGUMENT:
        return kind, path, f"expected argument {key!r} is missing"
    if not options:
        return kind, path, f"argument {key!r} must be left out, got {_show(got)}"
    want = _show(options[0]) if len(options) == 1 else f"one of {_show(options)}"
    return kind, path, f"argument {key!r} is {_show(got)}, expected {want}"


def _matches(got: Any, want: Any, rule: ArgumentRule | None) -> bool:
    return json_equal(got, want) if rule is None else rule.matches(got, want)


def _unknown(name: str, tools: dict[str, Any]) -> str:
    message = f"{name!r} is not one of the case's tools"
    if name.strip() in tools:
        return message + f" (note the whitespace; the tool is {name.strip()!r})"
    close = difflib.get_close_matches(name, list(tools), n=1)
    if close:
        return message + f" (did you mean {close[0]!r}?)"
    return message + f" ({', '.join(sorted(tools)) or 'no tools were offered'})"


def _show(value: Any) -> str:
    text = orjson.dumps(value, default=repr).decode()
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."
