"""Agent runs as cases (`judge transcripts`): each run's whole conversation (the case's
prompt, then every turn: user, assistant, calls, results) with its last assistant reply as
the response, so that `judge check`, `judge grade`, `judge review`, labels and `judge estimate`
work on it unchanged. The case's own expectations, tools and scenario are kept; the run's
outcome is in `meta.run`."""

from __future__ import annotations

from typing import Any

from judge.cases._case import Case
from judge.runs._agent import prompt_of
from judge.runs._records import RunRecord

ID_SEPARATOR = "::"


def transcript_id(record: RunRecord) -> str:
    """A run's case id: its case's, model's and run's, so every run of a file has its own."""
    return ID_SEPARATOR.join((record.case_id, record.model, str(record.run)))


def as_case(record: RunRecord, case: Case) -> dict[str, Any] | None:
    """The run as a case (JSON data), or None for a run with nothing to read (a failed
    request, a single request without a transcript) or whose simulated user broke its
    scenario (`user_error`: not the agent's conversation to grade)."""
    if record.error is not None or record.transcript is None or record.user_error is not None:
        return None
    transcript = list(record.transcript)
    last = max((i for i, m in enumerate(transcript) if m.get("role") == "assistant"),
               default=None)  # fmt: skip
    messages = [*prompt_of(case), *(transcript if last is None else transcript[:last])]
    data = case.model_dump(mode="json", exclude_none=True, exclude={"response", "labels"})
    data |= {"id": transcript_id(record), "messages": messages}
    if last is not None:
        data["response"] = transcript[last]
    data["meta"] = {**case.meta, "run": _outcome(record)}
    return data


def _outcome(record: RunRecord) -> dict[str, Any]:
    found: dict[str, Any] = {
        "case_id": record.case_id,
        "model": record.model,
        "run": record.run,
        "stop": record.stop,
        "passed": record.passed,
        "final_state": record.final_state,
    }
    if record.user is not None:
        found |= {
            "ended_by": record.ended_by,
            "end_reason": record.end_reason,
            "user_closing": record.user.get("closing"),
            "user_error": record.user_error,
        }
    return found
