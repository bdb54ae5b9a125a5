"""What every adapter shares: build a case from a harness's pieces, check it, describe it."""

from __future__ import annotations

from typing import Any

import orjson

from judge._check import check_case, invalid_case_result
from judge._errors import CaseError
from judge._loading import parse_case
from judge._result import CaseResult
from judge._values import Rules

CHECKS = ("tool_selection", "schema_valid", "argument_values")


def check_calls(
    response: Any,
    *,
    tools: Any = None,
    expected_calls: Any = None,
    messages: Any = None,
    case_id: str = "case",
    rules: Rules | None = None,
    source: str = "<adapter>",
) -> CaseResult:
    """The deterministic result for one response; a piece that cannot be read becomes an
    `InvalidCase` failure, as in `judge check`."""
    data: dict[str, Any] = {
        "id": case_id,
        "messages": messages or [],
        "tools": tools or [],
        "response": response,
    }
    if expected_calls is not None:
        data["expected_calls"] = expected_calls
    try:
        case = parse_case(data, source=source, line=None)
    except CaseError as exc:
        return invalid_case_result(exc)
    return check_case(case, rules=rules)


def maybe_json(value: Any) -> Any:
    """`value`, decoded when it is JSON text of an array or object (harnesses pass text)."""
    if isinstance(value, str | bytes) and value.strip()[:1] in ("[", "{", b"[", b"{"):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def describe(result: CaseResult) -> str:
    """A readable account: the verdict, each check, each failure with its call and path."""
    if result.passed is not None:
        verdict = "passed" if result.passed else "failed"
    else:
        verdict = "not gradable (no expected calls)"
    checks = ", ".join(f"{name}={_show(getattr(result, name))}" for name in CHECKS)
    lines = [f"case {result.id!r} {verdict}: {checks}"]
    for failure in result.failures:
        where = "case" if failure.call is None else f"call {failure.call}"
        at = f" at {failure.path}" if failure.path else ""
        lines.append(f"  - {where}: {failure.kind.value}{at}: {failure.message}")
    return "\n".join(lines)


def _show(value: bool | None) -> str:
    return "n/a" if value is None else str(value).lower()
