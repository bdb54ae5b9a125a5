"""A pytest helper: `assert_tool_calls(response, tools=..., expected=...)`.

    from judge.adapters.pytest import assert_tool_calls

    def test_refund_agent():
        response = agent("Refund order ord_7281")          # any shape `judge check` reads
        expected = [{"name": "issue_refund", "arguments": {"order_id": "ord_7281"}}]
        assert_tool_calls(response, tools=TOOLS, expected=expected)

On failure the message lists every check and every failure, with the call and JSON pointer.
"""

from __future__ import annotations

from typing import Any

from judge.adapters._grading import check_calls, describe, verdict
from judge.checks._result import CaseResult
from judge.checks._rules import Rules


def assert_tool_calls(
    response: Any,
    *,
    tools: Any,
    expected: Any = None,
    messages: Any = None,
    rules: Rules | None = None,
    case_id: str = "assert_tool_calls",
    assert_tools: Any = None,
) -> CaseResult:
    """Fail unless the response's calls are well formed for `tools` (the tools the model was
    offered; `[]`: none) and match `expected` (`[]`: no call at all), and every assertion of
    `assert_tools` holds (`{"called": [...], "avoided": [...], "counts": {...}, "max_calls":
    N}`). Without either, only well-formedness is asserted, and a response with no calls fails
    rather than passing vacuously. Returns the result."""
    __tracebackhide__ = True
    result = check_calls(
        response,
        tools=tools,
        expected_calls=expected,
        messages=messages,
        case_id=case_id,
        rules=rules,
        assert_tools=assert_tools,
    )
    passed = verdict(result)
    if passed is True:
        return result
    if passed is None:
        raise AssertionError(
            f"case {case_id!r}: no tool calls and no `expected` to grade them against; "
            "pass expected=[] to assert that no tool is called"
        )
    raise AssertionError("tool calls do not match:\n" + describe(result))
