"""What an agent run can be graded against: a run compares something, or says why not.

An agent run's checks are `judge check`'s (expected behaviour, `expected_calls`,
`assert_tools`, structural failures) plus the final state where a reference exists. A run in
which nothing of that exists, and no judge, would grade nothing: it is refused before any
request. A case with nothing of its own in a run that does compare something is undecided,
with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable

from judge.cases._case import Case
from judge.cases._match import Match
from judge.checks._no_reference import NO_CALL_BEHAVIORS

NOTHING_OF_ITS_OWN = (
    "nothing to compare: the case has no expected_calls, no expected_behavior (no_call / ask) "
    "and no assert_tools, and no judge decided it"
)


def has_reference(case: Case) -> bool:
    """Whether the checks can decide `case`: reference calls, a no-call behaviour, or tool
    assertions."""
    return (
        case.expected_calls is not None
        or case.expected_behavior in NO_CALL_BEHAVIORS
        or case.assert_tools is not None
    )


def nothing_to_compare(cases: Iterable[Case], match: Match | None, judged: bool) -> str | None:
    """Why an agent run of `cases` would grade nothing (None when it compares something)."""
    if judged or (match is not None and match.mode is not None):
        return None
    if any(has_reference(case) for case in cases):
        return None
    return (
        "an agent run with nothing to compare: no case has expected_calls, an "
        "expected_behavior of no_call / ask, or assert_tools, and there is no match mode and "
        "no judge. Give the cases a reference (expected_calls, whose final state --env or "
        "--mcp with --mcp-state also compares), assert_tools, --match MODE, or --judge"
    )
