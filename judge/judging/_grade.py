"""The judge pipeline: deterministic checks first, then rubric questions to the judge model,
with a persistent cache, bounded concurrency, self-consistency samples and provenance."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable, Container, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

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
    AnswerVerdict,
    ArgumentVerdict,
    JudgeOutcome,
    Provenance,
    RubricRef,
    SelectionVerdict,
    TrajectoryVerdict,
    Usage,
)
from judge.checks._result import CaseResult, CheckResults
from judge.checks._structure import SchemaCache
from judge.endpoints._client import (
    ChatClient,
    JudgeRequestError,
    Reply,
    ResponseFormat,
    answer_body,
    complete_body,
    rejects_logprobs,
    rejects_structured_output,
    serving,
)
from judge.endpoints._endpoint import Endpoint, resolve_endpoint
from judge.endpoints._retry import RetryPolicy
from judge.judging._cache import VerdictCache, cache_key
from judge.judging._confidence import answer_distribution, label_distributions
from judge.judging._decide import (
    abstained,
    agreement_with_checks,
    majority,
    majority_arguments,
    selection_confidence,
    taken_action,
)
from judge.judging._parallel import in_parallel
from judge.judging._probing import (
    ProbeChoice,
    ProbeReader,
    check_rubrics,
    decision_defaults,
    resolve_probe,
)
from judge.judging._questions import Question, Questions, parser, questions_for
from judge.judging._replies import ACTIONS
from judge.judging._rubric import Combine, Rubric, RubricSet, load_rubrics
from judge.judging._scored import (
    ANSWER_LOGPROBS,
    Ask,
    Fit,
    answer_verdict,
    argument_verdict,
    asks,
    platt,
    selection_verdict,
)

MAX_REASKS = 2
V = TypeVar("V", SelectionVerdict, ArgumentVerdict, AnswerVerdict)
TOP_LOGPROBS = 5
"""Alternatives asked for each token of a JSON verdict (the label's share is read from them)."""
_CONFIDENCE = "$confidence"  # where a cached reply keeps its verdicts' confidences
LOCAL_MAX_TOKENS = 768
"""The most a generated verdict of the embedded model may run to: a verdict takes a few
hundred tokens; a small model that loops stops there (cut off, so asked again) instead of
writing to the end of its context at a few tokens a second."""
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
        logprobs: bool = True,
        abstain_below: float | dict[str, float] | None = None,
        escalation: Judge | None = None,
        answers: bool = False,
        probe: ProbeChoice = "default",
    ) -> None:
        if samples < 1:
            raise JudgeError("samples must be at least 1")
        self._endpoint = resolve_endpoint(model=model, base_url=base_url, api_key=api_key)
        if isinstance(rubrics, RubricSet):
            self.rubrics = rubrics
        else:  # the embedded model gets the scored rubrics made for it
            kind = "quick" if self._endpoint is None and rubrics is None else "default"
            self.rubrics = load_rubrics(rubrics, kind=kind)
        self.temperature = temperature
        self.seed = seed
        self.samples = samples
        self.judge_broken = judge_broken
        self.match = match
        self.env = env
        self.trajectory = trajectory and self.rubrics.trajectory is not None
        """Also judge the whole path of calls with the trajectory rubric."""
        self.answers = answers and self.rubrics.answer is not None
        """Also judge the text a response ends with, with the answer rubric."""
        self.reasoning_effort = reasoning_effort
        self.extra_body = dict(extra_body or {})
        self._format_choice = response_format
        self._logprobs_asked: int | None = TOP_LOGPROBS if logprobs else None
        self._logprobs = self._logprobs_asked
        """Alternatives asked per token; None once the endpoint refuses them (learnt once)."""
        self._mode: ResponseFormat = "json_schema" if response_format == "auto" else response_format
        self._concurrency = concurrency
        self._timeout = timeout
        self._retry = retry
        self._cache = VerdictCache(cache_dir or default_cache_dir()) if cache else None
        self._client: ChatClient | None = None
        self._client_lock = asyncio.Lock()
        self._refused: dict[str, str] = {}
        self._offline: str | None = None
        self._schemas = SchemaCache()
        self._provenance: dict[tuple[ResponseFormat, int | None], Provenance] = {}
        self.trusted: bool | None = None
        """Set from a calibration record: False when its gate was overridden."""
        if isinstance(abstain_below, float | int):
            abstain_below = dict.fromkeys(
                ("selection", "arguments", "answer"), float(abstain_below)
            )
        self.abstain_below: dict[str, float] | None = abstain_below
        """Per dimension: verdicts less sure than this (or with no confidence at all) become
        `uncertain`. Trajectory verdicts are never calibrated, so never abstained."""
        self.escalation = escalation
        """A second judge that answers again the verdicts this one abstained from."""
        self._fits: dict[str, Fit] = {}
        self._platt: dict[str, tuple[float, float]] = {}
        self.probe = resolve_probe(
            probe, embedded=self._endpoint is None, own_rubrics=rubrics is None
        )
        """The probe that decides the scored verdicts (None: the rubrics' weights decide)."""
        if self.probe is not None:
            check_rubrics(self.probe, self.rubrics)
        self._probing = ProbeReader(self.probe, self._cache) if self.probe else None

    # -- identity ---------------------------------------------------------------------------

    @property
    def probe_reader(self) -> ProbeReader | None:
        """How this judge reads hidden states for its probe (None: no probe)."""
        return self._probing

    @property
    def verdict_cache(self) -> VerdictCache | None:
        """The cache of answers and verdicts (None: `cache=False`)."""
        return self._cache

    @property
    def endpoint(self) -> Endpoint | None:
        """The endpoint asked (None: the embedded model)."""
        return self._endpoint

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

    def provenance(
        self, mode: ResponseFormat | None = None, logprobs: int | None | Literal["now"] = "now"
    ) -> Provenance:
        """The judge as recorded with a verdict (with the structured-output format and the
        logprobs in use, unless given). Built once per pair: it goes with every case and into
        every cache key."""
        mode = mode or self._mode
        top = self._logprobs if logprobs == "now" else logprobs
        if (mode, top) not in self._provenance:
            self._provenance[mode, top] = Provenance(
                model=self.model,
                endpoint=self.endpoint_label,
                temperature=self.temperature,
                seed=self.seed,
                reasoning_effort=self.reasoning_effort,
                response_format=mode,
                extra=self.extra_body,
                rubrics=self._rubric_refs(),
                logprobs=top,
                probe=self.probe.ref if self.probe is not None else None,
            )
        return self._provenance[mode, top]

    def _rubric_refs(self) -> tuple[RubricRef, ...]:
        refs = self.rubrics.refs
        if self.trajectory and self.rubrics.trajectory is not None:
            refs = (*refs, self.rubrics.trajectory.ref)
        if self.answers and self.rubrics.answer is not None:
            refs = (*refs, self.rubrics.answer.ref)
        return refs

    def fingerprint(self, answers: bool | None = None) -> dict[str, Any]:
        """Everything about the judge that could change a selection or arguments verdict (no
        key, ever): what a calibration record is bound to. Its rubrics are those two
        dimensions' (what calibration measures; trajectory verdicts are never calibrated), and
        the answer rubric's (`answer_rubric`) when answers are judged, or `answers` says so.
        The structured-output choice is recorded as asked (`auto` stays `auto`), so a run
        that steps down keeps its fingerprint; so are logprobs, so a run whose endpoint
        refuses them keeps it too."""
        found = _judge_fields(self.provenance(logprobs=self._logprobs_asked))
        found["rubrics"] = [r.model_dump(mode="json") for r in self.rubrics.refs]
        found["response_format"] = self._format_choice
        found["samples"] = self.samples
        found["judge_broken"] = self.judge_broken
        covered = self.answers if answers is None else answers  # None: as this judge judges
        if covered and self.rubrics.answer is not None:
            found["answer_rubric"] = self.rubrics.answer.ref.model_dump(mode="json")
        if self.escalation is not None:  # a cascade is one judge: it covers both
            found["escalation"] = self.escalation.fingerprint()
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
        for fields in (mine, theirs):  # logprobs change a verdict's confidence, not its label
            fields.pop("logprobs", None)
            fields.pop("batch", None)  # where a reply came from changes nothing
        return sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))

    def calibrate(
        self,
        dimension: str,
        *,
        fit: Fit | None = None,
        platt: tuple[float, float] | None = None,
    ) -> None:
        """Apply what a calibration fitted for this judge to one dimension's verdicts: a
        scored rubric's weights and threshold, or a map of the confidence (Platt: P(label
        right) = sigmoid(a x logit(confidence) + b))."""
        if fit is not None:
            self._fits[dimension] = fit
        if platt is not None:
            self._platt[dimension] = platt

    def _recalibrated(self, dimension: str, verdict: V) -> V:
        ab = self._platt.get(dimension)
        if ab is None or verdict.confidence is None or verdict.source == "derived":
            return verdict
        return verdict.model_copy(update={"confidence": platt(ab, verdict.confidence)})

    # -- lifecycle --------------------------------------------------------------------------

    async def __aenter__(self) -> Judge:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._probing is not None:
            await self._probing.aclose()
        if self.escalation is not None:
            await self.escalation.aclose()
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    async def _chat(self) -> ChatClient:
        async with self._client_lock:
            if self._client is None:
                endpoint, concurrency, timeout = await serving(
                    self._endpoint, self._concurrency, self._timeout
                )
                self._client = ChatClient(
                    endpoint, concurrency=concurrency, timeout=timeout, policy=self._retry
                )
            return self._client

    def refuse(self, refused: dict[str, str], *, offline: str | None = None) -> None:
        """Never ask the requests of these cache keys (that case gets `judge_error` with the
        reason), nor, with `offline`, any request the cache does not answer: after a batch,
        what must not be asked online."""
        self._refused, self._offline = dict(refused), offline

    def _refusal(self, key: str) -> None:
        why = self._refused.get(key) or self._offline
        if why is not None:
            raise ReplyError(why, None)

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

    async def grade_case(self, case: Case, checked: CaseResult | None = None) -> CaseResult:
        """Check a case deterministically (unless `checked` holds its checks already, as a
        runner's agent run is checked against the state it ended in), then judge it."""
        checked = (
            self.check(case)
            if checked is None
            else checked.model_copy(update={"ungrounded_values": ungrounded_values(case)})
        )
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
        answered = await self._answered(questions, tally)
        if answered.selection is not None:
            selection = answered.selection
        arguments = sorted([*arguments, *answered.arguments], key=lambda a: a.call)
        trajectory, flips, error = answered.trajectory, answered.flips, answered.error
        answer = answered.answer
        if self._platt:
            arguments = [self._recalibrated("arguments", a) for a in arguments]
            if selection is not None:
                selection = self._recalibrated("selection", selection)
            if answer is not None:
                answer = self._recalibrated("answer", answer)
        cuts = self.abstain_below or {}
        if "answer" in cuts and answer is not None:
            answer = abstained(answer, cuts["answer"])
        if "arguments" in cuts:
            arguments = [abstained(a, cuts["arguments"]) for a in arguments]
        if "selection" in cuts and selection is not None:
            selection = abstained(selection, cuts["selection"])
        escalated = Escalated()
        if self.escalation is not None and error is None:
            escalated = await self.escalation.reask(case, checked, selection, arguments, answer)
            selection, arguments, answer = (
                escalated.selection,
                escalated.arguments,
                escalated.answer,
            )
        outcome = JudgeOutcome(
            status="judge_error" if error else "ok",
            selection=selection,
            arguments=tuple(arguments),
            trajectory=trajectory,
            answer=answer,
            samples=self.samples,
            flip_rate=(sum(flips) / len(flips)) if self.samples > 1 and flips else None,
            error=str(error) if error else None,
            raw=error.raw if error else None,
            usage=Usage(**tally),
            provenance=self.provenance(),
            trusted=self.trusted,
            escalated=escalated.count,
            escalation_usage=Usage(**escalated.tally) if escalated.tally else None,
            escalation=self.escalation.provenance() if self.escalation is not None else None,
        )
        outcome = outcome.model_copy(update={"agreement": agreement_with_checks(checked, outcome)})
        return checked.model_copy(update={"judge": outcome})

    async def _answered(self, questions: list[Question], tally: Counter[str]) -> Answered:
        """The verdicts the judge gives to these questions (the first error, if any)."""
        found = Answered()
        hidden = None
        if self._probing is not None:  # asked first: the answer tokens reuse its prompt
            try:
                hidden, asked = await self._probing.hidden(questions)
            except JudgeError as exc:
                found.error = ReplyError(str(exc), None)
                return found
            tally.update(requests=int(asked))
        for question in questions:
            if question.rubric.scored:  # one greedy token per question: samples cannot differ
                try:
                    scored = await self._ask_scored(question, tally, hidden)
                except ReplyError as exc:
                    found.error = found.error or exc
                    continue
                if isinstance(scored, SelectionVerdict):
                    found.selection = scored
                elif isinstance(scored, AnswerVerdict):
                    found.answer = scored
                else:
                    found.arguments.extend(scored)
                continue
            try:
                answers = [
                    await self._ask(question, sample, tally) for sample in range(self.samples)
                ]
            except ReplyError as exc:
                found.error = found.error or exc
                continue
            if question.dimension == "selection":
                found.selection, flip = majority(answers)
                found.flips.append(flip)
            elif question.dimension == "trajectory":
                found.trajectory, flip = majority(answers)
                found.flips.append(flip)
            elif question.dimension == "answer":
                found.answer, flip = majority(answers)
                found.flips.append(flip)
            else:
                for verdict, flip in majority_arguments(answers):
                    found.arguments.append(verdict)
                    found.flips.append(flip)
        return found

    async def reask(
        self,
        case: Case,
        checked: CaseResult,
        selection: SelectionVerdict | None,
        arguments: list[ArgumentVerdict],
        answer: AnswerVerdict | None = None,
    ) -> Escalated:
        """As the escalation judge: answer again exactly the `uncertain` verdicts of another
        judge (only the questions they need), keeping this judge's verdicts for them. A
        verdict it cannot give stays uncertain."""
        unsure_selection = selection is not None and selection.verdict == "uncertain"
        unsure_calls = {a.call for a in arguments if a.verdict == "uncertain"}
        unsure_answer = answer is not None and answer.verdict == "uncertain"
        if not unsure_selection and not unsure_calls and not unsure_answer:
            return Escalated(selection, arguments, answer=answer)
        try:
            asked = questions_for(
                case,
                checked,
                self.rubrics,
                judge_broken=self.judge_broken,
                answers=unsure_answer,
            ).questions
        except (TemplateError, ShapeError):
            return Escalated(selection, arguments, answer=answer)
        needed = [
            q
            for q in asked
            if (q.dimension == "selection" and unsure_selection)
            or (q.dimension == "arguments" and unsure_calls & set(q.calls))
            or (q.dimension == "answer" and unsure_answer)
        ]
        tally: Counter[str] = Counter()
        answered = await self._answered(needed, tally)
        count = 0
        if unsure_selection and answered.selection is not None:
            selection = answered.selection.model_copy(update={"escalated": True})
            count += 1
        by_call = {a.call: a for a in answered.arguments if a.call in unsure_calls}
        count += len(by_call)
        arguments = [
            by_call[a.call].model_copy(update={"escalated": True}) if a.call in by_call else a
            for a in arguments
        ]
        if unsure_answer and answered.answer is not None:
            answer = answered.answer.model_copy(update={"escalated": True})
            count += 1
        return Escalated(selection, arguments, count, tally, answer)

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
            answers=self.answers,
        )

    async def is_cached(self, question: Question, sample: int) -> bool:
        """Whether this sample of the question would be answered from the cache."""
        if self._cache is None:
            return False
        return await self._cache.get(self._key(question, sample, self._mode)) is not None

    def _key(
        self,
        question: Question,
        sample: int,
        mode: ResponseFormat,
        logprobs: int | None | Literal["now"] = "now",
    ) -> str:
        # The judge without its rubric list, and the one rubric asked: turning the trajectory
        # rubric on, or editing another dimension's rubric, keeps this question's answers.
        return cache_key(
            {
                "judge": _judge_fields(
                    self.provenance(mode, logprobs), exclude={"rubrics", "probe"}
                ),
                "rubric": question.rubric.ref.model_dump(mode="json"),
                "messages": question.messages,
                "schema": question.schema,
                "sample": sample,
            }
        )

    async def _ask_scored(
        self, question: Question, tally: Counter[str], hidden: Any = None
    ) -> SelectionVerdict | AnswerVerdict | list[ArgumentVerdict]:
        """A scored rubric's verdicts: each of its questions answered with one token, decided
        by the probe on the case's hidden state where the judge has one."""
        rubric = question.rubric
        found: dict[int | None, dict[str, float]] = {}
        for ask in asks(rubric, question.messages, question.calls):
            found.setdefault(ask.call, {})[ask.id] = await self._answer(rubric, ask, tally)
        fit = self._fits.get(question.dimension)
        counts = dict(question.counts)
        branch = "called" if question.calls else "not_called"

        def probed(features: dict[str, float]) -> float | None:
            if self._probing is None:
                return None
            return self._probing.probability(question.dimension, branch, hidden, features)

        if question.dimension in ("answer", "selection"):
            answers = found.get(None, {})
            p = probed({**answers, **counts})
            decide = answer_verdict if question.dimension == "answer" else selection_verdict
            return decide(rubric, answers, bool(question.calls), fit, counts, p)
        verdicts = []
        for call, evidence in zip(question.calls, question.call_counts, strict=True):
            answers, counted = found.get(call, {}), dict(evidence)
            p = probed({**answers, **counted})
            verdicts.append(argument_verdict(rubric, call, answers, counted, fit, p))
        return verdicts

    def decision_defaults(self) -> dict[str, dict[str, Combine]]:
        """Per scored dimension, what a calibration refits from, per branch: the probe's
        P(correct) where it decides, else the rubric's combination."""
        return decision_defaults(self.rubrics, self._probing)

    async def is_answered(self, rubric: Rubric, ask: Ask) -> bool:
        """Whether a scored rubric's question would be answered from the cache."""
        if self._cache is None:
            return False
        return await self._cache.get(self._answer_key(rubric, ask)) is not None

    def _answer_key(self, rubric: Rubric, ask: Ask) -> str:
        """An answer's key: the judge (model, endpoint, seed, provider fields) and exactly
        what was sent. Not the rubric's hash: editing its weights re-asks nothing."""
        return cache_key(
            {
                "judge": _judge_fields(
                    self.provenance(),
                    exclude={"rubrics", "response_format", "temperature", "logprobs", "probe"},
                ),
                "messages": ask.messages,
                "answers": list(rubric.answers),
                "top_logprobs": ANSWER_LOGPROBS,
            }
        )

    async def _answer(self, rubric: Rubric, ask: Ask, tally: Counter[str]) -> float:
        """The probability of the rubric's first answer word, from the cache or asked."""
        key = self._answer_key(rubric, ask)
        if self._cache is not None:
            hit = await self._cache.get(key)
            if isinstance(hit, dict) and isinstance(hit.get("p"), float):
                tally["cached"] += 1
                return float(hit["p"])
        self._refusal(key)
        chat = await self._chat()
        needs = "a scored rubric needs an endpoint that returns token logprobs"
        try:
            reply = await chat.send(self._answer_body(chat.endpoint.model, ask), None)
        except JudgeRequestError as exc:
            message = f"{exc} ({needs})" if rejects_logprobs(exc) else str(exc)
            raise ReplyError(message, None) from None
        tally.update(
            requests=1,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cached_prompt_tokens=reply.cached_tokens or 0,
        )
        p = answer_share(rubric, ask, reply)
        if self._cache is not None:
            await self._cache.put(key, {"p": p})
        return p

    async def _ask(self, question: Question, sample: int, tally: Counter[str]) -> Any:
        """A validated answer to one question: from the cache, or asked (re-asked when the
        reply cannot be used, at most MAX_REASKS times)."""
        parse = parser(question)
        mode, asked = self._mode, self._logprobs  # as this request asks, whatever others learn
        key = self._key(question, sample, mode, asked)
        if self._cache is not None:
            hit = await self._cache.get(key)
            if hit is not None:
                tally["cached"] += 1
                confidences = hit.pop(_CONFIDENCE, None) if isinstance(hit, dict) else None
                return _with_confidences(parse(hit), confidences)
        self._refusal(key)
        chat = await self._chat()
        conversation = list(question.messages)
        problem, raw = "no reply", None
        for _ in range(1 + MAX_REASKS):
            try:
                body = self._verdict_body(
                    chat.endpoint.model, conversation, question, sample, mode, asked
                )
                reply = await chat.send(body, mode)
            except JudgeRequestError as exc:
                if asked is not None and rejects_logprobs(exc):
                    self._logprobs = None  # the endpoint gives none: ask without, once per run
                    return await self._ask(question, sample, tally)
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
                cached_prompt_tokens=reply.cached_tokens or 0,
            )
            raw = reply.text or reply.refusal
            try:
                answer, data, confidences = read_verdict(question, reply, parse)
            except Unusable as exc:
                problem = str(exc)
            else:
                await self._keep(key, data, confidences, asked)
                return _with_confidences(answer, confidences)
            conversation += [
                {"role": "assistant", "content": reply.text},
                {
                    "role": "user",
                    "content": f"That reply cannot be used: {problem}. Reply "
                    "again with only the JSON object asked for.",
                },
            ]
        raise ReplyError(f"no usable verdict after {1 + MAX_REASKS} tries: {problem}", raw)

    def _answer_body(self, model: str, ask: Ask) -> dict[str, Any]:
        """What a scored rubric's one-token question sends (online, or in a batch)."""
        return answer_body(
            model,
            ask.messages,
            logprobs=ANSWER_LOGPROBS,
            seed=self.seed,
            extra_body=self.extra_body,
        )

    def _verdict_body(
        self,
        model: str,
        conversation: list[dict[str, str]],
        question: Question,
        sample: int,
        mode: ResponseFormat,
        logprobs: int | None,
    ) -> dict[str, Any]:
        """What asking for a verdict sends (online, or in a batch)."""
        body = complete_body(
            model,
            conversation,
            schema=question.schema,
            mode=mode,
            temperature=self.temperature,
            seed=None if self.seed is None else self.seed + sample,
            reasoning_effort=self.reasoning_effort,
            extra_body=self.extra_body,
            logprobs=logprobs,
        )
        if self._endpoint is None:
            body.setdefault("max_tokens", LOCAL_MAX_TOKENS)
        return body

    async def _keep(
        self, key: str, data: Any, confidences: list[float | None], asked: int | None
    ) -> None:
        if self._cache is not None:
            if asked is not None and isinstance(data, dict):
                data = {**data, _CONFIDENCE: confidences}
            await self._cache.put(key, data)

    async def accept(self, asked: Asked, reply: Reply) -> str | None:
        """Take a reply obtained elsewhere (a batch's output) for a request `requests` listed,
        as if this judge had asked it: validated exactly as online and, when usable, cached
        under the request's key. Returns why it cannot be used (None: kept)."""
        if self._cache is None:
            return "no verdict cache to keep the reply in"
        try:
            if asked.ask is not None:
                await self._cache.put(
                    asked.key, {"p": answer_share(asked.rubric, asked.ask, reply)}
                )
                return None
            _, data, confidences = read_verdict(asked.question, reply, parser(asked.question))
        except (Unusable, ReplyError) as exc:
            return str(exc)
        await self._keep(asked.key, data, confidences, asked.logprobs)
        return None

    async def requests(self, case: Case) -> list[Asked]:
        """The requests grading `case` would send now, each with its cache key and whether
        the cache answers it already: what a batch submits (the uncached ones)."""
        if case.response is None or self._endpoint is None:
            return []
        try:
            questions = self.questions(case, self.check(case)).questions
        except (TemplateError, ShapeError):  # grading records `judge_error`, asking nothing
            return []
        model, found = self._endpoint.model, []
        for question in questions:
            rubric = question.rubric
            if rubric.scored:
                for ask in asks(rubric, question.messages, question.calls):
                    key = self._answer_key(rubric, ask)
                    body = self._answer_body(model, ask)
                    cached = await self.is_answered(rubric, ask)
                    found.append(Asked(key, body, None, question, rubric, cached, ask))
                continue
            for sample in range(self.samples):
                key = self._key(question, sample, self._mode, self._logprobs)
                body = self._verdict_body(
                    model, list(question.messages), question, sample, self._mode, self._logprobs
                )
                cached = await self.is_cached(question, sample)
                found.append(
                    Asked(key, body, self._mode, question, rubric, cached, logprobs=self._logprobs)
                )  # fmt: skip
        return found


