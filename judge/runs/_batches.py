"""Single requests through provider batches: every request in batch input files (the same
bodies as online), each reply recorded and graded as it is read back."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from judge.cases._case import Case
from judge.cases._hash import case_hash
from judge.cases._json import dumps
from judge.endpoints._batch import BatchOptions, BatchRun, BatchState, Progress
from judge.endpoints._client import JudgeEndpointError
from judge.endpoints._endpoint import Endpoint
from judge.runs._grading import OnRecord, Unjudged
from judge.runs._preflight import request_body
from judge.runs._request import Asker, Job


async def ask_in_batches(
    asker: Asker,
    endpoint: Endpoint,
    ask: Sequence[Job],
    *,
    on_record: OnRecord,
    state_path: str,
    options: BatchOptions,
    discount: float,
    on_progress: Callable[[Progress], None] | None,
) -> tuple[BatchState, list[Job]]:
    """Every job of `ask` through batches of `endpoint`: each reply recorded (its `cost_usd`
    what the provider reports it charged, else the price table's less `discount`), each
    request whose batch tries are spent recorded as an error with the reason. Returns the
    batches' state and the jobs left to ask online. Raises the judge's `JudgeEndpointError`
    once every reply read is stored."""
    jobs = {job_key(*job): job for job in ask}
    requests = {key: request_body(*job, asker.agreed) for key, job in jobs.items()}
    refused: list[JudgeEndpointError] = []

    async def accept(key: str, body: dict[str, Any], origin: str) -> str | None:
        model, case, run = jobs[key]
        spent = asker.spent(model, body, None, 1, discount=discount)
        record = asker.record(model, case, run, body, spent, batch=origin)
        try:
            record = await asker.grader.grade(record, case)
        except Unjudged as stop:  # the paid reply is kept, as `pool` keeps it; raised after
            refused.append(stop.cause)
            record = stop.record
        on_record(record)
        return None

    batches = BatchRun(endpoint, state_path, options, on_progress)
    state = await batches.run(requests, accept, ())
    given_up = state.given_up(options.retry)
    for key, why in given_up.items():
        if key in jobs:
            on_record(asker.failed(*jobs[key], why))
    if refused:
        raise refused[0]
    left = [job for key, job in jobs.items() if key not in state.answered and key not in given_up]
    return state, left


def job_key(model: str, case: Case, run: int) -> str:
    """A stable key of one (model, case, run) of this content: a batch line's `custom_id`
    (a changed case is a new request: a batch's reply to the old one is not taken for it)."""
    return hashlib.sha256(dumps([model, case.id, run, case_hash(case)])).hexdigest()[:40]
