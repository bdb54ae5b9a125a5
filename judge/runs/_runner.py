"""The multi-model runner: every model, case and run, one request each with the agreed
settings; every response stored as returned and graded (checks, and the judge when asked).

Responses are stored, so grading again never asks a candidate again. A failed request is
recorded (`error`) and the batch goes on. An endpoint that refuses every request (the
candidates' or the judge's) stops the batch gently: no new job is started, the jobs in flight
finish and are stored (a response already paid for is never thrown away), then it is raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from judge.cases._calls import ShapeError, normalise_response
from judge.cases._case import Case
from judge.cases._text_calls import with_text_calls
from judge.checks._check import check_case
from judge.checks._structure import SchemaCache
from judge.endpoints._candidates import CandidateClient, CandidateRequestError
from judge.endpoints._client import JudgeEndpointError, serving
from judge.endpoints._endpoint import Endpoint
from judge.endpoints._retry import RetryPolicy
from judge.judging._grade import Judge
from judge.runs._preflight import LOCAL, Agreed, PreflightError, request_body
from judge.runs._records import Key, RunRecord

T = TypeVar("T")
OnRecord = Callable[[RunRecord], None]
Job = tuple[str, Case, int]
"""(model, case, run)."""


class Unjudged(Exception):
    """The judge's endpoint refused: `record` holds the checks only, to store as it is."""

    def __init__(self, record: RunRecord, cause: JudgeEndpointError) -> None:
        super().__init__(str(cause))
        self.record = record
        self.cause = cause


class Grader:
    """The grading step of `judge run` and `judge regrade`: tool calls read from the reply's
    text where asked, the deterministic checks, and the judge when there is one."""

    def __init__(
        self, judge: Judge | None = None, *, text_calls: frozenset[str] | None = frozenset({LOCAL})
    ) -> None:
        """`text_calls`: the models whose calls written as JSON text are read (None: all)."""
        self.judge = judge
        self.text_calls = text_calls
        self._schemas = SchemaCache()

    def reads_text_calls(self, model: str) -> bool:
        return self.text_calls is None or model in self.text_calls

    async def grade(self, record: RunRecord, case: Case) -> RunRecord:
        """`record` graded against `case` (a failed request stays as it is). Raises `Unjudged`
        when the judge's endpoint refuses."""
        if record.response is None or record.error is not None:
            return record
        try:
            response = normalise_response(record.response)
        except ShapeError as exc:
            why = f"the reply is not a chat completion ({exc})"
            return record.model_copy(update={"error": why})
        from_text = False
        if response is not None and (
            record.calls_from_content or self.reads_text_calls(record.model)
        ):
            found = with_text_calls(response, {tool.name for tool in case.tools})
            from_text, response = found is not response, found
        record = record.model_copy(update={"calls_from_content": from_text})
        graded = case.model_copy(update={"response": response})
        if self.judge is None:
            return record.graded(check_case(graded, schemas=self._schemas))
        try:
            return record.graded(await self.judge.grade_case(graded))
        except JudgeEndpointError as exc:
            # The paid-for response is kept with its checks; a later `--judge` run judges it.
            raise Unjudged(record.graded(self.judge.check(graded)), exc) from exc

    async def grade_all(
        self,
        items: Sequence[tuple[RunRecord, Case]],
        *,
        on_record: OnRecord,
        concurrency: int = 8,
    ) -> None:
        """Grade every (record, case), `concurrency` at a time; `on_record` gets each record
        as it is finished, to store it. Raises the judge's `JudgeEndpointError` after storing
        the records in flight."""
        await pool(items, lambda item: self.grade(*item), on_record, concurrency)


