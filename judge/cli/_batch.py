"""`--batch` for `judge grade`: the options, and the step that fills the verdict cache from
provider batches before grading runs."""

from __future__ import annotations

import sys
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import click

from judge.cases._case import Case
from judge.cases._loading import iter_cases
from judge.cli._common import report_skipped, stack_options

if TYPE_CHECKING:
    from judge.cases._shared_tools import SharedTools
    from judge.endpoints._batch import BatchOptions, Progress, Retry
    from judge.judging._batch import Prepared
    from judge.judging._requests import Requests

batch_options = stack_options(
    click.option(
        "--batch",
        is_flag=True,
        help="Judge through the provider's Batch API (about half the price): submit what "
        "the cache cannot answer, poll until done, then grade from the replies. Needs -o "
        "(its state file sits beside it: a rerun resumes the same batches).",
    ),
    click.option(
        "--batch-poll",
        type=click.FloatRange(min=0, min_open=True),
        default=60.0,
        show_default=True,
        help="The longest wait, in seconds, between two status checks (from 1 s, doubling).",
    ),
    click.option(
        "--batch-retry",
        type=click.Choice(["online", "batch"]),
        default="online",
        show_default=True,
        help="What a batch answered unusably (unparseable, cut off, errored) is asked again: "
        "online, or in one follow-up batch.",
    ),
    click.option(
        "--batch-max-requests",
        type=click.IntRange(min=1),
        default=50_000,
        show_default=True,
        help="Requests per batch; more are split into several batches.",
    ),
    click.option(
        "--batch-max-bytes",
        type=click.IntRange(min=1),
        default=200 * 1024 * 1024,
        show_default=True,
        help="Bytes per batch input file; more are split into several batches.",
    ),
    click.option(
        "--batch-file",
        type=click.Path(dir_okay=False),
        help="Only write the batch input file here (for a runner outside this tool, such as "
        "vLLM's); submit nothing, grade nothing.",
    ),
    click.option(
        "--batch-results",
        type=click.Path(dir_okay=False, exists=True),
        help="Read a batch output file (from such a runner) into the verdict cache, then grade.",
    ),
    click.option(
        "--batch-discount",
        type=click.FloatRange(0, 1),
        default=0.5,
        show_default=True,
        help="With --price-per-mtok: the batch price's discount on the online price.",
    ),
)

BATCH_OPTIONS = (
    "batch",
    "batch_poll",
    "batch_retry",
    "batch_max_requests",
    "batch_max_bytes",
    "batch_file",
    "batch_results",
    "batch_discount",
)


@dataclass
class Batching:
    """The batch options of one command."""

    submit: bool
    poll: float
    retry: Retry
    max_requests: int
    max_bytes: int
    file: str | None
    results: str | None
    discount: float

    @classmethod
    def take(cls, options: dict[str, Any]) -> Batching | None:
        """The batch options, popped from `options`; None when none asks for a batch."""
        found = {name: options.pop(name) for name in BATCH_OPTIONS}
        if not (found["batch"] or found["batch_file"] or found["batch_results"]):
            return None
        return cls(
            submit=found["batch"],
            poll=found["batch_poll"],
            retry=cast("Retry", found["batch_retry"]),
            max_requests=found["batch_max_requests"],
            max_bytes=found["batch_max_bytes"],
            file=found["batch_file"],
            results=found["batch_results"],
            discount=found["batch_discount"],
        )

    def options(self) -> BatchOptions:
        from judge.endpoints._batch import BatchOptions

        return BatchOptions(
            poll=self.poll,
            retry=self.retry,
            max_requests=self.max_requests,
            max_bytes=self.max_bytes,
        )

    def refusal(self, *, output: str | None, sources: tuple[str, ...], traces: bool) -> str | None:
        """Why these options cannot run a batch (None: they can)."""
        if sum((self.submit, self.file is not None, self.results is not None)) > 1:
            return "--batch, --batch-file and --batch-results are three ways: choose one"
        if traces or "-" in sources:
            return "a batch reads its cases twice (to ask, then to grade): give case files"
        if output is None and self.submit:
            return "--batch keeps its state beside the results: give -o FILE"
        return None


