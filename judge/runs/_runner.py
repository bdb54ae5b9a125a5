"""The multi-model runner: every model, case and run, one request each with the agreed
settings; every response stored as returned and graded (checks, and the judge when asked).

Responses are stored, so grading again never asks a candidate again. A failed request is
recorded (`error`) and the batch goes on. An endpoint that refuses every request (the
candidates' or the judge's) stops the batch gently: no new job is started, the jobs in flight
finish and are stored (a response already paid for is never thrown away), then it is raised.

The parts: `_request` (one request), `_agent_loop` (an agent run), `_batches` (provider
batches), `_grading` (grading a record, and the pool jobs run in).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judge.cases._case import Case
from judge.endpoints._batch import BatchOptions, BatchState, Progress
from judge.endpoints._candidates import CandidateClient
from judge.endpoints._client import serving
from judge.endpoints._endpoint import Endpoint
from judge.endpoints._retry import RetryPolicy
from judge.runs._agent_loop import AgentLoop, run_agent
from judge.runs._batches import ask_in_batches
from judge.runs._grading import Grader, OnRecord, needs_judging, pool
from judge.runs._preflight import LOCAL, Agreed, PreflightError, request_body
from judge.runs._records import Key, RunRecord
from judge.runs._replies import sorted_json
from judge.runs._request import Asker, Job
from judge.runs._resume import case_hashes, of_its_case

__all__ = [
    "AgentLoop",
    "Grader",
    "OnRecord",
    "Plan",
    "Runner",
    "check_resumable",
    "run_settings",
]


@dataclass(frozen=True)
class Plan:
    """What a run will do, given what its runs file already holds."""

    judge: list[tuple[RunRecord, Case]]
    """Stored responses without a usable verdict, judged first (only with a judge)."""
    ask: list[Job]
    """The requests to send: triples not in the file yet, that failed, or whose case changed."""
    kept: int = 0
    """The stored records not asked again."""
    changed: int = 0
    """The stored records asked again because their case changed since (or no hash of it was
    stored with them)."""

    @property
    def total(self) -> int:
        return len(self.judge) + len(self.ask)


class Runner:
    """Runs candidate models on cases. Use as `async with Runner(...) as runner:`."""

    def __init__(
        self,
        agreed: Agreed,
        *,
        endpoint: Endpoint | None,
        grader: Grader | None = None,
        concurrency: int = 8,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        key_hint: str = "OPENROUTER_API_KEY",
        loop: AgentLoop | None = None,
    ) -> None:
        """`endpoint` serves the hosted candidates (None when all are `local`); `loop` makes
        every job an agent run (several steps) instead of one request."""
        self.agreed = agreed
        self.grader = grader or Grader()
        self.loop = loop
        self.settings = run_settings(agreed, loop)
        self._endpoint = endpoint
        self._concurrency = concurrency
        self._timeout = timeout
        self._retry = retry
        self._key_hint = key_hint
        self._clients: dict[str, CandidateClient] = {}
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> Runner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
        if self.loop is not None and self.loop.user is not None:
            await self.loop.user.aclose()
        await self.grader.aclose()

    def plan(
        self,
        cases: Sequence[Case],
        models: Sequence[str],
        runs: int,
        done: Mapping[Key, RunRecord] | None = None,
    ) -> Plan:
        """Every (model, case, run) not already in `done` of its case as it is now is asked
        (error records again); with a judge, the stored responses of unchanged cases that lack
        a usable verdict are judged first."""
        done = done or {}
        by_id = {case.id: case for case in cases}
        hashes = case_hashes(cases)
        stale = [
            (record, by_id[record.case_id])
            for record in done.values()
            if self.grader.judge is not None
            and needs_judging(record)
            and record.case_id in by_id
            and of_its_case(record, hashes)
        ]
        ask = [
            (model, case, run)
            for run in range(1, runs + 1)  # interleaved: a cut-short run stays balanced
            for case in cases
            for model in models
            if (found := done.get((model, case.id, run))) is None
            or found.error is not None
            or not of_its_case(found, hashes)
        ]
        again = [found for m, c, r in ask if (found := done.get((m, c.id, r))) is not None]
        changed = sum(1 for record in again if not of_its_case(record, hashes))
        return Plan(judge=stale, ask=ask, kept=len(done) - len(again), changed=changed)

    async def run(self, plan: Plan, *, on_record: OnRecord) -> None:
        """Carry out `plan`; `on_record` gets each record as it is finished, to store it."""
        await self.grader.grade_all(plan.judge, on_record=on_record, concurrency=self._concurrency)
        await pool(plan.ask, lambda job: self._ask(*job), on_record, self._concurrency)

    async def run_batched(
        self,
        plan: Plan,
        *,
        on_record: OnRecord,
        state_path: str,
        options: BatchOptions,
        discount: float = 0.5,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> BatchState:
        """Carry out `plan` through provider batches: every request in batch input files
        (the same bodies as online), each reply recorded as it is read back. Its
        `cost_usd` is what the provider reports it charged, else the price table's less
        `discount`. What a batch could not answer is asked online (`retry="online"`) or
        recorded as an error with the reason once its batch tries are spent."""
        if self._endpoint is None or self.loop is not None:
            raise AssertionError("a batch is for single requests to a hosted endpoint")
        await self.grader.grade_all(plan.judge, on_record=on_record, concurrency=self._concurrency)
        state, left = await ask_in_batches(
            self._asker,
            self._endpoint,
            plan.ask,
            on_record=on_record,
            state_path=state_path,
            options=options,
            discount=discount,
            on_progress=on_progress,
        )
        await pool(left, lambda job: self._ask(*job), on_record, self._concurrency)
        return state

    @property
    def _asker(self) -> Asker:
        return Asker(self.agreed, self.settings, self.grader)

    async def _ask(self, model: str, case: Case, run: int) -> RunRecord:
        if self.loop is not None:
            client = await self._client(model)
            return await run_agent(self._asker, client, self.loop, model, case, run)
        body = request_body(model, case, run, self.agreed)  # a case it cannot send: no server
        return await self._asker.ask(await self._client(model), model, case, run, body)

    async def _client(self, model: str) -> CandidateClient:
        name = LOCAL if model == LOCAL else "hosted"
        async with self._lock:
            if name not in self._clients:
                if name != LOCAL and self._endpoint is None:
                    raise AssertionError("a hosted candidate needs an endpoint")
                hosted = self._endpoint if name != LOCAL else None
                endpoint, concurrency, timeout = await serving(
                    hosted, self._concurrency, self._timeout
                )
                self._clients[name] = CandidateClient(
                    endpoint,
                    concurrency=concurrency,
                    timeout=timeout,
                    policy=self._retry,
                    key_hint=self._key_hint,
                )
            return self._clients[name]


def run_settings(agreed: Agreed, loop: AgentLoop | None = None) -> dict[str, Any]:
    """The settings stored with every record of a run, the same for every model and case: the
    agreed ones, with a seed the seed of run 1 (run r is sent `seed + r - 1`), and an agent
    run's loop (`max_steps`, `env`, `agent`)."""
    settings = dict(agreed.settings)
    if agreed.seed is not None:
        settings["seed"] = agreed.seed
    if loop is not None:
        settings |= loop.described
    return settings


def check_resumable(
    done: Iterable[RunRecord], agreed: Agreed, source: str, loop: AgentLoop | None = None
) -> None:
    """Refuse (`PreflightError`) to resume a runs file asked with other settings, whatever
    its models: one file never mixes two configurations."""
    wanted = run_settings(agreed, loop)
    for record in done:
        if record.settings is not None and record.settings != wanted:
            raise PreflightError(
                f"{source} was run with other settings ({sorted_json(record.settings)} for "
                f"{record.model}; now {sorted_json(wanted)}): resume with the same options, or "
                "write to another file"
            )
