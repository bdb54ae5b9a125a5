"""The data a rubric is rendered with, taken from a case and its deterministic result."""

from __future__ import annotations

import json
from typing import Any

from judge.cases._calls import ToolCall
from judge.cases._case import Case
from judge.cases._json import dumps
from judge.checks._evidence import response_evidence
from judge.checks._kinds import FailureKind
from judge.checks._result import CaseResult, Failure
from judge.checks._structure import parse_arguments
from judge.checks._trajectory import response_offset, trajectory_calls
from judge.judging._sandbox import shorten

STRUCTURAL = frozenset(
    (
        FailureKind.INVALID_JSON,
        FailureKind.UNKNOWN_NAME,
        FailureKind.SCHEMA_MISMATCH,
        FailureKind.INVALID_SCHEMA,
    )
)
"""Failures the judge may be told about: facts about the calls, never about expected values
(the judge is reference-free)."""


def rubric_variables(case: Case, checked: CaseResult) -> dict[str, Any]:
    """Everything a rubric may print. `judged_calls` is filled per request; `origins` and
    `injection` are the response's calls' (`call` numbered within the response)."""
    origins, injection = response_evidence(case, checked)
    calls = []
    for index, call in enumerate(case.tool_calls):
        parsed, _ = parse_arguments(call.arguments)
        calls.append(
            {
                "index": index,
                "name": call.name,
                "arguments": parsed if parsed is not None else call.arguments,
            }
        )
    return {
        "conversation": [
            {
                "role": m.get("role", "user"),
                "content": m.get("content"),
                "tool_calls": m.get("tool_calls"),
            }
            for m in case.messages
        ],
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in case.tools
        ],
        "tool_names": [t.name for t in case.tools],
        "response_text": case.response.content if case.response else None,
        "calls": calls,
        "judged_calls": [],
        "findings": [
            {"call": call, "kind": f.kind.value, "path": f.path, "message": f.message}
            for call, f in response_failures(case, checked)
            if f.kind in STRUCTURAL
        ],
        "ungrounded": [u.model_dump() for u in checked.ungrounded_values or ()],
        "origins": [o.model_dump() for o in origins],
        "injection": [i.model_dump() for i in injection],
        "steps": [],
        "expected_answer": case.expected_answer,
        "judged_value": None,
    }


_VALUE_CHARS = 600


def judged_value(case: Case, checked: CaseResult, index: int) -> dict[str, Any]:
    """What the value rubric is asked about one `$judge` value (`judge_values[index]`): the
    call (numbered from 1, as the checks number it) and its tool, the argument's JSON pointer,
    the value as JSON and the matcher's words, each cut to a few hundred characters."""
    value = checked.judge_values[index]
    if checked.trajectory is not None:
        names = [c.name for c in checked.trajectory.calls]
    else:
        names = [c.name for c in case.tool_calls]
    return {
        "call": value.call + 1,
        "name": names[value.call] if 0 <= value.call < len(names) else None,
        "path": value.path,
        "value": shorten(_json(value.value), _VALUE_CHARS),
        "expected": shorten(value.expected, _VALUE_CHARS),
    }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


_RESULT_CHARS = 600


def response_failures(case: Case, checked: CaseResult) -> list[tuple[int | None, Failure]]:
    """The failures with their call numbered within the final response (a trajectory result
    numbers calls along the whole path); failures of earlier turns' calls are left out."""
    offset = response_offset(case, checked.trajectory)
    found: list[tuple[int | None, Failure]] = []
    for failure in checked.failures:
        if failure.call is None:
            found.append((None, failure))
        elif failure.call >= offset:
            found.append((failure.call - offset, failure))
    return found


def trajectory_steps(case: Case) -> list[dict[str, Any]]:
    """The conversation as a timeline for the trajectory rubric: the texts of the turns, and
    every call (numbered as in a trajectory result) with the tool's reply to it."""
    results = {
        m.get("tool_call_id"): m.get("content")
        for m in case.messages
        if m.get("role") == "tool" and m.get("tool_call_id")
    }
    steps: list[dict[str, Any]] = []
    located = trajectory_calls(case)
    by_message: dict[str, list[int]] = {}
    for index, (_, source) in enumerate(located):
        by_message.setdefault(source.rsplit("/tool_calls/", 1)[0], []).append(index)
    for i, message in enumerate(case.messages):
        role = message.get("role", "user")
        content = message.get("content")
        if role in ("user", "assistant", "system") and content:
            text = content if isinstance(content, str) else dumps(content).decode()
            steps.append({"kind": role, "text": text})
        for index in by_message.get(f"/messages/{i}", []):
            steps.append(_step(index, located[index][0], results))
    if case.response is not None and case.response.content:
        steps.append({"kind": "assistant", "text": case.response.content})
    for index in by_message.get("/response", []):
        steps.append(_step(index, located[index][0], results))
    return steps


def _step(index: int, call: ToolCall, results: dict[Any, Any]) -> dict[str, Any]:
    parsed, _ = parse_arguments(call.arguments)
    result = results.get(call.id) if call.id else None
    if isinstance(result, str) and len(result) > _RESULT_CHARS:
        result = result[: _RESULT_CHARS - 3] + "..."
    return {
        "kind": "call",
        "index": index,
        "name": call.name,
        "arguments": parsed if parsed is not None else call.arguments,
        "result": result,
    }
