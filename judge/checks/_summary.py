"""Summaries of a run: counts per outcome and per failure kind, as a table or as JSON."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import IO, TYPE_CHECKING, Any

from judge.checks._judge_summary import JudgeSummary, every
from judge.checks._kinds import FailureKind

if TYPE_CHECKING:
    from judge.checks._result import CaseResult

_CHECKS = ("tool_selection", "schema_valid", "argument_values", "tool_assertions")


@dataclass
class Summary:
    """Counts accumulated one result at a time, so a run of any size summarises in flat memory."""

    cases: int = 0
    passed: int = 0
    failed: int = 0
    not_gradable: int = 0
    """Cases with `passed` null: nothing to grade them against, only the judge can decide
    (`needs_judge`), or unreadable."""
    invalid_cases: int = 0
    """Cases that could not be read (an `InvalidCase` failure, nothing else decided): failed,
    for the pass rate."""
    needs_judge: int = 0
    """Of the not gradable cases, those only the judge can decide (`needs_judge`)."""
    unknown_fields: int = 0
    """Cases holding a key the format does not know (each reported as a warning)."""
    duplicate_ids: int = 0
    """Cases whose id an earlier case of the run already had."""
    injection: int = 0
    """Cases with injection evidence: a value or action of a call that only instructions in
    a tool result gave (evidence, not a failure)."""
    judge_decided: int = 0
    """Of the passed and failed cases, those the judge decided (the checks decided the rest:
    `decided_by`)."""
    judge_disputes: int = 0
    """Cases whose judge verdict contradicts what the checks decided (the checks' stands)."""
    failure_kinds: Counter[str] = field(default_factory=Counter)
    checks: dict[str, Counter[str]] = field(
        default_factory=lambda: {name: Counter() for name in _CHECKS}
    )
    f1_total: float = 0.0
    f1_cases: int = 0
    """Results with `call_scores`, and the sum of their F1."""
    verdicts: JudgeSummary | None = None
    """Judge verdict counts, once a result carries them."""

    def add(self, result: CaseResult) -> None:
        tally = Tally()
        tally.count(result)
        self.add_tally(tally)
        if result.judge is not None:
            if self.verdicts is None:
                self.verdicts = JudgeSummary()
            self.verdicts.add(result.judge)

    def add_verdict(self, judge: dict[str, Any]) -> None:
        """Count a judge outcome given as JSON data (a result line's `judge`)."""
        from judge.checks._outcome import JudgeOutcome

        if self.verdicts is None:
            self.verdicts = JudgeSummary()
        self.verdicts.add(JudgeOutcome.model_validate(judge))

    def add_tally(self, tally: Tally) -> None:
        """Count the results a `Tally` holds."""
        checks = self.checks
        self.injection += tally.injected
        self.f1_total += tally.f1_total
        self.f1_cases += tally.f1_cases
        self.judge_disputes += tally.disputes
        self.judge_decided += tally.judge_decided
        for outcome, n in tally.outcomes.items():
            selection, schema, values, held, passed, invalid, needs_judge = outcome
            self.cases += n
            if passed is None:
                self.not_gradable += n
            elif passed:
                self.passed += n
            else:
                self.failed += n
            self.invalid_cases += n if invalid else 0
            self.needs_judge += n if needs_judge and passed is None else 0
            for name, value in zip(_CHECKS, (selection, schema, values, held), strict=True):
                checks[name][_OUTCOMES[value]] += n
        self.failure_kinds.update(tally.kinds)

    def merge(self, other: Summary) -> None:
        """Add the counts of another summary (of other cases: a worker's share of a run)."""
        _merge(self, other)

    @property
    def pass_rate(self) -> float | None:
        """Passed over gradable cases, a case that could not be read counting as failed; None
        when there is no such case."""
        graded = self.passed + self.failed + self.invalid_cases
        return self.passed / graded if graded else None

    @property
    def decided_by(self) -> dict[str, int]:
        """Cases by who decided `passed` (derived: a null `passed` is `none`)."""
        return {
            "checks": self.passed + self.failed - self.judge_decided,
            "judge": self.judge_decided,
            "none": self.not_gradable,
        }

    @property
    def mean_f1(self) -> float | None:
        """The mean `call_scores.f1` of the results that have one (partial credit)."""
        return self.f1_total / self.f1_cases if self.f1_cases else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "passed": self.passed,
            "failed": self.failed,
            "not_gradable": self.not_gradable,
            "invalid_cases": self.invalid_cases,
            "needs_judge": self.needs_judge,
            "unknown_fields": self.unknown_fields,
            "duplicate_ids": self.duplicate_ids,
            "injection": self.injection,
            "pass_rate": self.pass_rate,
            "decided_by": self.decided_by,
            "judge_disputes": self.judge_disputes,
            "mean_f1": self.mean_f1,
            "failure_kinds": every(self.failure_kinds, _KINDS),
            "checks": {name: every(counts, _OUTCOME_NAMES) for name, counts in self.checks.items()},
            **({"judge": self.verdicts.to_dict()} if self.verdicts is not None else {}),
        }

    def print_table(self, stream: IO[str]) -> None:
        from rich.console import Console
        from rich.table import Table

        console = Console(file=stream, highlight=False)
        overview = Table(title="summary", show_header=False, title_justify="left")
        overview.add_column(justify="left")
        overview.add_column(justify="right")
        rate = self.pass_rate
        for label, value in (
            ("cases", self.cases),
            ("passed", self.passed),
            ("failed", self.failed),
            ("not gradable", self.not_gradable),
            ("  of which need the judge", self.needs_judge),
            ("invalid cases (count as failed)", self.invalid_cases),
            ("cases with unknown fields", self.unknown_fields),
            ("duplicate ids", self.duplicate_ids),
            ("cases with injection evidence", self.injection),
            ("pass rate", "n/a" if rate is None else f"{rate:.1%}"),
            ("  decided by the checks", self.decided_by["checks"]),
            ("  decided by the judge", self.judge_decided),
            ("judge disputes (the checks' verdict stands)", self.judge_disputes),
            ("mean call F1", "n/a" if self.mean_f1 is None else f"{self.mean_f1:.3f}"),
        ):
            overview.add_row(label, str(value))
        console.print(overview)
        checks = Table(show_header=True)
        checks.add_column("check")
        for outcome in ("true", "false", "null"):
            checks.add_column(outcome, justify="right")
        for name, counts in self.checks.items():
            checks.add_row(name, *(str(counts[o]) for o in ("true", "false", "null")))
        console.print(checks)
        if self.failure_kinds:
            kinds = Table(show_header=True)
            kinds.add_column("failure kind")
            kinds.add_column("count", justify="right")
            for kind, count in self.failure_kinds.most_common():
                kinds.add_row(kind, str(count))
            console.print(kinds)
        if self.verdicts is not None:
            self.verdicts.print_tables(console)


