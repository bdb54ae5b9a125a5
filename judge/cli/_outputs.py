"""What `judge check` and `judge grade` say of a run besides the results: warnings on what the
cases hold that the format does not know, duplicate ids, the per-case failure views (`--format
pretty|github`, `--junit`), the summary and the `--fail-under` gate."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

import click

from judge.cases._json import loads
from judge.checks._summary import Summary
from judge.cli._common import EXIT_BELOW_THRESHOLD, EXIT_UNREADABLE, print_summary, stack_options
from judge.cli._jobs import STDIN

if TYPE_CHECKING:
    from judge._errors import CaseError
    from judge.cases._case import Case
    from judge.cases._shared_tools import SharedTools
    from judge.cli._reporters import Reporter

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


def refuse_on_ray(
    command: str, summary_format: str, junit: str | None, strict: bool, tools: str | None = None
) -> None:
    """`--ray` gives back results, not where each case was read: the per-case views and
    strict reading are refused there (exit 2) rather than run empty; and the cases are read
    there as they are, with their own tools only (not `--tools`)."""
    asked = [
        flag
        for flag, given in (
            (f"--format {summary_format}", summary_format in ("pretty", "github")),
            ("--junit", junit is not None),
            ("--strict", strict),
            ("--tools", tools is not None),
        )
        if given
    ]
    if asked:
        click.echo(
            f"judge {command}: --ray does not take {', '.join(asked)}: run without --ray for "
            "them (the results and the table or JSON summary are the same)",
            err=True,
        )
        sys.exit(EXIT_UNREADABLE)


class RunReport:
    """Everything a run reports beside its result lines, fed as results are written."""

    def __init__(
        self,
        command: str,
        summary_format: str,
        junit: str | None,
        stream: IO[str],
        *,
        strict: bool = False,
        tools: SharedTools | None = None,
    ) -> None:
        self.command = command
        self.strict = strict
        """Read cases strictly: a key the format does not know makes a case `InvalidCase`."""
        self.tools = tools
        """The tools offered to each case `read` gives that has none (`--tools`)."""
        self.summary_format = summary_format
        self.stream = stream
        self._ids: dict[str, dict[str, int | None]] = {}  # source -> id -> its first line
        self._lines: dict[str, deque[int]] = {}  # case id -> the lines `read` gave it on
        self.duplicates = 0
        self.unknown = 0
        """Cases `read` gave that hold a key the format does not know."""
        self.reporters: list[Reporter] = []
        if summary_format in ("pretty", "github") or junit is not None:
            self._add_reporters(summary_format, junit, command)

    def _add_reporters(self, summary_format: str, junit: str | None, command: str) -> None:
        from judge.cli._reporters import GithubReporter, JUnitWriter, PrettyReporter

        stream = self.stream
        if summary_format == "pretty":
            self.reporters.append(PrettyReporter(stream))
        elif summary_format == "github":
            self.reporters.append(GithubReporter(stream))
        if junit is not None:  # (never over an input: `refuse_overlaps` ran first)
            self.reporters.append(JUnitWriter(junit, name=f"judge {command}"))

    def warn(self, message: str) -> None:
        """Say on standard error what a case holds that the format does not know."""
        click.echo(f"judge {self.command}: warning: {message}", err=True)

    def seen(self, source: str, line: int | None, case_id: str) -> None:
        """Note a case's id, warning when an earlier case had it."""
        for first, lines in self._ids.items():
            if case_id in lines:
                self.duplicates += 1
                self.warn(f"{_where(source, line)} case {case_id!r}: duplicate id (first at "
                          f"{_where(first, lines[case_id])})")  # fmt: skip
                return
        self._ids.setdefault(source, {})[case_id] = line

    def read(self, path: str) -> Iterator[Case | CaseError]:
        """The cases of a file, each one's line noted (and its id checked against the run's),
        its unknown fields warned about (read strictly, an `InvalidCase`)."""
        from judge.cases._case import Case
        from judge.cases._loading import fallback_id, iter_numbered

        source = STDIN if path == "-" else path
        said: list[str] = []  # what the case being read holds that the format does not know

        for number, item in iter_numbered(path, strict=self.strict, warn=said.append):
            self.unknown += bool(said)
            for message in said:
                self.warn(message)
            said.clear()
            if isinstance(item, Case):
                case_id = item.id
            else:
                case_id = item.case_id or fallback_id(item.source, item.line)
            self.seen(source, number, case_id)
            self._lines.setdefault(case_id, deque()).append(number)
            yield item if self.tools is None else self.tools.offered_to(item)

    def line_of(self, case_id: str) -> int | None:
        """The line of the case `read` gave with this id (the first not asked for yet)."""
        lines = self._lines.get(case_id)
        return lines.popleft() if lines else None

    def add_lines(self, source: str, numbers: list[int], ids: list[str], output: bytes) -> None:
        """A chunk of result lines with each one's line number and id, in order."""
        fresh = dict(zip(ids, numbers, strict=True))
        if len(fresh) == len(ids) and all(d.keys().isdisjoint(fresh) for d in self._ids.values()):
            self._ids.setdefault(source, {}).update(fresh)  # no repeat: one C-level update
        else:
            for number, case_id in zip(numbers, ids, strict=True):
                self.seen(source, number, case_id)
        if self.reporters:
            for number, text in zip(numbers, output.splitlines(), strict=True):
                self.add(source, number, loads(text))

    def add(self, source: str, line: int | None, result: dict[str, Any]) -> None:
        if not self.reporters:
            return
        from judge.cli._reporters import Located

        item = Located(source=source, line=line, result=result)
        for reporter in self.reporters:
            reporter.add(item)

    def finish(self, summary: Summary) -> None:
        """Close the failure views and print the summary (counting the duplicates)."""
        summary.duplicate_ids += self.duplicates
        summary.unknown_fields += self.unknown
        for reporter in self.reporters:
            reporter.close()
        shown = "json" if self.summary_format == "json" else "table"
        print_summary(summary, shown, self.stream)


def _where(source: str, line: int | None) -> str:
    return source if line is None else f"{source}:{line}"


def gate(
    command: str,
    counts: tuple[int, int, int, int],
    fail_under: float | None,
    strict: bool,
    *,
    what: str = "pass rate",
    undecided: str = "not gradable",
    who_decided: str | None = None,
) -> None:
    """With `--fail-under`: the rate of `counts` (passed, failed, unreadable, cases), said on
    standard error with what it counted; exit 1 when it is under the bound. Unreadable cases
    count as failed; with `strict`, so do the cases nothing decided (passed over cases)."""
    if fail_under is None:
        return
    passed, failed, unreadable, cases = counts
    decided = passed + failed + unreadable
    over = cases if strict else decided
    rate = passed / over if over else None
    shown = "no gradable case" if rate is None else f"{what} {rate:.1%}"
    below = rate is None or rate < fail_under
    click.echo(
        f"judge {command}: {shown} {'is under' if below else 'meets'} --fail-under "
        f"{fail_under:.1%} ({passed} passed of {cases} cases: {failed} failed, {unreadable} "
        f"unreadable (counted as failed), {cases - decided} {undecided}"
        + (" (counted as failed: --strict)" if strict else "")
        + (f"; {who_decided})" if who_decided else ")"),
        err=True,
    )
    if below:
        sys.exit(EXIT_BELOW_THRESHOLD)