@dataclass(frozen=True)
class Asked:
    """One request grading would send: its cache key (a stable id), its body, and what it
    asks (a scored rubric's one-token question `ask`, or a verdict of `mode`)."""

    key: str
    body: dict[str, Any]
    mode: ResponseFormat | None
    question: Question
    rubric: Rubric
    cached: bool
    ask: Ask | None = None
    logprobs: int | None = None


class Unusable(ValueError):
    """A reply that cannot be used as a verdict (cut off, empty, off the schema): asked again."""


def read_verdict(
    question: Question, reply: Reply, parse: Callable[[Any], Any]
) -> tuple[Any, Any, list[float | None]]:
    """The verdict a reply gives (with its data and confidences). A refusal is a
    `ReplyError`; a reply that could be better asked again is `Unusable`."""
    if reply.refusal:
        raise ReplyError(f"the judge refused: {reply.refusal}", reply.text or reply.refusal)
    if reply.finish_reason == "length":
        raise Unusable("the reply was cut off (finish_reason: length)")
    if not reply.text.strip():
        raise Unusable("the reply was empty")
    try:
        data = orjson.loads(reply.text)
        answer = parse(data)
    except (orjson.JSONDecodeError, ValidationError, ValueError, TypeError) as exc:
        raise Unusable(f"the reply does not fit the schema: {_short(exc)}") from None
    return answer, data, _confidences(question, reply, data, answer)


