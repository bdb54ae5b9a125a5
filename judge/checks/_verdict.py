"""The case's one verdict, once the judge has spoken: the one rule every path calls (`judge
grade`, `run --judge`, `regrade`, the service, Ray, the Python `grade`).

| the checks | the judge | `passed` | `decided_by` | `judge_dispute` |
|---|---|---|---|---|
| false (a structural or reference failure) | any | false | `checks` | when it passed the case |
| true | any | true | `checks` | when it failed the case |
| true or false resting on answered `$judge` values | any | the checks' | `judge` | as above |
| null, a `$judge` value not answered (an error) | any | null | null | no |
| null (no reference, `needs_judge`) | pass / fail | its verdict | `judge` | no |
| null | abstained, `judge_error`, skipped | null | null | no |

What code proved is never overturned: a judge that contradicts it is a calibration signal or a
wrong reference, counted as a dispute, never a pass. The judge's verdicts on `$judge` values
(`judge_values`, one yes/no question each) are part of what the checks decide: their verdict
rests on them when it is true with any judged value, or false only through values the judge
rejected (`WrongValue`); then the judge decided it. The case's own verdict (its rubrics) never
stands in for a value's: the case stays undecided while one is open.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from judge.checks._kinds import FailureKind
from judge.checks._outcome import JudgeOutcome
from judge.checks._result import CaseResult

DecidedBy = Literal["checks", "judge"]
Values = Literal["decided", "open"]
"""What the judge's verdicts on `$judge` values are to the checks' verdict: it rests on them
(`decided`), or one is not answered and leaves it open (`open`)."""
OPEN = frozenset((FailureKind.NEEDS_JUDGE, FailureKind.INVALID_CASE))
"""Failures that leave a case undecided rather than failed."""


def checks_verdict(result: CaseResult) -> bool | None:
    """What the deterministic checks decided of `result` (before any judge's case verdict),
    with the judge's verdicts on its `$judge` values."""
    if result.judge is None or result.decided_by == "checks" or values_of(result) == "decided":
        return result.passed
    return None


def values_of(result: CaseResult) -> Values | None:
    """Whether the checks' verdict of `result` rests on `$judge` values the judge answered, or
    one not answered leaves it open (None: no judged value bears on it)."""
    said = [v.verdict for v in result.judge_values]
    if None in said:
        return "open"
    if not said or result.passed is None:
        return None
    if result.passed:
        return "decided"
    rejected = {(v.call, v.path) for v in result.judge_values if v.verdict is False}
    only = all(
        f.kind in OPEN or (f.kind == FailureKind.WRONG_VALUE and (f.call, f.path) in rejected)
        for f in result.failures
    )
    return "decided" if rejected and only else None


class Verdict(NamedTuple):
    """A case's one verdict."""

    passed: bool | None
    decided_by: DecidedBy | None
    judge_dispute: bool
    """The judge's verdict contradicts what the checks decided."""


def decide(
    checks: bool | None, judge: JudgeOutcome | None, values: Values | None = None
) -> Verdict:
    """The one verdict from what the checks decided, the judge's outcome and what the judge's
    verdicts on `$judge` values are to the checks' (the table)."""
    judged = judge.passed if judge is not None and judge.status == "ok" else None
    if checks is not None:
        by: DecidedBy = "judge" if values == "decided" else "checks"
        return Verdict(checks, by, judged is not None and judged != checks)
    if judged is not None and values != "open":
        return Verdict(judged, "judge", False)
    return Verdict(None, None, False)


def with_judge(result: CaseResult, outcome: JudgeOutcome) -> CaseResult:
    """`result` with the judge's outcome, and its one verdict decided by `decide`."""
    verdict = decide(checks_verdict(result), outcome, values_of(result))
    return result.model_copy(update={"judge": outcome, **verdict._asdict()})
