"""`--batch` for `judge grade`: the options, and the step that fills the verdict cache from
provider batches before grading runs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from judge._errors import InputError
from judge.cases._case import Case
from judge.cases._loading import iter_cases
from judge.cli._common import stack_options

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
    retry: str
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
            retry=found["batch_retry"],
            max_requests=found["batch_max_requests"],
            max_bytes=found["batch_max_bytes"],
            file=found["batch_file"],
            results=found["batch_results"],
            discount=found["batch_discount"],
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


def cases_of(paths: Iterable[str], skip: set[str]) -> list[Case]:
    """The cases of these files still to grade."""
    return [
        item
        for path in paths
        for item in iter_cases(path)
        if isinstance(item, Case) and item.id not in skip
    ]


async def prepare(judge: Any, batching: Batching, cases: list[Case], output: str | None) -> Any:
    """Fill the verdict cache from batches (or an output file); the `Prepared` batches, or
    None when only the input file was written."""
    from judge.judging._batch import (
        BatchOptions,
        BatchRun,
        BatchState,
        Prepared,
        Progress,
        read_batch_output,
        requests_of,
        write_batch_file,
    )

    if judge.endpoint is None:
        raise InputError("a batch needs an endpoint with a Batch API: give --base-url")
    if batching.file is not None:
        asked, _ = await requests_of(judge, cases)
        todo = [a for a in asked.values() if not a.cached]
        write_batch_file(batching.file, todo)
        click.echo(
            f"judge grade: wrote {len(todo)} requests to {batching.file} "
            f"({len(asked) - len(todo)} answered from the cache); grade their output with "
            "--batch-results",
            err=True,
        )
        return None
    if batching.results is not None:
        asked, by_case = await requests_of(judge, cases)
        name = Path(batching.results).name
        kept, failed, _ = await read_batch_output(
            judge, Path(batching.results).read_bytes(), asked, name
        )
        state = BatchState(answered=dict.fromkeys(kept, name), failed=failed)
        missing = sum(1 for k, a in asked.items() if not a.cached and k not in kept)
        click.echo(
            f"judge grade: {batching.results}: {len(kept)} replies kept, {len(failed)} "
            f"unusable; {missing} requests left to ask ({batching.retry})",
            err=True,
        )
        return Prepared(asked, by_case, state, {})
    shown: dict[str, str] = {}

    def progress(found: Progress) -> None:
        for batch_id, status in found.batches.items():
            if shown.get(batch_id) != status:
                shown[batch_id] = status
                click.echo(
                    f"judge grade: batch {batch_id} {status} "
                    f"({found.done}/{found.total} requests done)",
                    err=True,
                )

    options = BatchOptions(
        poll=batching.poll,
        retry=batching.retry,  # type: ignore[arg-type]
        max_requests=batching.max_requests,
        max_bytes=batching.max_bytes,
    )
    run = BatchRun(judge, f"{output}.batch.json", options, on_progress=progress)
    prepared = await run.prepare(cases)
    if prepared.submitted == 0 and prepared.state.batches:
        click.echo(f"judge grade: no new batch: resumed from {output}.batch.json", err=True)
    return prepared


def cost_lines(prepared: Any, price: float | None, discount: float) -> list[str]:
    """What the batches answered, and their cost beside the online cost."""
    requests, prompt, completion = prepared.usage
    batches = len(prepared.state.batches)
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
