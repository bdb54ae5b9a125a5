"""The judge's verdicts on `$judge` values, taken into the checks' result: each value keeps its
verdict, its `NeedsJudge` failure goes (accepted) or becomes a `WrongValue` (rejected), and the
checks' verdict is what the remaining checks say once no value is left open.

A value the judge did not answer (an error, no usable reply) stays open: the case stays
undecided, never a pass. Who then decides the case is `judge.checks._verdict`'s rule."""

from __future__ import annotations

import json
from typing import Any

from judge.checks._kinds import FailureKind
from judge.checks._result import CaseResult, Failure, JudgedValue
from judge.checks._verdict import OPEN
from judge.judging._replies import ValueVerdict
from judge.judging._sandbox import shorten

_PENDING = FailureKind.NEEDS_JUDGE
_OF_VALUES = frozenset((FailureKind.WRONG_VALUE, FailureKind.MISSING_ARGUMENT))


def with_value_verdicts(checked: CaseResult, verdicts: dict[int, ValueVerdict]) -> CaseResult:
    """`checked` with the judge's verdicts on its `$judge` values (`verdicts`, by index in
    `judge_values`) kept, their failures and the checks' verdict decided by them."""
    if not checked.judge_values:
        return checked
    values = tuple(_answered(v, verdicts.get(i)) for i, v in enumerate(checked.judge_values))
    failures = _failures(checked.failures, values)
    said = [v.verdict for v in values]
    passed, argument_values = checked.passed, checked.argument_values
    if False in said:  # a value the judge rejects is a wrong value, whatever else holds
        passed = argument_values = False
    elif None not in said:  # every value accepted: the other checks decide
        passed = _remaining(checked, failures) if passed is None else passed
        if argument_values is None and _values_right(checked, failures):
            argument_values = True
    return checked.model_copy(
        update={
            "judge_values": values,
            "failures": failures,
            "passed": passed,
            "argument_values": argument_values,
            "needs_judge": checked.needs_judge and passed is None,
        }
    )


def _answered(value: JudgedValue, verdict: ValueVerdict | None) -> JudgedValue:
    if value.verdict is not None or verdict is None:
        return value
    update = {"verdict": verdict.verdict == "yes", "confidence": verdict.confidence}
    return value.model_copy(update=update)


def _failures(
    failures: tuple[Failure, ...], values: tuple[JudgedValue, ...]
) -> tuple[Failure, ...]:
    """The failures with each judged value's `NeedsJudge` gone (accepted) or a `WrongValue`
    in its place (rejected; added where the checks gave the value no failure)."""
    judged: dict[tuple[int | None, str], JudgedValue] = {
        (v.call, v.path): v for v in values if v.verdict is not None
    }
    found: list[Failure] = []
    for failure in failures:
        value = judged.get((failure.call, failure.path)) if failure.kind == _PENDING else None
        if value is None:
            found.append(failure)
        elif value.verdict is False:
            found.append(_rejected(value))
    placed = {(f.call, f.path) for f in found if f.kind == FailureKind.WRONG_VALUE}
    found += [_rejected(v) for at, v in judged.items() if v.verdict is False and at not in placed]
    return tuple(found)


def _rejected(value: JudgedValue) -> Failure:
    """The `WrongValue` failure of a value the judge says is not what its words say."""
    message = f"the judge says {_shown(value.value)} is not: {value.expected}"
    return Failure(call=value.call, kind=FailureKind.WRONG_VALUE, path=value.path, message=message)


def _remaining(checked: CaseResult, failures: tuple[Failure, ...]) -> bool | None:
    """`passed` once every value is accepted: what the other checks say of a case they left
    open only for its values (a failure added since, a final state or a tool assertion that
    fails it; an unreadable reference that leaves it open)."""
    if any(f.kind in OPEN for f in failures):
        return None
    if failures or checked.tool_assertions is False:
        return False
    return True if checked.final_state is None else checked.final_state.equal


def _values_right(checked: CaseResult, failures: tuple[Failure, ...]) -> bool:
    """Whether `argument_values`, left open by the checks for the values, holds now: the
    calls are valid and the right ones, and no other value is wrong or missing."""
    valid = checked.schema_valid is not False and checked.tool_selection is True
    return valid and not any(f.kind in _OF_VALUES for f in failures)


def _shown(value: Any) -> str:
    return shorten(json.dumps(value, ensure_ascii=False, default=str), 200)