def cases_of(
    paths: Iterable[str],
    skip: Container[str] = (),
    strict: bool = False,
    tools: SharedTools | None = None,
    *,
    reused: Callable[[Case], bool] | None = None,
) -> list[Case]:
    """The cases of these files still to grade (read as grading reads them, which says what
    they hold that the format does not know: not said twice here), offered `tools` where they
    have none: all but the ids of `skip` and the cases a resumed output holds a result of
    (`reused`, asked of the case as offered the tools)."""
    cases = (
        item if tools is None else tools.offered_to(item)
        for path in paths
        for item in iter_cases(path, strict=strict, warn=_said_later)
        if isinstance(item, Case) and item.id not in skip
    )
    return [case for case in cases if reused is None or not reused(case)]


def _said_later(message: str) -> None:
    """Where `cases_of` sends its warnings: grading reads the same cases and says them."""


async def prepare(
    port: Requests, batching: Batching, cases: list[Case], output: str | None
) -> Prepared | None:
    """Fill the verdict cache from batches (or an output file) with what the judge would
    send (`port`: its `for_batches()`); the `Prepared` batches, or None when only the input
    file was written."""
    from judge.judging._batch import grade_batches, read_results, write_input

    if batching.file is not None:
        written, cached = await write_input(port, cases, batching.file)
        click.echo(
            f"judge grade: wrote {written} requests to {batching.file} ({cached} answered "
            "from the cache); grade with their output file as --batch-results",
            err=True,
        )
        return None
    if batching.results is not None:
        prepared, missing = await read_results(port, cases, batching.results, batching.retry)
        report_skipped("grade", prepared.problems)
        unreadable = len(prepared.state.unreadable)
        click.echo(
            f"judge grade: {batching.results}: {len(prepared.state.answered)} replies kept, "
            f"{len(prepared.state.failed) - unreadable} unusable, {unreadable} unreadable "
            f"(judge_error, not asked again); {missing} requests left to ask ({batching.retry})",
            err=True,
        )
        return prepared
    prepared = await grade_batches(
        port, cases, f"{output}.batch.json", batching.options(), progress_printer("grade")
    )
    if prepared.submitted == 0 and prepared.state.batches:
        click.echo(f"judge grade: no new batch: resumed from {output}.batch.json", err=True)
    return prepared


def progress_printer(command: str) -> Callable[[Progress], None]:
    """A line on standard error whenever a batch changes status, and on a terminal a
    progress bar of the requests done (it goes once they all are)."""
    shown: dict[str, str] = {}
    bar: list[Any] = []  # the rich progress bar, once there is something to show
    said = 0  # the output lines not read that were reported

    def progress(found: Progress) -> None:
        nonlocal said
        report_skipped(command, found.problems[said:])
        said = len(found.problems)
        for batch_id, status in found.batches.items():
            if shown.get(batch_id) != status:
                shown[batch_id] = status
                click.echo(
                    f"judge {command}: batch {batch_id} {status} "
                    f"({found.done}/{found.total} requests done)",
                    err=True,
                )
        if not sys.stderr.isatty():
            return
        if not bar:
            from rich.console import Console
            from rich.progress import Progress as Bar

            shown_bar = Bar(console=Console(stderr=True), transient=True)
            shown_bar.start()
            bar.extend([shown_bar, shown_bar.add_task("batches", total=found.total)])
        bar[0].update(bar[1], completed=found.done, total=found.total)
        if found.done >= found.total:
            bar[0].stop()
            bar.clear()

    return progress


def cost_lines(state: Any, price: float | None, discount: float) -> list[str]:
    """What the batches answered, and their cost beside the online cost."""
    requests, prompt, completion = state.usage
    batches = len(state.batches)
    lines = [
        f"batch: {requests} requests answered in {batches} batches "
        f"({prompt} prompt + {completion} completion tokens)"
    ]
    if price is not None:
        online = (prompt + completion) * price / 1e6
        lines.append(
            f"cost at ${price}/Mtok: ${online:.4f} online, ${online * (1 - discount):.4f} at "
            f"the batch price ({discount:.0%} off)"
        )
    return lines
