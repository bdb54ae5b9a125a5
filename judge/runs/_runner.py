"""The multi-model runner: every model, case and run, one request each with the agreed
settings; every response stored as returned and graded (checks, and the judge when asked).

Responses are stored, so grading again never asks a candidate again. A failed request is
recorded (`error`) and the batch goes on. An endpoint that refuses every request (the
candidates' or the judge's) stops the batch gently: no new job is started, the jobs in flight
finish and are stored (a response already paid for is never thrown away), then it is raised.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import orjson

from judge.cases._calls import Response, ShapeError, first_choice, normalise_response
from judge.cases._case import Case, Tool
from judge.cases._json import dumps, loads
from judge.cases._match import Match
from judge.cases._text_calls import with_text_calls
from judge.checks._check import check_case
from judge.checks._env import NOT_OBSERVED, Environment, EnvironmentFactory, new_environment
from judge.checks._kinds import FailureKind
from judge.checks._result import CaseResult, Failure
from judge.checks._structure import SchemaCache
from judge.endpoints._batch import BatchOptions, BatchRun, BatchState, Progress
from judge.endpoints._candidates import CandidateClient, CandidateRequestError
from judge.endpoints._client import JudgeEndpointError, serving
from judge.endpoints._endpoint import Endpoint
from judge.endpoints._retry import RetryPolicy
from judge.judging._grade import Judge
from judge.runs._agent import (
    Agent,
    StepLimit,
    Transcript,
    added_after,
    assistant_message,
    built_in_loop,
    call_agent,
    final_answer,
    prompt_of,
)
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
        self,
        judge: Judge | None = None,
        *,
        text_calls: frozenset[str] | None = frozenset({LOCAL}),
        match: Match | None = None,
        env: EnvironmentFactory | None = None,
    ) -> None:
        """`text_calls`: the models whose calls written as JSON text are read (None: all);
        `match` and `env` grade trajectories and final states as `judge check` does."""
        self.judge = judge
        self.text_calls = text_calls
        self.match = match
        self.env = env
        self._schemas = SchemaCache()

    def reads_text_calls(self, model: str) -> bool:
        return self.text_calls is None or model in self.text_calls

    async def grade(self, record: RunRecord, case: Case) -> RunRecord:
        """`record` graded against `case` (a failed request stays as it is). Raises `Unjudged`
        when the judge's endpoint refuses."""
        if record.error is not None or (record.response is None and record.transcript is None):
            return record
        if record.transcript is not None:
            return await self._grade_run(record, case)
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
        checked = check_case(graded, schemas=self._schemas, match=self.match, env=self.env)
        return await self._judged(record, graded, _cut_off(record.response, checked))

    async def _grade_run(self, record: RunRecord, case: Case) -> RunRecord:
        """An agent run graded as a recorded transcript: every call of its assistant turns,
        the state it ended in against the reference's, the tool assertions, `StepLimit` when it
        never ended, `Truncated` when its last reply was cut, and the judge (the whole path and
        the final answer) when it ended in text."""
        transcript = record.transcript or []
        ended = record.stop == "answer" and final_answer(transcript) is not None
        try:
            response = normalise_response(transcript[-1]) if ended else None
        except ShapeError as exc:
            return record.model_copy(update={"error": f"the final reply is unreadable ({exc})"})
        messages = [*prompt_of(case), *(transcript[:-1] if ended else transcript)]
        graded = case.model_copy(update={"messages": messages, "response": response})
        reached = record.final_state if record.final_state is not None else NOT_OBSERVED
        checked = check_case(
            graded,
            schemas=self._schemas,
            match=self.match,
            env=self.env,
            whole_path=True,
            reached=reached,  # the state the run ended in, not a replay of its calls
        )
        if record.stop == "step_limit":
            steps = record.steps or 0
            message = f"the candidate was still calling tools after {steps} steps (--max-steps)"
            checked = _failed(checked, FailureKind.STEP_LIMIT, message, passed=False)
        return await self._judged(record, graded, _cut_off(record.response, checked))

    async def _judged(self, record: RunRecord, graded: Case, checked: CaseResult) -> RunRecord:
        """`record` with the checks, and the judge's verdicts when there is a judge."""
        if self.judge is None or graded.response is None:
            return record.graded(checked)
        try:
            judged = await self.judge.grade_case(graded, checked)  # checked once, here
        except JudgeEndpointError as exc:
            # The paid-for response is kept with its checks; a later `--judge` run judges it.
            raise Unjudged(record.graded(checked), exc) from exc
        return record.graded(checked.model_copy(update={"judge": judged.judge}))

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
        if self.loop is not None:
            return await self._run_agent(model, case, run, self.loop)
        body = request_body(model, case, run, self.agreed)
        client = await self._client(model)
        try:
            answer = await client.chat(body)
        except CandidateRequestError as exc:
            return RunRecord(
                model=model, case_id=case.id, run=run, error=str(exc), settings=self.settings
            )
        spent = self._spent(model, answer.body, answer.latency_s, answer.attempts)
        return await self.grader.grade(self._record(model, case, run, answer.body, spent), case)

    def _record(
        self, model: str, case: Case, run: int, body: Any, spent: dict[str, Any], **extra: Any
    ) -> RunRecord:
        return RunRecord(
            model=model,
            case_id=case.id,
            run=run,
            response=body,
            usage=spent["usage"],
            latency_s=spent["latency_s"],
            cost_usd=spent["cost_usd"],
            error=reply_error(body),
            attempts=spent["attempts"],
            settings=self.settings,
            **extra,
        )

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
        jobs = {job_key(*job): job for job in plan.ask}
        requests = {key: request_body(*job, self.agreed) for key, job in jobs.items()}

        refused: list[JudgeEndpointError] = []

        async def accept(key: str, body: dict[str, Any], origin: str) -> str | None:
            model, case, run = jobs[key]
            spent = self._spent(model, body, None, 1, discount=discount)
            record = self._record(model, case, run, body, spent, batch=origin)
            try:
                record = await self.grader.grade(record, case)
            except Unjudged as stop:  # the paid reply is kept, as `pool` keeps it; raised after
                refused.append(stop.cause)
                record = stop.record
            on_record(record)
            return None

        batches = BatchRun(self._endpoint, state_path, options, on_progress)
        state = await batches.run(requests, accept, ())
        given_up = state.given_up(options.retry)
        for key, why in given_up.items():
            if key in jobs:
                model, case, run = jobs[key]
                on_record(
                    RunRecord(
                        model=model, case_id=case.id, run=run, error=why, settings=self.settings
                    )
                )
        left = [
            job for key, job in jobs.items() if key not in state.answered and key not in given_up
        ]
        if refused:
            raise refused[0]
        await pool(left, lambda job: self._ask(*job), on_record, self._concurrency)
        return state

    async def _run_agent(self, model: str, case: Case, run: int, loop: AgentLoop) -> RunRecord:
        """One agent run from its start: a fresh environment, every step asked with the
        agreed settings, the whole transcript recorded and graded. A request that fails for
        good makes the run an error (asked again, from the start, on resume)."""
        client = await self._client(model)
        names = {tool.name for tool in case.tools}
        reads_text = self.grader.reads_text_calls(model)
        spent: list[dict[str, Any]] = []
        bodies: list[Any] = []
        seen: list[dict[str, Any]] = []  # the last path the candidate answered, after the prompt
        from_text = False  # some step's calls were read from the reply's text
        limit_hit = False  # an agent that swallows StepLimit still hit it
        prompt = prompt_of(case)

        async def chat(
            messages: Sequence[dict[str, Any]], tools: Any = CASE_TOOLS
        ) -> dict[str, Any]:
            nonlocal from_text, limit_hit
            if len(spent) >= loop.max_steps:
                limit_hit = True
                raise StepLimit
            offered = None if tools is CASE_TOOLS else [Tool.from_spec(t) for t in tools or ()]
            body = request_body(model, case, run, self.agreed, messages=messages, tools=offered)
            answer = await client.chat(body)
            spent.append(self._spent(model, answer.body, answer.latency_s, answer.attempts))
            bodies.append(answer.body)
            failed = reply_error(answer.body)
            if failed is not None:
                raise CandidateRequestError(failed)
            try:
                response = normalise_response(answer.body) or Response()
            except ShapeError as exc:
                raise CandidateRequestError(f"the reply is not a chat completion ({exc})") from None
            if reads_text:
                found = with_text_calls(response, names)
                from_text = from_text or found is not response
                response = found
            message = assistant_message(response, len(spent))
            after = added_after(prompt, messages)
            if after is not None:  # a side request (a confirmation step, say) is not the path
                seen[:] = [*after, message]
            return message

        env: Environment | None = None
        transcript = Transcript()
        stop: Literal["answer", "step_limit"] | None = "answer"
        error: str | None = None
        try:
            env = new_environment(loop.env, case) if loop.env is not None else None
            if loop.agent is None:
                assert env is not None, "the built-in loop needs an environment"
                await built_in_loop(case, chat, env, transcript)
            else:  # the agent sees the case as its prompt: a recorded path left out
                asked = case.model_copy(update={"messages": prompt})
                returned = await call_agent(loop.agent, asked, chat, env)
                transcript.messages = plain_json(_agent_transcript(returned, prompt))
            if limit_hit:
                raise StepLimit
        except StepLimit:
            stop = "step_limit"
            if loop.agent is not None and not transcript.messages:  # it never returned
                transcript.messages = list(seen)
        except JudgeEndpointError:
            raise  # the endpoint refuses everything: the batch stops
        except CandidateRequestError as exc:
            stop, error = None, str(exc)
        except Exception as exc:  # the agent's own code, or the environment, failed
            stop, error = None, f"the agent run failed: {type(exc).__name__}: {exc}"
        try:
            final_state = plain_json(env.snapshot()) if env is not None else None
        except Exception as exc:
            final_state = None
            error = error or f"the environment's snapshot failed: {type(exc).__name__}: {exc}"
        record = RunRecord(
            model=model,
            case_id=case.id,
            run=run,
            response=bodies[-1] if bodies else None,
            transcript=transcript.messages,
            steps=len(spent),
            stop=stop,
            final_answer=final_answer(transcript.messages) if stop == "answer" else None,
            final_state=final_state,
            tool_errors=tuple(transcript.tool_errors),
            requests=tuple(spent),
            usage=_summed_usage(spent),
            latency_s=round(sum(s["latency_s"] for s in spent), 4) if spent else None,
            cost_usd=_summed(s["cost_usd"] for s in spent),
            error=error,
            attempts=sum(s["attempts"] for s in spent),
            calls_from_content=from_text,
            settings=self.settings,
        )
        return await self.grader.grade(record, case)

    def _spent(
        self,
        model: str,
        body: Any,
        latency_s: float | None,
        attempts: int,
        discount: float | None = None,
    ) -> dict[str, Any]:
        """What one request cost: its usage as returned, latency, attempts and price (from a
        batch, with its `discount`: no latency of its own, and the table's price less the
        discount unless the provider says what it charged)."""
        usage = body.get("usage") if isinstance(body, dict) else None
        usage = usage if isinstance(usage, dict) else None
        reported = usage.get("cost") if usage else None  # OpenRouter reports what it billed
        cost = (
            float(reported)
            if isinstance(reported, int | float)
            else self.agreed.models[model].cost(usage)
        )
        if discount is not None and cost is not None and not isinstance(reported, int | float):
            cost *= 1 - discount
        return {
            "usage": usage,
            "latency_s": None if latency_s is None else round(latency_s, 4),
            "attempts": attempts,
            "cost_usd": cost,
        }

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


