"""The data a rubric is rendered with, taken from a case and its deterministic result."""

from __future__ import annotations

from typing import Any

from judge._case import Case
from judge._result import CaseResult, FailureKind
from judge._structure import parse_arguments

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
    """Everything a rubric may print. `judged_calls` is filled per request."""
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
            {"call": f.call, "kind": f.kind.value, "path": f.path, "message": f.message}
            for f in checked.failures
            if f.kind in STRUCTURAL
        ],
        "ungrounded": [u.model_dump() for u in checked.ungrounded_values or ()],
    }