def summarize(results: Iterable[CaseResult | dict[str, Any] | str | bytes]) -> Summary:
    """The summary `judge check` (or `judge grade`) prints for these results: `CaseResult`s,
    result lines read back as JSON data, or the lines themselves (`open("results.jsonl")`);
    `.to_dict()` gives the JSON summary: the one pass rate, cases by who decided them, the
    judge's disputes and, for graded results, the judge's verdict counts. Ids that repeat are
    counted in `duplicate_ids`."""
    from judge.cases._json import loads

    summary = Summary()
    tally = Tally()
    ids: set[str] = set()
    for result in results:
        if isinstance(result, str | bytes):
            if not result.strip():
                continue
            result = loads(result)
        if isinstance(result, dict):
            case_id = result["id"]
            tally.add(result)
            if result.get("judge") is not None:
                summary.add_verdict(result["judge"])
        else:
            case_id = result.id
            summary.add(result)
        summary.duplicate_ids += case_id in ids
        ids.add(case_id)
    summary.add_tally(tally)
    return summary


def _merge(into: Any, other: Any) -> None:
    """Add `other`'s counts to `into`, field by field (numbers, counters, dicts of counters,
    nested summaries)."""
    for name in (f.name for f in fields(into)):
        mine, theirs = getattr(into, name), getattr(other, name)
        if theirs is None:
            continue
        if isinstance(theirs, Counter):
            mine.update(theirs)
        elif isinstance(theirs, dict):
            for key, counts in theirs.items():
                mine.setdefault(key, Counter()).update(counts)
        elif isinstance(theirs, int | float):
            setattr(into, name, mine + theirs)
        elif mine is None:
            setattr(into, name, theirs)
        else:
            _merge(mine, theirs)


