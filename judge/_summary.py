"""Summaries of a run: counts per outcome and per failure kind, as a table or as JSON."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Any

from judge._result import CaseResult, FailureKind

_CHECKS = ("tool_selection", "schema_valid", "argument_values")


@dataclass
class Summary:
    """Counts accumulated one result at a time, so a run of any size summarises in flat memory."""

    cases: int = 0
    passed: int = 0
    failed: int = 0
    not_gradable: int = 0
    """Cases with `passed` null: nothing to grade them against, or unreadable."""
    invalid_cases: int = 0
    failure_kinds: Counter[str] = field(default_factory=Counter)
    checks: dict[str, Counter[str]] = field(
        default_factory=lambda: {name: Counter() for name in _CHECKS}
    )

    def add(self, result: CaseResult) -> None:
        self.cases += 1
        if result.passed is None:
            self.not_gradable += 1
        elif result.passed:
            self.passed += 1
        else:
            self.failed += 1
        if result.failures:
            kinds = [f.kind.value for f in result.failures]
            self.failure_kinds.update(kinds)
            self.invalid_cases += FailureKind.INVALID_CASE.value in kinds
        for name in _CHECKS:
            self.checks[name][_outcome(getattr(result, name))] += 1

    @property
    def pass_rate(self) -> float | None:
        """Passed over gradable cases; None when no case could be graded."""
        graded = self.passed + self.failed
        return self.passed / graded if graded else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "passed": self.passed,
            "failed": self.failed,
            "not_gradable": self.not_gradable,
            "invalid_cases": self.invalid_cases,
            "pass_rate": self.pass_rate,
            "failure_kinds": dict(self.failure_kinds.most_common()),
            "checks": {name: dict(counts) for name, counts in self.checks.items()},
        }

    def print_table(self, stream: IO[str]) -> None:
        from rich.console import Console
        from rich.table import Table

        console = Console(file=stream, highlight=False)
        overview = Table(title="judge check", show_header=False, title_justify="left")
        overview.add_column(justify="left")
        overview.add_column(justify="right")
        rate = self.pass_rate
        for label, value in (
            ("cases", self.cases),
            ("passed", self.passed),
            ("failed", self.failed),
            ("not gradable", self.not_gradable),
            ("invalid cases", self.invalid_cases),
            ("pass rate", "n/a" if rate is None else f"{rate:.1%}"),
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


def _outcome(value: bool | None) -> str:
    return "null" if value is None else ("true" if value else "false")