def answer_share(rubric: Rubric, ask: Ask, reply: Reply) -> float:
    """The probability a one-token reply gives the rubric's first answer word."""
    shares = answer_distribution(reply.tokens, rubric.answers)
    if shares is None:
        words = " or ".join(rubric.answers)
        raise ReplyError(
            f"question {ask.id!r}: the reply gives no probability to {words} (a scored rubric "
            "needs an endpoint that returns token logprobs)",
            reply.text,
        )
    return shares[rubric.answers[0]]


@dataclass
class Answered:
    """What a judge answered to a case's questions."""

    selection: SelectionVerdict | None = None
    arguments: list[ArgumentVerdict] = field(default_factory=list)
    trajectory: TrajectoryVerdict | None = None
    answer: AnswerVerdict | None = None
    flips: list[float] = field(default_factory=list)
    error: ReplyError | None = None


@dataclass
class Escalated:
    """The verdicts after escalation, how many the escalation judge decided, at what cost."""

    selection: SelectionVerdict | None = None
    arguments: list[ArgumentVerdict] = field(default_factory=list)
    count: int = 0
    tally: Counter[str] = field(default_factory=Counter)
    answer: AnswerVerdict | None = None


def grade(cases: Any, **options: Any) -> CheckResults:
    """Grade `cases` with a `Judge(**options)`, for scripts (blocks until done)."""

    async def run() -> CheckResults:
        async with Judge(**options) as judge:
            return await judge.grade(cases)

    return asyncio.run(run())


