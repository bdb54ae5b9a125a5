"""Judging at batch prices: the requests grading would send go through provider batches
(`judge.endpoints._batch`) with what the judge would send (`Requests`, from
`Judge.for_batches`), each reply is validated exactly as an online one and kept in the
verdict cache, and grading then runs as usual, answered from the cache. What the batches gave
up on is refused online (that case's `judge_error`, with the reason)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openai.types.chat import ChatCompletion
from pydantic import ValidationError

from judge._errors import InputError
from judge.cases._case import Case
from judge.checks._result import CaseResult
from judge.checks._verdict import with_judge
from judge.endpoints._batch import (
    BatchOptions,
    BatchRun,
    BatchState,
    Progress,
    Retry,
    write_batch_file,
)
from judge.endpoints._batch_output import Accept, Output, read_output
from judge.endpoints._reply import reply_of
from judge.judging._asker import Asked
from judge.judging._requests import Requests


@dataclass
class Prepared:
    """The batches' replies are in the cache: what grading needs to know about them."""

    by_case: dict[str, list[str]]
    state: BatchState
    retry: Retry = "online"
    submitted: int = 0
    """Batches created by this run (0 when a resumed run found its batches)."""
    problems: list[str] = field(default_factory=list)
    """The output file's lines that could not be read (`file:line (case) at /ptr: why`)."""

    def refuse_on(self, port: Requests) -> None:
        """Tell the judge what it must not ask online: the requests given up (their reason
        is that case's `judge_error`), and with `retry="batch"` anything the batches did not
        answer."""
        offline = "no usable reply from the batches (--batch-retry batch asks nothing online)"
        port.refuse(
            self.state.given_up(self.retry), offline=offline if self.retry == "batch" else None
        )

    def annotate(self, result: CaseResult) -> CaseResult:
        """The result with the batches that answered its requests named in its outcome."""
        judged = result.judge
        answered = self.state.answered
        ids = sorted({answered[k] for k in self.by_case.get(result.id, ()) if k in answered})
        if judged is None or not ids:
            return result
        judged = judged.model_copy(update={"batch": ",".join(ids)})
        return with_judge(result, judged)


async def requests_of(
    port: Requests, cases: Iterable[Case]
) -> tuple[dict[str, Asked], dict[str, list[str]]]:
    """Every request grading `cases` would send (one per key: identical questions are asked
    once), and each case's keys."""
    asked: dict[str, Asked] = {}
    by_case: dict[str, list[str]] = {}
    for case in cases:
        found = await port.of(case)
        by_case[case.id] = [a.key for a in found]
        for item in found:
            asked.setdefault(item.key, item)
    return asked, by_case


def acceptor(port: Requests, asked: dict[str, Asked]) -> Accept:
    """Takes a batch's reply to one of `asked` as the judge would take it online."""

    async def accept(key: str, body: dict[str, Any], origin: str) -> str | None:
        item = asked[key]
        try:
            ChatCompletion.model_validate(body)
        except ValidationError as exc:
            return f"not a chat completion: {str(exc).splitlines()[0]}"
        return await port.accept(item, reply_of(body, item.mode))

    return accept


async def grade_batches(
    port: Requests,
    cases: Iterable[Case],
    state_path: str | Path,
    options: BatchOptions,
    on_progress: Callable[[Progress], None] | None = None,
) -> Prepared:
    """Submit what the cache cannot answer, wait for every batch, keep the replies."""
    asked, by_case = await requests_of(port, cases)
    run = BatchRun(port.endpoint, state_path, options, on_progress)
    cached = [k for k, a in asked.items() if a.cached]
    requests = {k: a.body for k, a in asked.items()}
    state = await run.run(requests, acceptor(port, asked), cached)
    return Prepared(by_case, state, options.retry, run.submitted)


async def write_input(port: Requests, cases: Iterable[Case], path: str | Path) -> tuple[int, int]:
    """The batch input file of what grading would ask: (requests written, cached)."""
    asked, _ = await requests_of(port, cases)
    todo = {k: a.body for k, a in asked.items() if not a.cached}
    return write_batch_file(path, todo), len(asked) - len(todo)


async def read_results(
    port: Requests, cases: Iterable[Case], path: str | Path, retry: Retry
) -> tuple[Prepared, int]:
    """A batch output file from a runner elsewhere, kept in the cache: the batches as
    grading needs them (a request whose line cannot be read is given up, its case's
    `judge_error` saying where and why), and how many requests it left unanswered.
    `InputError` for a file that cannot be read, or where no line answers a request to ask."""
    asked, by_case = await requests_of(port, cases)
    name = Path(path).name
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    found = await read_output(data, asked, acceptor(port, asked), str(path), name)
    todo = [k for k, a in asked.items() if not a.cached]
    if todo and not found.answering:
        raise InputError(_answers_nothing(path, found))
    state = BatchState(
        answered=dict.fromkeys(found.kept, name),
        failed={**found.failed, **found.unreadable},
        unreadable=set(found.unreadable),
    )
    missing = sum(1 for k in todo if k not in found.kept and k not in found.unreadable)
    cases_of: dict[str, list[str]] = {}
    for case_id, keys in by_case.items():
        for key in keys:
            cases_of.setdefault(key, []).append(case_id)
    problems = [p.describe(cases_of.get(p.key or "", ())) for p in found.problems]
    return Prepared(by_case, state, retry, problems=problems), missing


def _answers_nothing(path: str | Path, found: Output) -> str:
    """Why a batch output file is refused whole: none of its lines answers a request."""
    return (
        f"{path}: no line answers a request of these cases ({found.lines_said()}); give the "
        "output file of the input --batch-file wrote for them"
    )
