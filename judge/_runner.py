"""The multi-model runner: every model, case and run, one request each with the agreed
settings; every response stored as returned and graded (checks, and the judge when asked).

Responses are stored, so grading again never asks a candidate again. A failed request is
recorded (`error`) and the batch goes on; an endpoint that refuses every request stops it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from judge._calls import ShapeError, normalise_response
from judge._candidate_client import CandidateClient, CandidateRequestError
from judge._case import Case
from judge._check import check_case
from judge._client import Endpoint, JudgeEndpointError
from judge._grade import Judge
from judge._preflight import LOCAL, Agreed, PreflightError, request_body
from judge._retry import RetryPolicy
from judge._runs import Key, RunRecord
from judge._structure import SchemaCache
from judge._text_calls import with_text_calls


@dataclass
class Tally:
    """What a run did."""

    requested: int = 0
    """Candidate requests sent (retries not counted)."""
    failed: int = 0
    """Of those, the ones that failed for good (recorded with `error`)."""
    graded: int = 0
    """Stored responses graded again without asking the candidate."""


class Runner:
    """Runs candidate models on cases. Use as `async with Runner(...) as runner:`."""

    def __init__(
        self,
        agreed: Agreed,
        *,
        endpoint: Endpoint | None,
        judge: Judge | None = None,
        concurrency: int = 8,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        text_calls: bool | Sequence[str] = (LOCAL,),
        key_hint: str = "OPENROUTER_API_KEY",
    ) -> None:
        """`endpoint` serves the hosted candidates (None when all are `local`). `text_calls`
        names the models whose JSON-text calls are read (True: all of them)."""
        self.agreed = agreed
        self.judge = judge
        self._endpoint = endpoint
        self._concurrency = concurrency
        self._timeout = timeout
        self._retry = retry
        self._text_calls = text_calls
        self._key_hint = key_hint
        self._clients: dict[str, CandidateClient] = {}
        self._lock = asyncio.Lock()
        self._schemas = SchemaCache()
        self.tally = Tally()

    async def __aenter__(self) -> Runner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()

    def reads_text_calls(self, model: str) -> bool:
        return self._text_calls is True or (
            not isinstance(self._text_calls, bool) and model in self._text_calls
        )

    async def run(
        self,
        cases: Sequence[Case],
        models: Sequence[str],
        runs: int,
        *,
        done: Mapping[Key, RunRecord] | None = None,
        on_record: Callable[[RunRecord], None],
    ) -> Tally:
        """Ask for every (model, case, run) not already in `done` (error records are asked
        again); with a judge, first judge the stored responses that lack a usable verdict.
        `on_record` gets each record as it is finished, to store it."""
        done = done or {}
        by_id = {case.id: case for case in cases}
        if self.judge is not None:
            stale = [r for r in done.values() if needs_judging(r) and r.case_id in by_id]
            await self._pool(stale, lambda r: self.regrade(r, by_id[r.case_id]), on_record)
        jobs = [
            (model, case, run)
            for run in range(1, runs + 1)  # interleaved: a cut-short run stays balanced
            for case in cases
            for model in models
            if (found := done.get((model, case.id, run))) is None or found.error is not None
        ]
        await self._pool(jobs, lambda job: self._ask(*job), on_record)
        return self.tally

    async def regrade(self, record: RunRecord, case: Case) -> RunRecord:
        """Grade a stored response again (checks, and the judge when there is one)."""
        self.tally.graded += 1
        return await self._grade(record, case)

    async def _ask(self, model: str, case: Case, run: int) -> RunRecord:
        body = request_body(model, case, run, self.agreed)
        settings = request_settings(body)
        client = await self._client(model)
        self.tally.requested += 1
        try:
            answer = await client.chat(body)
        except CandidateRequestError as exc:
            self.tally.failed += 1
            return RunRecord(
                model=model, case_id=case.id, run=run, error=str(exc), settings=settings
            )
        usage = answer.body.get("usage") if isinstance(answer.body, dict) else None
        usage = usage if isinstance(usage, dict) else None
        reported = usage.get("cost") if usage else None  # OpenRouter reports what it billed
        cost = (
            float(reported)
            if isinstance(reported, int | float)
            else self.agreed.models[model].cost(usage)
        )
        record = RunRecord(
            model=model,
            case_id=case.id,
            run=run,
            response=answer.body,
            usage=usage,
            latency_s=round(answer.latency_s, 4),
            cost_usd=cost,
            attempts=answer.attempts,
            settings=settings,
        )
        return await self._grade(record, case)

    async def _grade(self, record: RunRecord, case: Case) -> RunRecord:
        if record.response is None:
            return record
        try:
            response = normalise_response(record.response)
        except ShapeError as exc:
            self.tally.failed += 1
            detail = _error_detail(record.response)
            return record.model_copy(
                update={"error": f"the reply is not a chat completion ({exc}){detail}"}
            )
        from_text = False
        if (record.calls_from_content or self.reads_text_calls(record.model)) and (
            response is not None
        ):
            found = with_text_calls(response)
            from_text, response = found is not response, found
        record = record.model_copy(update={"calls_from_content": from_text})
        graded = case.model_copy(update={"response": response})
        if self.judge is None:
            return record.graded(check_case(graded, schemas=self._schemas))
        try:
            return record.graded(await self.judge.grade_case(graded))
        except JudgeEndpointError as exc:
            # The paid-for response is kept; a later `--judge` run judges it.
            raise _Unjudged(record.graded(check_case(graded, schemas=self._schemas)), exc) from exc

    async def _client(self, model: str) -> CandidateClient:
        name = LOCAL if model == LOCAL else "hosted"
        async with self._lock:
            if name not in self._clients:
                if name == LOCAL:
                    from judge._local import local_endpoint

                    endpoint = await asyncio.to_thread(local_endpoint)
                    concurrency = 1  # the embedded server answers one request at a time
                else:
                    if self._endpoint is None:
                        raise AssertionError("a hosted candidate needs an endpoint")
                    endpoint, concurrency = self._endpoint, self._concurrency
                self._clients[name] = CandidateClient(
                    endpoint,
                    concurrency=concurrency,
                    timeout=self._timeout,
                    policy=self._retry,
                    key_hint=self._key_hint,
                )
            return self._clients[name]

    async def _pool(
        self,
        items: Sequence[Any],
        work: Callable[[Any], Any],
        on_record: Callable[[RunRecord], None],
    ) -> None:
        queue = iter(items)

        async def worker() -> None:
            for item in queue:  # one shared iterator: each item is taken once
                try:
                    record = await work(item)
                except _Unjudged as stop:
                    on_record(stop.record)
                    raise stop.cause from None
                on_record(record)

        tasks = [asyncio.create_task(worker()) for _ in range(min(self._concurrency, len(items)))]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def check_resumable(
    done: Iterable[RunRecord], cases: Sequence[Case], agreed: Agreed, source: str
) -> None:
    """Refuse (`PreflightError`) to resume a runs file asked with other settings: that would
    mix two runs in one comparison."""
    by_id = {case.id: case for case in cases}
    for record in done:
        case = by_id.get(record.case_id)
        if case is None or record.settings is None or record.model not in agreed.models:
            continue
        wanted = request_settings(request_body(record.model, case, record.run, agreed))
        if wanted != record.settings:
            raise PreflightError(
                f"{source} was run with other settings ({orjson.dumps(record.settings).decode()};"
                f" now {orjson.dumps(wanted).decode()}): resume with the same options, or write "
                "to another file"
            )


def request_settings(body: Mapping[str, Any]) -> dict[str, Any]:
    """Every field of a request but what differs by model and case: equal across models."""
    return {k: v for k, v in body.items() if k not in ("model", "messages", "tools")}


def needs_judging(record: RunRecord) -> bool:
    """A stored response without a usable verdict."""
    return record.error is None and (record.judge is None or record.judge.status == "judge_error")


class _Unjudged(Exception):
    def __init__(self, record: RunRecord, cause: JudgeEndpointError) -> None:
        super().__init__(str(cause))
        self.record = record
        self.cause = cause


def _error_detail(body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return f": {error['message']}"
    return ""