def _judge_fields(provenance: Provenance, exclude: set[str] | None = None) -> dict[str, Any]:
    """The provenance as a key or a fingerprint holds it: without `logprobs` when they are not
    asked, nor `probe` when none decides, so the keys and fingerprints of a judge without
    them are those it always had."""
    found = provenance.model_dump(mode="json", exclude={"batch", *(exclude or ())})
    for name in ("logprobs", "probe"):
        if found.get(name) is None:
            found.pop(name, None)
    return found


Verdicts = SelectionVerdict | TrajectoryVerdict | list[ArgumentVerdict]


def _confidences(
    question: Question, reply: Reply, data: Any, answer: Verdicts
) -> list[float | None]:
    """Each verdict's probability, read from the reply's token logprobs (None where the reply
    has none or the label cannot be located in it)."""
    verdicts = answer if isinstance(answer, list) else [answer]
    if not reply.tokens:
        return [None] * len(verdicts)
    labels = question.rubric.labels
    if isinstance(answer, SelectionVerdict) and question.rubric.decide_action:
        needed = _only(label_distributions(reply.text, reply.tokens, "needed_action", ACTIONS))
        verdict = _only(label_distributions(reply.text, reply.tokens, "verdict", labels))
        taken = taken_action(data, called=bool(question.calls))
        return [selection_confidence(needed, verdict, taken, answer.verdict)]
    found = label_distributions(reply.text, reply.tokens, "verdict", labels)
    if len(found) != len(verdicts):
        return [None] * len(verdicts)
    return [None if d is None else d.get(v.verdict) for d, v in zip(found, verdicts, strict=True)]


def _only(found: list[dict[str, float] | None]) -> dict[str, float] | None:
    return found[0] if len(found) == 1 else None


def _with_confidences(answer: Any, confidences: list[float | None] | None) -> Any:
    """The verdicts with their confidence from logprobs set (None past the confidences
    given: a cached reply from before may hold none)."""
    verdicts = answer if isinstance(answer, list) else [answer]
    known = confidences or []
    marked = []
    for index, verdict in enumerate(verdicts):
        c = known[index] if index < len(known) else None
        source = "none" if c is None else "logprobs"
        marked.append(verdict.model_copy(update={"confidence": c, "confidence_source": source}))
    return marked if isinstance(answer, list) else marked[0]


def _short(exc: BaseException) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= 300 else text[:297] + "..."
