"""The case's one verdict, once the judge has spoken: the one rule every path calls (`judge
grade`, `run --judge`, `regrade`, the service, Ray, the Python `grade`).

| the checks | the judge | `passed` | `decided_by` | `judge_dispute` |
|---|---|---|---|---|
| false (a structural or reference failure) | any | false | `checks` | when it passed the case |
| true | any | true | `checks` | when it failed the case |
| null (no reference, `needs_judge`) | pass / fail | its verdict | `judge` | no |
| null | abstained, `judge_error`, skipped | null | null | no |

What code proved is never overturned: a judge that contradicts it is a calibration signal or a
wrong reference, counted as a dispute, never a pass.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from judge.checks._outcome import JudgeOutcome
from judge.checks._result import CaseResult

DecidedBy = Literal["checks", "judge"]


def checks_verdict(result: CaseResult) -> bool | None:
    """What the deterministic checks alone decided of `result` (before any judge)."""
    if result.judge is None or result.decided_by == "checks":
        return result.passed
    return None


class Verdict(NamedTuple):
    """A case's one verdict."""

    passed: bool | None
    decided_by: DecidedBy | None
    judge_dispute: bool
    """The judge's verdict contradicts what the checks decided."""


def decide(checks: bool | None, judge: JudgeOutcome | None) -> Verdict:
    """The one verdict from what the checks decided and the judge's outcome (the table)."""
    judged = judge.passed if judge is not None and judge.status == "ok" else None
    if checks is not None:
        return Verdict(checks, "checks", judged is not None and judged != checks)
    if judged is not None:
        return Verdict(judged, "judge", False)
    return Verdict(None, None, False)


def with_judge(result: CaseResult, outcome: JudgeOutcome) -> CaseResult:
    """`result` with the judge's outcome, and its one verdict decided by `decide`."""
    verdict = decide(checks_verdict(result), outcome)
    return result.model_copy(update={"judge": outcome, **verdict._asdict()})
