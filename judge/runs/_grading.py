"""Grading a stored record: tool calls read from the reply's text where asked, the
deterministic checks, and the judge when there is one; and `pool`, which runs jobs that end in
a record, `concurrency` at a time, and stops gently when an endpoint refuses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from judge.cases._calls import ShapeError, first_choice, normalise_response
from judge.cases._case import Case
from judge.cases._hash import case_hash, content_hash
from judge.cases._match import Match
from judge.cases._text_calls import with_text_calls
from judge.checks._check import check_case
from judge.checks._env import NOT_OBSERVED, EnvironmentFactory
from judge.checks._kinds import FailureKind
from judge.checks._mcp import McpServer
from judge.checks._result import CaseResult, Failure
from judge.checks._structure import SchemaCache
from judge.endpoints._client import JudgeEndpointError
from judge.judging._grade import Judge
from judge.runs._agent import final_answer, prompt_of
from judge.runs._comparable import NOTHING_OF_ITS_OWN, has_reference
from judge.runs._preflight import LOCAL
from judge.runs._records import RunRecord
from judge.runs._user_grade import FidelityQuestion, turn_verdicts, with_user_faults

T = TypeVar("T")
OnRecord = Callable[[RunRecord], None]


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
        self._fidelity: FidelityQuestion | None = None
        self.grading = _grading(self)
        """A digest of how this grader grades (each record's `graded_with`)."""

    async def aclose(self) -> None:
        """Release the client of the judge's question about simulated users, if one was made."""
        if self._fidelity is not None:
            await self._fidelity.aclose()

    def reads_text_calls(self, model: str) -> bool:
        return self.text_calls is None or model in self.text_calls

    async def grade(self, record: RunRecord, case: Case) -> RunRecord:
        """`record` graded against `case` (a failed request stays as it is), stamped with the
        case's hash and `grading`. Raises `Unjudged` when the judge's endpoint refuses."""
        stamp = {"case_hash": case_hash(case), "graded_with": self.grading}
        record = record.model_copy(update=stamp)
        if record.error is not None or (record.response is None and record.transcript is None):
            return record
        if record.transcript is not None:
            try:
                ran = await self._grade_run(record, case)
            except Unjudged as stop:  # what code finds of the user still holds
                stop.record = await with_user_faults(stop.record, case, None)
                raise
            return await self._user_side(ran, case)
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

    async def _user_side(self, record: RunRecord, case: Case) -> RunRecord:
        """A run with a simulated user: with a judge, its verdict on the reply to each user
        turn; then the user's mistakes (the judge's question too), found anew. The judge's
        endpoint refusing: `Unjudged`, the record kept with what code found."""
        if record.user is None or record.error is not None:
            return record
        record = record.model_copy(update={"turn_verdicts": ()})
        if self.judge is None or case.user is None:
            return await with_user_faults(record, case, None)
        if self._fidelity is None:
            self._fidelity = FidelityQuestion(self.judge)
        try:
            turns = tuple(await turn_verdicts(self.judge, record, case))
            return await with_user_faults(
                record.model_copy(update={"turn_verdicts": turns}), case, self._fidelity
            )
        except JudgeEndpointError as exc:
            raise Unjudged(await with_user_faults(record, case, None), exc) from exc

    async def _judged(self, record: RunRecord, graded: Case, checked: CaseResult) -> RunRecord:
        """`record` with the checks, and the judge's verdicts when there is a judge."""
        undecided = None if has_reference(graded) else NOTHING_OF_ITS_OWN
        if self.judge is None or graded.response is None:
            return record.graded(checked, undecided)
        try:
            judged = await self.judge.grade_case(graded, checked)  # checked once, here
        except JudgeEndpointError as exc:
            # The paid-for response is kept with its checks; a later `--judge` run judges it.
            raise Unjudged(record.graded(checked, undecided), exc) from exc
        assert judged.judge is not None  # grade_case always attaches an outcome
        return record.graded(judged, undecided)  # with the verdicts of its `$judge` values

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


def _grading(grader: Grader) -> str:
    """What grades a record beside its case, as one digest: the judge's fingerprint, the match
    settings, the environment (by name: its code is not hashed) and whose text calls are read."""
    judge, env = grader.judge, grader.env
    return content_hash(
        {
            "judge": None if judge is None else judge.fingerprint(),
            "match": None if grader.match is None else grader.match.model_dump(),
            "env": env.described() if isinstance(env, McpServer) else env,
            "text_calls": None if grader.text_calls is None else sorted(grader.text_calls),
        }
    )


def needs_judging(record: RunRecord) -> bool:
    """A stored response without a usable verdict (an agent run that never ended in text
    has nothing to judge)."""
    if record.error is not None or record.stop == "step_limit":
        return False
    return record.judge is None or record.judge.status == "judge_error"


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