@dataclass(frozen=True)
class Plan:
    """What a run will do, given what its runs file already holds."""

    judge: list[tuple[RunRecord, Case]]
    """Stored responses without a usable verdict, judged first (only with a judge)."""
    ask: list[Job]
    """The requests to send: triples not in the file yet, or that failed."""

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
    ) -> None:
        """`endpoint` serves the hosted candidates (None when all are `local`)."""
        self.agreed = agreed
        self.grader = grader or Grader()
        self.settings = run_settings(agreed)
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

    def plan(
        self,
        cases: Sequence[Case],
        models: Sequence[str],
        runs: int,
        done: Mapping[Key, RunRecord] | None = None,
    ) -> Plan:
        """Every (model, case, run) not already in `done` is asked (error records again);
        with a judge, the stored responses that lack a usable verdict are judged first."""
        done = done or {}
        by_id = {case.id: case for case in cases}
        stale = [
            (record, by_id[record.case_id])
            for record in done.values()
            if self.grader.judge is not None and needs_judging(record) and record.case_id in by_id
        ]
        ask = [
            (model, case, run)
            for run in range(1, runs + 1)  # interleaved: a cut-short run stays balanced
            for case in cases
            for model in models
            if (found := done.get((model, case.id, run))) is None or found.error is not None
        ]
        return Plan(judge=stale, ask=ask)

    async def run(self, plan: Plan, *, on_record: OnRecord) -> None:
        """Carry out `plan`; `on_record` gets each record as it is finished, to store it."""
        await self.grader.grade_all(plan.judge, on_record=on_record, concurrency=self._concurrency)
        await pool(plan.ask, lambda job: self._ask(*job), on_record, self._concurrency)

    async def _ask(self, model: str, case: Case, run: int) -> RunRecord:
        body = request_body(model, case, run, self.agreed)
        client = await self._client(model)
        try:
            answer = await client.chat(body)
        except CandidateRequestError as exc:
            return RunRecord(
                model=model, case_id=case.id, run=run, error=str(exc), settings=self.settings
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
            error=reply_error(answer.body),
            attempts=answer.attempts,
            settings=self.settings,
        )
        return await self.grader.grade(record, case)

    async def _client(self, model: str) -> CandidateClient:
        name = LOCAL if model == LOCAL else "hosted"
        async with self._lock:
            if name not in self._clients:
                if name != LOCAL and self._endpoint is None:
                    raise AssertionError("a hosted candidate needs an endpoint")
                hosted = self._endpoint if name != LOCAL else None
                endpoint, concurrency = await serving(hosted, self._concurrency)
                self._clients[name] = CandidateClient(
                    endpoint,
                    concurrency=concurrency,
                    timeout=self._timeout,
                    policy=self._retry,
                    key_hint=self._key_hint,
                )
            return self._clients[name]


async def pool(
    items: Sequence[T],
    work: Callable[[T], Awaitable[RunRecord]],
    on_record: OnRecord,
    concurrency: int,
) -> None:
    """`work` on every item, `concurrency` at a time; `on_record` gets each record as it is
    finished. When an endpoint refuses (`JudgeEndpointError`, the candidates' included), no
    new item is taken, the items in flight finish and are stored, and the first refusal is
    raised."""
    queue = iter(items)
    refused: list[JudgeEndpointError] = []

    async def worker() -> None:
        for item in queue:  # one shared iterator: each item is taken once
            try:
                record = await work(item)
            except Unjudged as stop:
                refused.append(stop.cause)
                record = stop.record
            except JudgeEndpointError as exc:
                refused.append(exc)
                return
            on_record(record)
            if refused:
                return

    tasks = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(items)))]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if refused:
        raise refused[0]


def run_settings(agreed: Agreed) -> dict[str, Any]:
    """The settings stored with every record of a run, the same for every model and case: the
    agreed ones, and with a seed the seed of run 1 (run r is sent `seed + r - 1`)."""
    settings = dict(agreed.settings)
    if agreed.seed is not None:
        settings["seed"] = agreed.seed
    return settings


def check_resumable(done: Iterable[RunRecord], agreed: Agreed, source: str) -> None:
    """Refuse (`PreflightError`) to resume a runs file asked with other settings, whatever
    its models: one file never mixes two configurations."""
    wanted = run_settings(agreed)
    for record in done:
        if record.settings is not None and record.settings != wanted:
            raise PreflightError(
                f"{source} was run with other settings ({_json(record.settings)} for "
                f"{record.model}; now {_json(wanted)}): resume with the same options, or write "
                "to another file"
            )


def needs_judging(record: RunRecord) -> bool:
    """A stored response without a usable verdict."""
    return record.error is None and (record.judge is None or record.judge.status == "judge_error")


def reply_error(body: Any) -> str | None:
    """Why a successful (200) reply holds no answer: OpenRouter reports an error met during
    generation as a choice with `finish_reason: "error"` and an `error` object, or as an
    `error` in the body. None for an answer."""
    if not isinstance(body, dict):
        return None
    choices = body.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    choice: dict[str, Any] = first if isinstance(first, dict) else {}
    error = choice.get("error") or body.get("error")
    if error is None and choice.get("finish_reason") != "error":
        return None
    detail = ""
    if isinstance(error, dict):
        code = f" (code {error['code']})" if error.get("code") is not None else ""
        detail = f": {error.get('message') or _json(error)}{code}"
    elif error:
        detail = f": {error}"
    return f"the endpoint reported an error instead of an answer{detail}"


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