def job_key(model: str, case: Case, run: int) -> str:
    """A stable key of one (model, case, run): a batch line's `custom_id`."""
    return hashlib.sha256(dumps([model, case.id, run])).hexdigest()[:40]


@dataclass(frozen=True)
class AgentLoop:
    """How every job of an agent run goes: the built-in loop in a fresh environment from
    `env`, or the user's `agent`, each at most `max_steps` requests."""

    env: EnvironmentFactory | None
    agent: Agent | None
    max_steps: int
    described: dict[str, Any]
    """The loop as the options named it (stored in every record's settings)."""


class _CaseTools:
    def __repr__(self) -> str:
        return "the case's tools"


CASE_TOOLS: Any = _CaseTools()
"""`chat`'s default `tools`: the case's own."""


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


def _agent_transcript(returned: Any, prompt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages an agent's callable returned, after the case's own."""
    if not isinstance(returned, list | tuple) or not all(isinstance(m, dict) for m in returned):
        raise TypeError(
            f"the agent returned {type(returned).__name__}: it must return the transcript, a "
            "list of messages"
        )
    after = added_after(prompt, returned)
    return list(returned) if after is None else after


def _summed_usage(spent: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The token counts of an agent run's requests, added up."""
    total: dict[str, Any] = {}
    for usage in (s["usage"] for s in spent if s["usage"]):
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            if isinstance(usage.get(key), int | float):
                total[key] = total.get(key, 0) + usage[key]
    return total or None


def _summed(values: Iterable[float | None]) -> float | None:
    """The sum, or None when any is unknown (a partial sum would under-report)."""
    found = list(values)
    return None if not found or None in found else sum(v for v in found if v is not None)


def plain_json(value: Any) -> Any:
    """`value` as plain JSON data (what does not encode is written as text), so that a
    record always writes."""
    return loads(dumps(value, default=str))


def check_resumable(
    done: Iterable[RunRecord], agreed: Agreed, source: str, loop: AgentLoop | None = None
) -> None:
    """Refuse (`PreflightError`) to resume a runs file asked with other settings, whatever
    its models: one file never mixes two configurations."""
    wanted = run_settings(agreed, loop)
    for record in done:
        if record.settings is not None and record.settings != wanted:
            raise PreflightError(
                f"{source} was run with other settings ({_json(record.settings)} for "
                f"{record.model}; now {_json(wanted)}): resume with the same options, or write "
                "to another file"
            )


def needs_judging(record: RunRecord) -> bool:
    """A stored response without a usable verdict (an agent run that never ended in text
    has nothing to judge)."""
    if record.error is not None or record.stop == "step_limit":
        return False
    return record.judge is None or record.judge.status == "judge_error"


def reply_error(body: Any) -> str | None:
    """Why a successful (200) reply holds no answer: OpenRouter reports an error met during
    generation as a choice with `finish_reason: "error"` and an `error` object, or as an
    `error` in the body. None for an answer."""
    if not isinstance(body, dict):
        return None
    choice = first_choice(body)
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


def _cut_off(reply: Any, checked: CaseResult) -> CaseResult:
    """`checked` with a `Truncated` failure when the reply stopped at its token limit (what the
    checks read may be only the start of what the candidate meant): failed, unless the checks
    had nothing to grade (`passed` null stays null, so a reference-free pass rate is not
    computed from the cut replies alone)."""
    if first_choice(reply).get("finish_reason") != "length":
        return checked
    message = "the reply stopped at its token limit (finish_reason: length): it may be incomplete"
    passed = None if checked.passed is None else False
    return _failed(checked, FailureKind.TRUNCATED, message, passed=passed)


def _failed(
    checked: CaseResult, kind: FailureKind, message: str, *, passed: bool | None
) -> CaseResult:
    """`checked` with one more failure of the whole reply (no call, no path)."""
    failure = Failure(call=None, kind=kind, path="", message=message)
    return checked.model_copy(update={"passed": passed, "failures": (*checked.failures, failure)})


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
