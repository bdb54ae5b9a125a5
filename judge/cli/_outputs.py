"""What `judge check` and `judge grade` say of a run besides the results: warnings on what the
cases hold that the format does not know, duplicate ids, the per-case failure views (`--format
pretty|github`, `--junit`), the summary and the `--fail-under` gate."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any

import click

from judge.cases._json import loads
from judge.checks._summary import Summary
from judge.cli._common import EXIT_BELOW_THRESHOLD, print_summary, stack_options
from judge.cli._jobs import STDIN
from judge.cli._reporters import GithubReporter, JUnitWriter, Located, PrettyReporter, Reporter

if TYPE_CHECKING:
    from judge._errors import CaseError
    from judge.cases._case import Case

report_options = stack_options(
    click.option(
        "--format",
        "summary_format",
        type=click.Choice(["table", "json", "pretty", "github"]),
        default="table",
        show_default=True,
        help="table / json: the summary. pretty: one block per failed case (id, file:line, "
        "each failure's kind, call, pointer and message; colour on a terminal only), then the "
        "table. github: a workflow annotation (::error file=...,line=...::) per failure, then "
        "the table.",
    ),
    click.option(
        "--junit",
        type=click.Path(dir_okay=False),
        help="Also write a JUnit XML report here: one test case per case, a failure for each "
        "failed or unreadable one, skipped for one nothing could grade.",
    ),
    click.option(
        "--strict",
        "strict_input",
        is_flag=True,
        help="A case holding a key the format does not know is an InvalidCase (by default a "
        "warning), and --fail-under counts the cases nothing could grade as failed too.",
    ),
)


class RunReport:
    """Everything a run reports beside its result lines, fed as results are written."""

    def __init__(
        self,
        command: str,
        summary_format: str,
        junit: str | None,
        inputs: Iterable[str],
        stream: IO[str],
    ) -> None:
        self.command = command
        self.summary_format = summary_format
        self.stream = stream
        self._first: dict[str, str] = {}  # case id -> where it was first seen
        self._lines: dict[str, deque[int]] = {}  # case id -> the lines `read` gave it on
        self.duplicates = 0
        self._warned: set[str] = set()  # `file:line` of the cases warned about
        self.reporters: list[Reporter] = []
        if summary_format == "pretty":
            self.reporters.append(PrettyReporter(stream))
        elif summary_format == "github":
            self.reporters.append(GithubReporter(stream))
        if junit is not None:  # refuses to write over an input, before anything runs
            self.reporters.append(JUnitWriter(junit, inputs=list(inputs), name=f"judge {command}"))

    def warn(self, message: str) -> None:
        """Say on standard error what a case holds that the format does not know."""
        click.echo(f"judge {self.command}: warning: {message}", err=True)

    def seen(self, source: str, line: int | None, case_id: str) -> None:
        """Note a case's id, warning when an earlier case had it."""
        where = source if line is None else f"{source}:{line}"
        first = self._first.setdefault(case_id, where)
        if first != where:
            self.duplicates += 1
            self.warn(f"{where} case {case_id!r}: duplicate id (first at {first})")

    def read(self, path: str, strict: bool) -> Iterator[Case | CaseError]:
        """The cases of a file, each one's line noted (and its id checked against the run's),
        its unknown fields warned about (with `strict`, an `InvalidCase`)."""
        from judge.cases._case import Case
        from judge.cases._loading import fallback_id, iter_numbered

        source = STDIN if path == "-" else path

        def warn(message: str) -> None:
            self._warned.add(message.split(" case ", 1)[0])  # `file:line`: cases, not keys
            self.warn(message)

        for number, item in iter_numbered(path, strict=strict, warn=warn):
            if isinstance(item, Case):
                case_id = item.id
            else:
                case_id = item.case_id or fallback_id(item.source, item.line)
            self.seen(source, number, case_id)
            self._lines.setdefault(case_id, deque()).append(number)
            yield item

    def line_of(self, case_id: str) -> int | None:
        """The line of the case `read` gave with this id (the first not asked for yet)."""
        lines = self._lines.get(case_id)
        return lines.popleft() if lines else None

    def add_lines(self, source: str, located: list[tuple[int, str]], output: bytes) -> None:
        """A chunk of result lines and each one's line number and id, in order."""
        for line, case_id in located:
            self.seen(source, line, case_id)
        if self.reporters:
            for (line, _), text in zip(located, output.splitlines(), strict=True):
                self.add(source, line, loads(text))

    def add(self, source: str, line: int | None, result: dict[str, Any]) -> None:
        item = Located(source=source, line=line, result=result)
        for reporter in self.reporters:
            reporter.add(item)

    def finish(self, summary: Summary) -> None:
        """Close the failure views and print the summary (counting the duplicates)."""
        summary.duplicate_ids += self.duplicates
        summary.unknown_fields += len(self._warned)
        for reporter in self.reporters:
            reporter.close()
        shown = "json" if self.summary_format == "json" else "table"
        print_summary(summary, shown, self.stream)


def gate(
    command: str,
    rate: float | None,
    fail_under: float | None,
    counted: str,
    what: str = "pass rate",
) -> None:
    """Exit 1 when `rate` (`what`) is under `--fail-under`, saying what it counted."""
    if fail_under is None or (rate is not None and rate >= fail_under):
        return
    shown = "no gradable case" if rate is None else f"{what} {rate:.1%}"
    click.echo(
        f"judge {command}: {shown} is under --fail-under {fail_under:.1%} ({counted})", err=True
    )
    sys.exit(EXIT_BELOW_THRESHOLD)


def counted(summary: Summary, strict: bool) -> str:
    """What the checks' gate counted: `1 passed of 4 cases: 1 failed, 1 unreadable ...`."""
    undecided = summary.not_gradable - summary.invalid_cases
    return (
        f"{summary.passed} passed of {summary.cases} cases: {summary.failed} failed, "
        f"{summary.invalid_cases} unreadable (counted as failed), {undecided} not gradable"
        + (" (counted as failed: --strict)" if strict else "")
    )
