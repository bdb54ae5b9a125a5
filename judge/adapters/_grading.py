"""What every adapter shares: build a case from a harness's pieces, check it, give the verdict
and describe it."""

from __future__ import annotations

from typing import Any

from judge.checks._check import iter_check
from judge.checks._kinds import FailureKind
from judge.checks._result import CaseResult
from judge.checks._rules import Rules

CHECKS = ("tool_selection", "schema_valid", "argument_values", "tool_assertions")


def check_calls(
    response: Any,
    *,
    tools: Any,
    expected_calls: Any = None,
    messages: Any = None,
    case_id: str = "case",
    rules: Rules | None = None,
    assert_tools: Any = None,
) -> CaseResult:
    """The deterministic result for one response, exactly as `judge check` grades the case;
    a piece that cannot be read becomes an `InvalidCase` failure."""
    data: dict[str, Any] = {
        "id": case_id,
        "messages": messages or [],
        "tools": tools,
        "response": response,
    }
    if expected_calls is not None:
        data["expected_calls"] = expected_calls
    if assert_tools is not None:
        data["assert_tools"] = assert_tools
    return next(iter_check([data], rules=rules))


def verdict(result: CaseResult) -> bool | None:
    """Pass or fail, the same in every adapter: `passed` when there are expected calls; else
    False when something is wrong (a case that cannot be read, a broken call); else
    whether the calls are well formed; None when there is nothing to grade at all."""
    if result.passed is not None:
        return result.passed
    if result.failures:
        return False
    return result.schema_valid


def unreadable(result: CaseResult) -> bool:
    """Whether the case could not be read (so no check ran)."""
    return any(f.kind is FailureKind.INVALID_CASE for f in result.failures)


def describe(result: CaseResult) -> str:
    """A readable account: the verdict, each check, each failure with its call and path."""
    passed = verdict(result)
    if unreadable(result):
        state = "could not be read"
    elif passed is None:
        state = "not gradable (no calls, no expected calls)"
    else:
        state = "passed" if passed else "failed"
        if result.passed is None:
            state += " (no expected calls or tool assertions: well-formedness only)"
    checks = ", ".join(f"{name}={_show(getattr(result, name))}" for name in CHECKS)
    if result.call_scores is not None:
        checks += f", call_f1={result.call_scores.f1:g}"
    lines = [f"case {result.id!r} {state}: {checks}"]
    for failure in result.failures:
        where = "case" if failure.call is None else f"call {failure.call}"
        # A case that cannot be read names its pointer in the message already.
        named = f" at {failure.path}:" in failure.message
        at = f" at {failure.path}" if failure.path and not named else ""
        lines.append(f"  - {where}: {failure.kind.value}{at}: {failure.message}")
    return "\n".join(lines)


def _show(value: bool | None) -> str:
    return "n/a" if value is None else str(value).lower()