_OUTCOMES = {True: "true", False: "false", None: "null"}
_OUTCOME_NAMES = ("true", "false", "null")
_KINDS = tuple(kind.value for kind in FailureKind)
Outcome = tuple[bool | None, bool | None, bool | None, bool | None, bool | None, bool, bool]
"""A result's `tool_selection`, `schema_valid`, `argument_values`, `tool_assertions`,
`passed`, whether a failure is `InvalidCase`, and `needs_judge`."""


class Tally:
    """Results counted cheaply, one at a time (a chunk's), to add to a `Summary` at once."""

    __slots__ = (
        "outcomes",
        "kinds",
        "f1_total",
        "f1_cases",
        "injected",
        "judge_decided",
        "disputes",
    )

    def __init__(self) -> None:
        # (plain dicts: a `Counter`'s items are set through Python code, four times slower)
        self.outcomes: dict[Outcome, int] = {}
        self.kinds: dict[str, int] = {}
        self.f1_total = 0.0
        self.f1_cases = 0
        self.injected = 0
        self.judge_decided = 0
        self.disputes = 0

    def add(self, result: dict[str, Any]) -> None:
        """Count a result given as JSON data (`CaseResult.to_json_dict()`)."""
        kinds = [failure["kind"] for failure in result["failures"]]
        scores = result.get("call_scores")
        if result.get("injection"):
            self.injected += 1
        passed = result["passed"]
        if "judge" in result:
            self._judged(result.get("decided_by") == "judge", bool(result.get("judge_dispute")))
        self._count(
            result["tool_selection"],
            result["schema_valid"],
            result["argument_values"],
            result.get("tool_assertions"),
            passed,
            kinds,
            scores["f1"] if scores else None,
            "needs_judge" in result,
        )

    def count_parts(
        self,
        selection: bool | None,
        schema: bool | None,
        values: bool | None,
        passed: bool | None,
        kinds: list[str],
        f1: float | None,
        needs_judge: bool,
        injected: bool,
    ) -> None:
        """Count a result from its parts, as `check_plain` builds it (no tool assertions)."""
        if injected:
            self.injected += 1
        self._count(selection, schema, values, None, passed, kinds, f1, needs_judge)

    def count(self, result: CaseResult) -> None:
        """Count a result as it is, without writing it as JSON first."""
        scores = result.call_scores
        if result.injection:
            self.injected += 1
        if result.judge is not None:
            self._judged(result.decided_by == "judge", result.judge_dispute)
        self._count(
            result.tool_selection,
            result.schema_valid,
            result.argument_values,
            result.tool_assertions,
            result.passed,
            [failure.kind.value for failure in result.failures],
            scores.f1 if scores else None,
            result.needs_judge,
        )

    def _judged(self, by_judge: bool, dispute: bool) -> None:
        """Count a judged result: whether the judge decided it, and disputes the checks."""
        if by_judge:
            self.judge_decided += 1
        if dispute:
            self.disputes += 1

    def _count(
        self,
        selection: bool | None,
        schema: bool | None,
        values: bool | None,
        held: bool | None,
        passed: bool | None,
        kinds: list[str],
        f1: float | None,
        needs_judge: bool,
    ) -> None:
        counted = self.kinds
        for kind in kinds:
            counted[kind] = counted.get(kind, 0) + 1
        if f1 is not None:
            self.f1_total += f1
            self.f1_cases += 1
        invalid = passed is None and _INVALID_CASE in kinds  # unread: nothing else decided
        outcome = (selection, schema, values, held, passed, invalid, needs_judge)
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1


_INVALID_CASE = FailureKind.INVALID_CASE.value
