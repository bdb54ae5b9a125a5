"""What the review app shows of one case: the case as the judge saw it (`shown_case`), and
its labels as a write left them (`shown_write`)."""

from __future__ import annotations

from typing import Any

from judge.calibrate._labels import (
    NOTE_KEY,
    Written,
    label_state,
    needs,
    note_of,
    revision,
    shown_labels,
)
from judge.calibrate._review_queue import given_labels, place
from judge.cases._case import Case
from judge.checks._result import CaseResult
from judge.judging._prompt import rubric_variables


def shown_case(
    case: Case,
    row: dict[str, Any],
    line: int,
    checked: CaseResult,
    result: CaseResult | None,
    low_confidence: float,
) -> dict[str, Any]:
    """The conversation, the tools, the calls, the structural findings (`checked`) and
    ungrounded values, the judge's verdicts (`result`), and the labels so far (`row`, the
    sample's `line`)."""
    variables = rubric_variables(case, checked)
    placed = place(case, result, low_confidence)
    return {
        "id": case.id,
        "line": line,
        "group": placed.group,
        "reason": placed.reason,
        "state": label_state(given_labels(case), case),
        "needs": needs(case),
        "labels": shown_labels(row),
        "note": note_of(row),
        "reviewer": (row.get("labels") or {}).get("reviewer"),
        "labelled_at": (row.get("labels") or {}).get("labelled_at"),
        "revision": revision(row),
        "conversation": variables["conversation"],
        "tools": variables["tools"],
        "response_text": variables["response_text"],
        "calls": variables["calls"],
        "findings": variables["findings"],
        "ungrounded": variables["ungrounded"],
        "checks": {
            "passed": checked.passed,
            "tool_selection": checked.tool_selection,
            "schema_valid": checked.schema_valid,
            "argument_values": checked.argument_values,
            "failures": [f.model_dump(mode="json") for f in checked.failures],
        },
        "expected_calls": None
        if case.expected_calls is None
        else [c.model_dump(mode="json", exclude_defaults=True) for c in case.expected_calls],
        "expected_behavior": case.expected_behavior,
        "expected_answer": case.expected_answer,
        "meta": {k: v for k, v in case.meta.items() if k != NOTE_KEY},
        "judge": None
        if result is None or result.judge is None
        else result.judge.model_dump(mode="json", exclude={"raw"}),
    }


def shown_write(case_id: str, written: Written) -> dict[str, Any]:
    """A case's labels, note, revision and state after a write, and whether it replaced
    another reviewer's answer."""
    return {
        "id": case_id,
        "labels": shown_labels(written.row),
        "note": note_of(written.row),
        "revision": revision(written.row),
        "state": label_state(given_labels(written.case), written.case),
        "conflict": None
        if written.conflict is None
        else {
            "message": "another reviewer changed this case since you opened it; your "
            "answer replaced theirs",
            "replaced": written.conflict,
        },
    }
