"""The judge pipeline: deterministic checks first, then rubric questions to the judge model,
with a persistent cache, bounded concurrency, self-consistency samples and provenance."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable, Container, Iterable
from pathlib import Path
from typing import Any, Literal

import orjson
from jinja2 import TemplateError
from pydantic import ValidationError

from judge._errors import CaseError, JudgeError
from judge.cases._calls import ShapeError
from judge.cases._case import Case
from judge.cases._files import default_cache_dir
from judge.cases._loading import iter_cases
from judge.cases._match import Match
from judge.checks._check import check_case, invalid_case_result
from judge.checks._env import EnvironmentFactory
from judge.checks._grounding import ungrounded_values
from judge.checks._outcome import (
    DEFAULT_SEED,
    JudgeOutcome,
    Provenance,
    RubricRef,
    TrajectoryVerdict,
    Usage,
)
from judge.checks._result import CaseResult, CheckResults
from judge.checks._structure import SchemaCache
from judge.endpoints._client import (
    ChatClient,
    JudgeRequestError,
    ResponseFormat,
    rejects_structured_output,
    serving,
)
from judge.endpoints._endpoint import resolve_endpoint
from judge.endpoints._retry import RetryPolicy
from judge.judging._cache import VerdictCache, cache_key
from judge.judging._decide import (
    agreement_with_checks,
    majority,
    majority_arguments,
)
from judge.judging._parallel import in_parallel
from judge.judging._questions import Question, Questions, parser, questions_for
from judge.judging._rubric import RubricSet, load_rubrics

MAX_REASKS = 2
FormatChoice = Literal["auto", "json_schema", "json_object", "tool"]
_FALLBACK: dict[str, ResponseFormat] = {"json_schema": "json_object", "json_object": "tool"}


class ReplyError(JudgeError):
    """The judge gave no usable verdict (after re-asking, or it refused)."""

    def __init__(self, message: str, raw: str | None) -> None:
        super().__init__(message)
        self.raw = raw


class Judge:
    """A fixed judge: endpoint, model, settings and rubrics, recorded with every verdict.

    With no endpoint configured (flags or environment), the embedded local model is used.
    Use as `async with Judge(...) as judge: results = await judge.grade(cases)`.
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        rubrics: str | Path | RubricSet | None = None,
        temperature: float = 0.0,
        seed: int | None = DEFAULT_SEED,
        samples: int = 1,
        concurrency: int = 8,
        cache_dir: str | Path | None = None,
        cache: bool = True,
        judge_broken: bool = False,
        reasoning_effort: str | None = None,
        extra_body: dict[str, Any] | None = None,
        response_format: FormatChoice = "auto",
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        trajectory: bool = False,
        match: Match | None = None,
        env: EnvironmentFactory | None = None,
    ) -> None:
        if samples < 1:
            raise JudgeError("samples must be at least 1")
        self._endpoint = resolve_endpoint(model=model, base_url=base_url, api_key=api_key)
        if isinstance(rubrics, RubricSet):
            self.rubrics = rubrics
        else:  # the embedded model gets the rubrics made for a small judge
            kind = "small" if self._endpoint is None and rubrics is None else "default"
            self.rubrics = load_rubrics(rubrics, kind=kind)
        self.temperature = temperature
        self.seed = seed
        self.samples = samples
        self.judge_broken = judge_broken
        self.match = match
        self.env = env
        self.trajectory = trajectory and self.rubrics.trajectory is not None
        """Also judge the whole path of calls with the trajectory rubric."""
        self.reasoning_effort = reasoning_effort
        self.extra_body = dict(extra_body or {})
        self._format_choice = response_format
        self._mode: ResponseFormat = "json_schema" if response_format == "auto" else response_format
        self._concurrency = concurrency
        self._timeout = timeout
        self._retry = retry
        self._cache = VerdictCache(cache_dir or default_cache_dir()) if cache else None
        self._client: ChatClient | None = None
        self._client_lock = asyncio.Lock()
        self._schemas = SchemaCache()
        self._provenance: dict[ResponseFormat, Provenance] = {}
        self.trusted: bool | None = None
        """Set from a calibration record: False when its gate was overridden."""

    # -- identity ---------------------------------------------------------------------------

    @property
    def model(self) -> str:
        if self._endpoint is None:
            from judge.endpoints._local import LOCAL_MODEL_NAME

            return LOCAL_MODEL_NAME
        return self._endpoint.model

    @property
    def endpoint_label(self) -> str:
        """The endpoint as recorded in provenance: its URL, or `embedded` for the local model."""
        return "embedded" if self._endpoint is None else self._endpoint.base_url

    def provenance(self, mode: ResponseFormat | None = None) -> Provenance:
        """The judge as recorded with a verdict (with the structured-output format in use).
        Built once per format: it goes with every case and into every cache key."""
        mode = mode or self._mode
        if mode not in self._provenance:
            self._provenance[mode] = Provenance(
                model=self.model,
                endpoint=self.endpoint_label,
                temperature=self.temperature,
                seed=self.seed,
                reasoning_effort=self.reasoning_effort,
                response_format=mode,
                extra=self.extra_body,
                rubrics=self._rubric_refs(),
            )
        return self._provenance[mode]

    def _rubric_refs(self) -> tuple[RubricRef, ...]:
        refs = self.rubrics.refs
        if self.trajectory and self.rubrics.trajectory is not None:
            refs = (*refs, self.rubrics.trajectory.ref)
        return refs

    def fingerprint(self) -> dict[str, Any]:
        """Everything about the judge that could change a selection or arguments verdict (no
        key, ever): what a calibration record is bound to. Its rubrics are those two
        dimensions' (what calibration measures; trajectory verdicts are never calibrated).
        The structured-output choice is recorded as asked (`auto` stays `auto`), so a run
        that steps down keeps its fingerprint."""
        found = self.provenance().model_dump(mode="json")
        found["rubrics"] = [r.model_dump(mode="json") for r in self.rubrics.refs]
        found["response_format"] = self._format_choice
        found["samples"] = self.samples
        found["judge_broken"] = self.judge_broken
        return found

    def differs_from(self, outcome: JudgeOutcome) -> list[str]:
        """The settings in which `outcome` was judged otherwise than this judge would judge
        it now (empty: the same judge): the provenance, and the number of samples."""
        if outcome.provenance is None:
            return ["provenance"]
        mine, theirs = (
            {**p.model_dump(mode="json"), "samples": n}
            for p, n in ((self.provenance(), self.samples), (outcome.provenance, outcome.samples))
        )
        if self._format_choice == "auto":  # any format it may step down to is this judge's
            mine.pop("response_format")
            theirs.pop("response_format")
        return sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))

    # -- lifecycle --------------------------------------------------------------------------

    async def __aenter__(self) -> Judge:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    async def _chat(self) -> ChatClient:
        async with self._client_lock:
            if self._client is None:
                endpoint, concurrency = await serving(self._endpoint, self._concurrency)
                self._client = ChatClient(
                    endpoint, concurrency=concurrency, timeout=self._timeout, policy=self._retry
                )
            return self._client

    # -- grading ----------------------------------------------------------------------------

    async def grade(
        self,
        cases: Any,
        *,
        skip: Container[str] = (),
        on_result: Callable[[CaseResult], None] | None = None,
    ) -> CheckResults:
        """Grade every case; results in the order the cases were given. `on_result` is
        called as each one finishes (in completion order)."""
        loaded = list(iter_cases(cases))
        results: dict[int, CaseResult] = {}
        async for index, result in self._run(enumerate(loaded), skip):
            results[index] = result
            if on_result is not None:
                on_result(result)
        return CheckResults(results[i] for i in sorted(results))

    async def iter_grade(
        self, cases: Any, *, skip: Container[str] = ()
    ) -> AsyncIterator[CaseResult]:
        """Grade cases as they stream in; yield each result as soon as it is ready."""
        async for _, result in self._run(enumerate(iter_cases(cases)), skip):
            yield result

    def _run(
        self, items: Iterable[tuple[int, Case | CaseError]], skip: Container[str]
    ) -> AsyncIterator[tuple[int, CaseResult]]:
        todo = ((i, item) for i, item in items if not (isinstance(item, Case) and item.id in skip))
        return in_parallel(todo, self._grade_item, self._concurrency)

    async def _grade_item(self, item: Case | CaseError) -> CaseResult:
        if isinstance(item, CaseError):
            return invalid_case_result(item)
        return await self.grade_case(item)

    async def grade_case(self, case: Case) -> CaseResult:
        """Check a case deterministically, then judge it."""
        checked = self.check(case)
        if case.response is None:
            outcome = JudgeOutcome(
                status="skipped",
                error="the case has no response to judge",
                samples=self.samples,
                provenance=self.provenance(),
            )
            return checked.model_copy(update={"judge": outcome})
        try:
            asked = self.questions(case, checked)
            selection, arguments, questions = asked.selection, asked.arguments, asked.questions
        except (TemplateError, ShapeError) as exc:  # a case a rubric cannot render
            outcome = JudgeOutcome(
                status="judge_error",
                samples=self.samples,
                provenance=self.provenance(),
                error=f"the rubric cannot render this case: {exc}",
            )
            return checked.model_copy(update={"judge": outcome})
        tally: Counter[str] = Counter()
        flips: list[float] = []
        trajectory: TrajectoryVerdict | None = None
        error: ReplyError | None = None
        for question in questions:
            try:
                answers = [
                    await self._ask(question, sample, tally) for sample in range(self.samples)
                ]
            except ReplyError as exc:
                error = error or exc
                continue
            if question.dimension == "selection":
                selection, flip = majority(answers)
                flips.append(flip)
            elif question.dimension == "trajectory":
                trajectory, flip = majority(answers)
                flips.append(flip)
            else:
                for verdict, flip in majority_arguments(answers):
                    arguments.append(verdict)
                    flips.append(flip)
        arguments.sort(key=lambda a: a.call)
        outcome = JudgeOutcome(
            status="judge_error" if error else "ok",
            selection=selection,
            arguments=tuple(arguments),
            trajectory=trajectory,
            samples=self.samples,
            flip_rate=(sum(flips) / len(flips)) if self.samples > 1 and flips else None,
            error=str(error) if error else None,
            raw=error.raw if error else None,
            usage=Usage(**tally),
            provenance=self.provenance(),
            trusted=self.trusted,
        )
        outcome = outcome.model_copy(update={"agreement": agreement_with_checks(checked, outcome)})
        return checked.model_copy(update={"judge": outcome})

    def check(self, case: Case) -> CaseResult:
        """The deterministic result, with the grounding evidence the judge is shown."""
        checked = check_case(case, schemas=self._schemas, match=self.match, env=self.env)
        return checked.model_copy(update={"ungrounded_values": ungrounded_values(case)})

    def questions(self, case: Case, checked: CaseResult) -> Questions:
        """The verdicts decided without asking, and the questions left for the judge."""
        return questions_for(
            case,
            checked,
            self.rubrics,
            judge_broken=self.judge_broken,
            trajectory=self.trajectory,
        )

    async def is_cached(self, question: Question, sample: int) -> bool:
        """Whether this sample of the question would be answered from the cache."""
        if self._cache is None:
            return False
        return await self._cache.get(self._key(question, sample, self._mode)) is not None

    def _key(self, question: Question, sample: int, mode: ResponseFormat) -> str:
        # The judge without its rubric list, and the one rubric asked: turning the trajectory
        # rubric on, or editing another dimension's rubric, keeps this question's answers.
        return cache_key(
            {
                "judge": self.provenance(mode).model_dump(mode="json", exclude={"rubrics"}),
                "rubric": question.rubric.ref.model_dump(mode="json"),
                "messages": question.messages,
                "schema": question.schema,
                "sample": sample,
            }
        )

    async def _ask(self, question: Question, sample: int, tally: Counter[str]) -> Any:
        """A validated answer to one question: from the cache, or asked (re-asked when the
        reply cannot be used, at most MAX_REASKS times)."""
        parse = parser(question)
        mode = self._mode
        key = self._key(question, sample, mode)
        if self._cache is not None:
            hit = await self._cache.get(key)
            if hit is not None:
                tally["cached"] += 1
                return parse(hit)
        chat = await self._chat()
        conversation = list(question.messages)
        problem, raw = "no reply", None
        for _ in range(1 + MAX_REASKS):
            try:
                reply = await chat.complete(
                    conversation,
                    schema=question.schema,
                    mode=mode,
                    temperature=self.temperature,
                    seed=None if self.seed is None else self.seed + sample,
                    reasoning_effort=self.reasoning_effort,
                    extra_body=self.extra_body,
                )
            except JudgeRequestError as exc:
                if self._format_choice == "auto" and rejects_structured_output(exc):
                    if mode in _FALLBACK and self._mode == mode:
                        self._mode = _FALLBACK[mode]  # the endpoint cannot do it: step down once
                    if self._mode != mode:
                        return await self._ask(question, sample, tally)
                raise ReplyError(str(exc), raw) from None
            tally.update(
                requests=1,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
            )
            raw = reply.text or reply.refusal
            if reply.refusal:
                raise ReplyError(f"the judge refused: {reply.refusal}", raw)
            if reply.finish_reason == "length":
                problem = "the reply was cut off (finish_reason: length)"
            elif not reply.text.strip():
                problem = "the reply was empty"
            else:
                try:
                    data = orjson.loads(reply.text)
                    answer = parse(data)
                except (orjson.JSONDecodeError, ValidationError, ValueError, TypeError) as exc:
                    problem = f"the reply does not fit the schema: {_short(exc)}"
                else:
                    if self._cache is not None:
                        await self._cache.put(key, data)
                    return answer
            conversation += [
                {"role": "assistant", "content": reply.text},
                {
                    "role": "user",
                    "content": f"That reply cannot be used: {problem}. Reply "
                    "again with only the JSON object asked for.",
                },
            ]
        raise ReplyError(f"no usable verdict after {1 + MAX_REASKS} tries: {problem}", raw)


def grade(cases: Any, **options: Any) -> CheckResults:
    """Grade `cases` with a `Judge(**options)`, for scripts (blocks until done)."""

    async def run() -> CheckResults:
        async with Judge(**options) as judge:
            return await judge.grade(cases)

    return asyncio.run(run())


def _short(exc: BaseException) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= 300 else text[:297] + "..."
