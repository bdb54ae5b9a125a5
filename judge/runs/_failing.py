"""What went wrong, per candidate: the structural error rates of its calls, and the cases it
failed.

Structural errors need no reference (no `expected_calls`): arguments that are not JSON
(`InvalidJson`), a tool that was not offered (`UnknownName`), arguments that break the tool's
schema (`SchemaMismatch`). Each rate is the share of the candidate's calls with that failure,
with a 95% Wilson interval over calls: what OpenRouter's Auto Exacto ranks providers by.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from judge.cases._calls import first_choice
from judge.runs._intervals import wilson
from judge.runs._records import RunRecord

STRUCTURAL = ("InvalidJson", "UnknownName", "SchemaMismatch")


@dataclass(frozen=True)
class Rate:
    """How many calls had one kind of failure, and their share with its interval."""

    count: int
    value: float
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "value": self.value, "low": self.low, "high": self.high}


@dataclass(frozen=True)
class Structural:
    """A candidate's calls and, per structural failure, the share of them that had it (None
    when it made no call)."""

    calls: int
    rates: dict[str, Rate | None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            **{kind: (rate.to_dict() if rate else None) for kind, rate in self.rates.items()},
        }


@dataclass(frozen=True)
class FailingCase:
    """One failed run of a case: its failures' kinds, in order, and the first one's message."""

    id: str
    run: int
    kinds: list[str]
    message: str
    record: RunRecord = field(repr=False, compare=False)
    """The record itself, for what a report shows of it (calls, failures, state, verdicts)."""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "run": self.run, "kinds": self.kinds, "message": self.message}


def calls_made(record: RunRecord) -> int:
    """The tool calls a graded record made: its reply's (an agent run's: every assistant turn's);
    at least as many as its failures point at (calls read from text have no `tool_calls`)."""
    if record.transcript is not None:
        made = sum(
            len(m.get("tool_calls") or ())
            for m in record.transcript
            if isinstance(m, dict) and m.get("role") == "assistant"
        )
    else:
        calls = first_choice(record.response).get("message", {}) if record.response else {}
        found = calls.get("tool_calls") if isinstance(calls, dict) else None
        made = len(found) if isinstance(found, list) else 0
    pointed = [f.call for f in record.failures if f.call is not None]
    return max(made, max(pointed) + 1 if pointed else 0)


def structural(graded: Sequence[RunRecord]) -> tuple[Structural, dict[str, float]]:
    """The structural rates over `graded` (records with an answer), and each case's share of
    calls with any structural failure (its runs pooled), for paired differences."""
    calls = 0
    counts = dict.fromkeys(STRUCTURAL, 0)
    per_case: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # broken calls, calls
    for record in graded:
        made = calls_made(record)
        calls += made
        broken: set[int] = set()
        for kind in STRUCTURAL:
            at = {f.call for f in record.failures if f.kind == kind and f.call is not None}
            counts[kind] += len(at)
            broken |= at
        per_case[record.case_id][0] += len(broken)
        per_case[record.case_id][1] += made
    rates: dict[str, Rate | None] = {}
    for kind, count in counts.items():
        interval = wilson(count / calls, calls) if calls else None
        rates[kind] = Rate(count, interval.value, interval.low, interval.high) if interval else None
    shares = {case: b / n for case, (b, n) in per_case.items() if n}
    return Structural(calls, rates), shares


def failing_cases(graded: Sequence[RunRecord]) -> list[FailingCase]:
    """Every run that failed, by case id and run."""
    found = []
    for record in sorted(graded, key=lambda r: (r.case_id, r.run)):
        if record.passed is not False:
            continue
        kinds: list[str] = list(dict.fromkeys(str(f.kind) for f in record.failures))
        message = record.failures[0].message if record.failures else ""
        if not kinds and record.judge is not None and record.judge.passed is False:
            kinds, message = ["judge"], "the judge failed it"
        found.append(FailingCase(record.case_id, record.run, kinds, message, record))
    return found
