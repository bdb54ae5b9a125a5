"""The comparison core of the checks, free of the models: a call's structure, the pairing of
calls with reference calls, and the verdicts they give. `check_case` builds on it;
`check_plain` is `judge check`'s hot path, which reads lean cases and writes JSON data."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from judge.cases._form import ArgsCompare, ArgsMode, MatchMode
from judge.cases._lean import LeanCase, LeanTool
from judge.cases._lean_form import Called, Expected
from judge.checks._arguments import Fault, Problem, describe, faults
from judge.checks._budget import TIMED_FROM
from judge.checks._credit import call_scores, leaf_count, leaves_got, one_credit
from judge.checks._injection import evidence
from judge.checks._kinds import FailureKind
from judge.checks._matchers import ValueDefaults
from judge.checks._no_reference import (
    NO_CALL_BEHAVIORS,
    broken,
    reply_without_call,
    unexpected_call,
)
from judge.checks._origins import Conversation, value_origins
from judge.checks._pairing import least_cost_pairs, out_of_order, rounded
from judge.checks._path_faults import missing_call, wrong_order
from judge.checks._rules import Rules
from judge.checks._structure import SchemaCache, parse_arguments
from judge.checks._summary import Tally

if TYPE_CHECKING:
    from judge.cases._case import Tool

_UNPARSEABLE = 1_000  # the cost of unparseable arguments: more than any parseable call's faults
_KIND_NAMES = {kind: kind.value for kind in FailureKind}
_EXTRA_ALLOWED = ("superset", "in_order")  # modes where calls outside the reference are fine
_ORDERED = ("strict", "in_order")  # modes where paired calls must keep the reference's order


class Settings(Protocol):
    """How calls must match the reference: `Match`, or `DEFAULT` (`Match()`'s settings)."""

    @property
    def mode(self) -> MatchMode | None: ...
    @property
    def ignore_tools(self) -> tuple[str, ...]: ...
    @property
    def overrides(self) -> Mapping[str, Any]: ...
    @property
    def arguments(self) -> ArgsMode: ...
    @property
    def values(self) -> ValueDefaults | None: ...
    def args_for(self, tool: str) -> ArgsMode | list[str] | ArgsCompare: ...


@dataclass(frozen=True)
class _Default:
    mode: MatchMode | None = None
    ignore_tools: tuple[str, ...] = ()
    overrides: Mapping[str, Any] = field(default_factory=dict)
    arguments: ArgsMode = "superset"
    values: ValueDefaults | None = None

    def args_for(self, tool: str) -> ArgsMode:
        return self.arguments


DEFAULT: Settings = _Default()
"""`Match()`'s settings (every expected argument, extras left to the schema), without the
model (a test holds them equal)."""


def check_plain(case: LeanCase, schemas: SchemaCache, tally: Tally | None = None) -> dict[str, Any]:
    """What `check_case(case).to_json_dict()` gives for the same case read as a `Case`, with
    no match settings, rules or environment, built without the result models: the hot path
    of `judge check`."""
    calls = case.tool_calls
    # (the fields themselves: `LeanCall`'s `name` and `arguments` are Python code, read once)
    functions = [call.function for call in calls]
    names = [function.name for function in functions]
    texts = [function.arguments or "" for function in functions]
    parsed, problems, schema_valid = read_calls(names, texts, case.tools, schemas)
    expected = case.expected_calls
    behavior = case.expected_behavior
    if expected is None and behavior in NO_CALL_BEHAVIORS:
        expected = []  # no call is the one thing code can check of such a case
    selection = argument_values = passed = scores = None
    if expected is not None and len(calls) == 1 == len(expected) and names[0] == expected[0].name:
        # `compare` and `verdicts` with the default settings, for the common case cut short
        said = [
            (0, describe(fault)) for fault in faults(parsed[0], expected[0], "superset", None) or ()
        ]
        problems.extend(said)
        selection = True
        argument_values = passed = schema_valid is not False and not said
        right, leaves = one_credit(names[0], parsed[0], expected[0].arguments, said, None, None)
        scores = call_scores(int(not said and parsed[0] is not None), 1, 1, right, leaves)
    elif expected is not None and not expected:
        # no call expected: what `compare` and `verdicts` say, cut short
        problems.extend(unexpected_call(i, name, False) for i, name in enumerate(names))
        selection = passed = not calls
    elif expected is not None:
        how = DEFAULT
        compared = compare(names, parsed, expected, how, None)
        problems.extend(compared.problems)
        selection, argument_values, passed = verdicts(compared, bool(expected), how, schema_valid)
        scores = call_scores(*compared.scored)
    elif broken(problems):
        passed = False
    data: dict[str, Any] = {
        "id": case.id,
        "tool_selection": selection,
        "schema_valid": schema_valid,
        "argument_values": argument_values,
        "passed": passed,
        "tool_assertions": None,
        "call_scores": scores,
        "failures": [],
    }
    needs_judge = False
    if passed and not calls and behavior in NO_CALL_BEHAVIORS:
        text = case.reply_text  # (None: not run yet)
        passed, empty = reply_without_call(behavior, text)
        data["passed"] = passed
        if empty is not None:
            problems.append((None, empty))
        elif passed is None and text is not None:
            needs_judge = data["needs_judge"] = True
    failures, kinds = [], []
    for call, (kind, path, message) in in_call_order(problems):
        kinds.append(_KIND_NAMES[kind])
        failures.append({"call": call, "kind": kinds[-1], "path": path, "message": message})
    data["failures"] = failures
    _evidence(data, case, names, parsed)
    if tally is not None:  # (counted from what built the result: none of it read back)
        f1 = scores["f1"] if scores else None
        injected = bool(data.get("injection"))
        tally.count_parts(
            selection, schema_valid, argument_values, passed, kinds, f1, needs_judge, injected
        )
    return data


def _evidence(
    data: dict[str, Any], case: LeanCase, names: list[str], parsed: list[dict[str, Any] | None]
) -> None:
    """The calls' value origins and injection evidence, written into the result (or why
    they are undecided)."""
    if not names:
        data["value_origins"], data["injection"] = [], []
        return
    before = len(case.messages)
    graded = [(names[i], parsed[i], before) for i in range(len(names))]
    tools = case.tools
    conversation = Conversation(case.messages)
    schema_of = lambda name: _place(tools.get(name))  # noqa: E731
    if not conversation.tool and conversation.size() <= TIMED_FROM:  # the common case, compiled
        data["value_origins"] = value_origins(conversation, graded, schema_of)
        data["injection"] = []
        return
    found = evidence(conversation, graded, schema_of)
    if found.undecided is not None:
        data["evidence_undecided"] = found.undecided
    else:
        data["value_origins"], data["injection"] = found.origins, found.injection


def _place(tool: LeanTool | None) -> tuple[int, Any] | None:
    return None if tool is None else (tool.index, tool.parameters)


def verdicts(
    compared: Compared, any_expected: bool, how: Settings, schema_valid: bool | None
) -> tuple[bool, bool | None, bool | None]:
    """`tool_selection`, `argument_values` and `passed` of a case with expected calls."""
    selection = compared.selection
    in_order = not compared.out_of_order
    structure_ok = schema_valid is not False
    if not any_expected:
        return selection, None, selection and in_order
    if how.arguments == "ignore" and not how.overrides:
        return selection, None, selection and in_order and structure_ok
    argument_values = structure_ok and selection and compared.values_ok
    # (null where only the judge can say of a value: a `$judge` matcher; out of order fails)
    return selection, argument_values, argument_values if in_order else False


def _settled(found: list[Problem]) -> bool | None:
    """Whether a call's values are right, given its problems: false with any but those left
    to the judge (`NeedsJudge`), null with those alone."""
    for problem in found:
        if problem[0] is not FailureKind.NEEDS_JUDGE:
            return False
    return None


def in_call_order(
    problems: list[tuple[int | None, Problem]],
) -> list[tuple[int | None, Problem]]:
    """Failures of the first call first, those of no call last (stable otherwise)."""
    if len(problems) > 1:
        problems.sort(key=lambda p: (p[0] is None, p[0] or 0))
    return problems


def structure(
    calls: Sequence[Called], tools: Mapping[str, Tool | LeanTool], schemas: SchemaCache
) -> tuple[list[dict[str, Any] | None], list[tuple[int | None, Problem]], bool | None]:
    """Parse every call's arguments and validate them against its tool's schema (`tools` by
    name)."""
    names = [call.name for call in calls]
    return read_calls(names, [call.arguments for call in calls], tools, schemas)


def read_calls(
    names: list[str],
    texts: list[str],
    tools: Mapping[str, Tool | LeanTool],
    schemas: SchemaCache,
) -> tuple[list[dict[str, Any] | None], list[tuple[int | None, Problem]], bool | None]:
    """`structure` of the calls given as their names and their arguments' texts."""
    problems: list[tuple[int | None, Problem]] = []
    parsed: list[dict[str, Any] | None] = []
    all_valid = True
    for index, name in enumerate(names):
        arguments, why = parse_arguments(texts[index])
        parsed.append(arguments)
        valid = arguments is not None
        if arguments is None:
            problems.append((index, (FailureKind.INVALID_JSON, "", why)))
        tool = tools.get(name)
        if tool is None:
            valid = False
            problems.append((index, (FailureKind.UNKNOWN_NAME, "", _unknown(name, tools))))
        elif arguments is not None:
            errors, unusable = schemas.errors(tool, arguments)
            if unusable is not None:
                problems.append((index, (FailureKind.INVALID_SCHEMA, "", unusable)))
            for path, message in errors:
                problems.append((index, (FailureKind.SCHEMA_MISMATCH, path, message)))
            valid = valid and unusable is None and not errors
        all_valid = all_valid and valid
    return parsed, problems, (all_valid if names else None)


class Compared:
    """What pairing calls with reference calls found. (A plain class: a compiled dataclass's
    `__init__` is Python code, run for every case with several calls.)"""

    __slots__ = (
        "pairs", "missing", "extra", "out_of_order", "ignored", "selection", "values_ok",
        "problems", "scored",
    )  # fmt: skip

    def __init__(
        self,
        pairs: list[tuple[int, int]],
        missing: list[int],
        extra: list[int],
        out_of_order: list[int],
        ignored: list[int],
        selection: bool,
        values_ok: bool | None,
        problems: list[tuple[int | None, Problem]],
        scored: tuple[int, int, int, int, int],
    ) -> None:
        self.pairs = pairs
        self.missing = missing
        self.extra = extra
        self.out_of_order = out_of_order
        self.ignored = ignored
        self.selection = selection
        self.values_ok = values_ok
        self.problems = problems
        self.scored = scored
        """Calls matched (name and every expected argument), calls and expected calls counted
        (ignored tools left out), the expected argument leaves of the paired calls got right,
        and those leaves counted: what `call_scores` is computed from."""


def compare(
    names: list[str],
    parsed: list[dict[str, Any] | None],
    expected: Sequence[Expected],
    how: Settings,
    rules: Rules | None,
    groups: Sequence[int] | None = None,
) -> Compared:
    """Pair calls with reference calls and say what the match mode makes of the rest.
    `groups` (by call: its assistant message) frees a message's parallel calls from the
    reference's order among themselves (`strict`, `in_order`)."""
    one = len(names) == 1 == len(expected) and names[0] == expected[0].name
    if one and names[0] not in how.ignore_tools:  # the common case: one call, to the tool expected
        wrong = faults(parsed[0], expected[0], how.args_for(names[0]), rules, how.values)
        said: list[tuple[int | None, Problem]] = [(0, describe(f)) for f in wrong or ()]
        right = int(not said and parsed[0] is not None)
        settled = True if not said else _settled([p for _, p in said])
        args = expected[0].arguments
        got, leaves = one_credit(names[0], parsed[0], args, said, how.values, rules)
        scored = (right, 1, 1, got, leaves)
        return Compared([(0, 0)], [], [], [], [], True, settled, said, scored)
    skip = set(how.ignore_tools)
    if skip:
        call_ids = [i for i, name in enumerate(names) if name not in skip]
        exp_ids = [i for i, exp in enumerate(expected) if exp.name not in skip]
    else:
        call_ids, exp_ids = list(range(len(names))), list(range(len(expected)))
    pairs, unpaired_calls, unpaired_expected = _pair(
        names, parsed, expected, call_ids, exp_ids, how, rules
    )
    mode = how.mode
    # (`expected_calls: []` allows no call, whatever the mode)
    extra = unpaired_calls if mode not in _EXTRA_ALLOWED or not expected else []
    missing = unpaired_expected if mode != "subset" else []
    problems: list[tuple[int | None, Problem]] = []
    values_ok: bool | None = True
    right = leaves = leaves_right = 0
    for call_index, exp_index, found in pairs:
        args = expected[exp_index].arguments
        count = leaf_count(args)
        leaves += count
        leaves_right += (
            count if not found else
            leaves_got(names[call_index], parsed[call_index], args, count,
                       [p[1] for p in found], how.values, rules)
        )  # fmt: skip
        if found:  # (false with any fault, else null where the judge must say)
            values_ok = False if values_ok is False else _settled(found)
        right += not found and parsed[call_index] is not None
        problems.extend((call_index, p) for p in found)
    if extra and missing and len(call_ids) == len(exp_ids):
        for call_index, exp_index in zip(extra, missing, strict=True):
            message = f"called {names[call_index]!r}, expected {expected[exp_index].name!r}"
            problems.append((call_index, (FailureKind.WRONG_TOOL, "", message)))
    else:
        if missing:
            paired_with = {c: e for c, e, _ in pairs}
            for e in missing:
                problems.append((None, missing_call(e, expected, names, call_ids, paired_with)))
        problems.extend(unexpected_call(i, names[i], bool(expected)) for i in extra)
    matched = [(c, e) for c, e, _ in pairs]
    late = out_of_order(matched, groups) if mode in _ORDERED else []
    if late:
        problems.extend(wrong_order(late, names, expected, exp_ids, dict(matched)))
    return Compared(
        pairs=matched,
        missing=missing,
        extra=extra,
        out_of_order=late,
        ignored=[i for i, name in enumerate(names) if name in skip],
        selection=not extra and not missing,
        values_ok=values_ok,
        problems=problems,
        scored=(right, len(call_ids), len(exp_ids), leaves_right, leaves),
    )


def _pair(
    names: list[str],
    parsed: list[dict[str, Any] | None],
    expected: Sequence[Expected],
    call_ids: list[int],
    exp_ids: list[int],
    how: Settings,
    rules: Rules | None,
) -> tuple[list[tuple[int, int, list[Problem]]], list[int], list[int]]:
    """Match calls to expected calls of the same name with an optimal assignment (fewest
    argument faults, then closest in order), never greedily. Returns the pairs with their
    problems, and the calls and expected calls left unpaired."""
    calls_by_name: dict[str, list[int]] = {}
    for index in call_ids:
        calls_by_name.setdefault(names[index], []).append(index)
    expected_by_name: dict[str, list[int]] = {}
    for index in exp_ids:
        expected_by_name.setdefault(expected[index].name, []).append(index)

    pairs: list[tuple[int, int, list[Problem]]] = []
    extra: list[int] = []
    missing = [
        e for name, ids in expected_by_name.items() if name not in calls_by_name for e in ids
    ]
    for name, mine in calls_by_name.items():
        theirs = expected_by_name.get(name)
        if theirs is None:
            extra.extend(mine)
            continue
        compare, values = how.args_for(name), how.values
        if len(mine) == 1 == len(theirs):  # the common case: one call, one reference call
            found = faults(parsed[mine[0]], expected[theirs[0]], compare, rules, values)
            pairs.append((mine[0], theirs[0], [describe(fault) for fault in found or ()]))
            continue
        # Relative places in the trajectory and in the reference, in hundredths apart: ties
        # in faults go to the calls nearest their reference call's place.
        at = [c / max(len(names) - 1, 1) for c in mine]
        want = [e / max(len(expected) - 1, 1) for e in theirs]
        distance = [[rounded(100 * abs(place - w)) for w in want] for place in at]
        diagonal: list[list[Fault] | None] = []
        if len(mine) == len(theirs) and not any(distance[a][a] for a in range(len(mine))):
            # Each call at its reference call's place: when none has a fault, pairing them in
            # order costs nothing, so it is the least-cost pairing (and the first one tried).
            diagonal = [
                faults(parsed[c], expected[e], compare, rules, values)
                for c, e in zip(mine, theirs, strict=True)
            ]
            if all(found == [] for found in diagonal):
                pairs.extend((c, e, []) for c, e in zip(mine, theirs, strict=True))
                continue
        table = [
            [
                diagonal[a]
                if diagonal and a == b
                else faults(parsed[c], expected[e], compare, rules, values)
                for b, e in enumerate(theirs)
            ]
            for a, c in enumerate(mine)
        ]
        scale = 100 * min(len(mine), len(theirs)) + 1
        costs = [
            [
                (_UNPARSEABLE if f is None else len(f)) * scale + apart
                for f, apart in zip(row, distances, strict=True)
            ]
            for row, distances in zip(table, distance, strict=True)
        ]
        chosen = least_cost_pairs(costs)
        for a, b in chosen:
            found = table[a][b]
            pairs.append((mine[a], theirs[b], [describe(fault) for fault in found or ()]))
        paired_calls = {a for a, _ in chosen}
        paired_expected = {b for _, b in chosen}
        extra.extend(c for a, c in enumerate(mine) if a not in paired_calls)
        missing.extend(e for b, e in enumerate(theirs) if b not in paired_expected)
    if len(pairs) > 1:
        pairs.sort(key=lambda p: p[0])
    extra.sort()
    missing.sort()
    return pairs, extra, missing


def _unknown(name: str, tools: Mapping[str, Any]) -> str:
    message = f"{name!r} is not one of the case's tools"
    if name.strip() in tools:
        return message + f" (note the whitespace; the tool is {name.strip()!r})"
    close = difflib.get_close_matches(name, list(tools), n=1)
    if close:
        return message + f" (did you mean {close[0]!r}?)"
    return message + f" ({', '.join(sorted(tools)) or 'no tools were offered'})"
