"""The judge: deterministic checks first, then rubric questions to the judge model, with a
persistent cache, bounded concurrency, self-consistency samples and provenance.

`Judge` is the facade over the judging layer's rooms: what it is (`_identity`: provenance,
keys, bodies), what it asks (`_questions`), asking (`_asker`), reading a reply (`_reading`),
answering a case's questions (`_answering`) and assembling its outcome (`_assemble`)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable, Container, Iterable
from pathlib import Path
from typing import Any, Literal

from jinja2 import TemplateError

from judge._errors import CaseError, JudgeError
from judge.cases._calls import ShapeError
from judge.cases._case import Case
from judge.cases._files import default_cache_dir
from judge.cases._hash import case_hash, content_hash
from judge.cases._loading import iter_cases
from judge.cases._match import Match
from judge.cases._shared_tools import SharedTools
from judge.checks._check import invalid_case_result
from judge.checks._env import EnvironmentFactory
from judge.checks._evidence import ungrounded_values
from judge.checks._outcome import (
    DEFAULT_SEED,
    AnswerVerdict,
    ArgumentVerdict,
    JudgeOutcome,
    Provenance,
    SelectionVerdict,
)
from judge.checks._result import CaseResult, CheckResults
from judge.checks._verdict import with_judge
from judge.endpoints._client import Reply, ResponseFormat
from judge.endpoints._endpoint import Endpoint, resolve_endpoint
from judge.endpoints._retry import RetryPolicy
from judge.judging._aligned import (
    AlignedSpec,
    aligned_defaults,
    aligned_fits,
    as_aligned,
    spec_sha256,
)
from judge.judging._answering import Answering
from judge.judging._asker import Asked, Asker, FormatChoice
from judge.judging._assemble import Escalated, Judged, Verdicts, outcome, reask, settled
from judge.judging._cache import VerdictCache
from judge.judging._identity import Identity, differences, judge_fields
from judge.judging._judged_values import with_value_verdicts
from judge.judging._parallel import in_parallel
from judge.judging._probing import (
    ProbeChoice,
    ProbeReader,
    check_rubrics,
    decision_defaults,
    resolve_probe,
)
from judge.judging._questions import Question, Questioner, Questions
from judge.judging._reading import ReplyError
from judge.judging._requests import Requests
from judge.judging._rubric import Combine, Rubric, RubricSet, load_rubrics
from judge.judging._scored import Ask, Fit

__all__ = ["Judge", "ReplyError", "grade"]


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
        aligned: str | Path | AlignedSpec | None = None,
    ) -> None:
        if samples < 1:
            raise JudgeError("samples must be at least 1")
        self._endpoint = resolve_endpoint(model=model, base_url=base_url, api_key=api_key)
        self.rubrics = _rubric_set(rubrics, embedded=self._endpoint is None)
        self.temperature, self.seed, self.samples = temperature, seed, samples
        self.judge_broken, self.match, self.env = judge_broken, match, env
        self.trajectory = trajectory and self.rubrics.trajectory is not None
        """Also judge the whole path of calls with the trajectory rubric."""
        self.answers = answers and self.rubrics.answer is not None
        """Also judge the text a response ends with, with the answer rubric."""
        self.reasoning_effort = reasoning_effort
        self.aligned = as_aligned(aligned)
        """What the user's labels add to each dimension's prompt (`judge align`)."""
        self.extra_body = dict(extra_body or {})
        self._format_choice = response_format
        self._concurrency = concurrency
        self._cache = VerdictCache(cache_dir or default_cache_dir()) if cache else None
        self.trusted: bool | None = None
        """Set from a calibration record: False when its gate was overridden."""
        self.abstain_below = _thresholds(abstain_below)
        """Per dimension: verdicts less sure than this (or with no confidence at all) become
        `uncertain`. Trajectory verdicts are never calibrated, so never abstained."""
        self.escalation = escalation
        """A second judge that answers again the verdicts this one abstained from."""
        self._platt: dict[str, tuple[float, float]] = {}
        self.probe = resolve_probe(probe, embedded=self._endpoint is None,
                                   own_rubrics=rubrics is None, aligned=self.aligned)  # fmt: skip
        """The probe that decides the scored verdicts (None: the rubrics' weights decide)."""
        if self.probe is not None:
            check_rubrics(self.probe, self.rubrics)
        self._probing = ProbeReader(self.probe, self._cache) if self.probe else None
        self._fits: dict[str, Fit] = aligned_fits(self.aligned, self.rubrics, self._probing)
        self._identity = _identity_of(self)
        self._asker = Asker(
            self._identity,
            self._cache,
            response_format=response_format,
            logprobs=logprobs,
            concurrency=concurrency,
            timeout=timeout,
            retry=retry,
        )
        self._answering = Answering(self._asker, samples, self._probing, self._fits)
        self._questioner = Questioner(
            self.rubrics, judge_broken, self.trajectory, self.answers, match, env, self.aligned
        )

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
        return self._identity.model

    @property
    def endpoint_label(self) -> str:
        """The endpoint as recorded in provenance: its URL, or `embedded` for the local model."""
        return self._identity.label

    def provenance(
        self, mode: ResponseFormat | None = None, logprobs: int | None | Literal["now"] = "now"
    ) -> Provenance:
        """The judge as recorded with a verdict (with the structured-output format and the
        logprobs in use, unless given)."""
        top = self._asker.logprobs if logprobs == "now" else logprobs
        return self._identity.provenance(mode or self._asker.mode, top)

    def fingerprint(self, answers: bool | None = None) -> dict[str, Any]:
        """Everything about the judge that could change a selection or arguments verdict (no
        key, ever): what a calibration record is bound to. Its rubrics are those two
        dimensions' (what calibration measures; trajectory verdicts are never calibrated), and
        the answer rubric's (`answer_rubric`) when answers are judged, or `answers` says so.
        The structured-output choice is recorded as asked (`auto` stays `auto`), so a run
        that steps down keeps its fingerprint; so are logprobs, so a run whose endpoint
        refuses them keeps it too."""
        return _fingerprint(self, self.answers if answers is None else answers)

    def differs_from(self, outcome: JudgeOutcome) -> list[str]:
        """The settings in which `outcome` was judged otherwise than this judge would judge
        it now (empty: the same judge): the provenance, and the number of samples."""
        return differences(
            (self.provenance(), self.samples),
            (outcome.provenance, outcome.samples),
            any_format=self._format_choice == "auto",  # any it may step down to is its own
        )

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

    def decision_defaults(self) -> dict[str, dict[str, Combine]]:
        """Per scored dimension, what a calibration refits from, per branch: the aligned spec's
        weights, else the probe's P(correct) where it decides, else the rubric's combination."""
        return aligned_defaults(decision_defaults(self.rubrics, self._probing), self.aligned)

    async def __aenter__(self) -> Judge:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._probing is not None:
            await self._probing.aclose()
        if self.escalation is not None:
            await self.escalation.aclose()
        await self._asker.aclose()
        if self._cache is not None:
            self._cache.close()
            self._cache = None
            self._asker.cache = None

    def refuse(self, refused: dict[str, str], *, offline: str | None = None) -> None:
        """Never ask the requests of these cache keys (that case gets `judge_error` with the
        reason), nor, with `offline`, any request the cache does not answer: after a batch,
        what must not be asked online."""
        self._asker.refuse(refused, offline=offline)

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
        runner's agent run is checked against the state it ended in), then judge it. The
        result carries the case's content hash (what resuming compares)."""
        checked = (
            # CPU work, off the event loop; a thread each, so that a slow case holds no other
            await asyncio.to_thread(self.check, case)
            if checked is None
            else checked.model_copy(update={"ungrounded_values": ungrounded_values(case, checked)})
        )
        stamp = {"case_hash": case_hash(case), "graded_with": grading(self)}
        checked = checked.model_copy(update=stamp)
        if case.response is None:
            return _without_verdicts(self, checked, "skipped", "the case has no response to judge")
        try:
            asked = self.questions(case, checked)
        except (TemplateError, ShapeError) as exc:  # a case a rubric cannot render
            why = f"the rubric cannot render this case: {exc}"
            return _without_verdicts(self, checked, "judge_error", why)
        tally: Counter[str] = Counter()
        answered = await self._answering.answered(asked.questions, tally)
        checked = with_value_verdicts(checked, answered.values)  # `$judge` values decided
        found = Verdicts(
            asked.selection if answered.selection is None else answered.selection,
            sorted([*asked.arguments, *answered.arguments], key=lambda a: a.call),
            answer=answered.answer,
        )
        found = settled(found, self._platt, self.abstain_below)
        if self.escalation is not None and answered.error is None:
            found = await self.escalation.reask(
                case, checked, found.selection, found.arguments, found.answer
            )
        judged = Judged(
            self.samples,
            self.provenance(),
            self.trusted,
            self.escalation.provenance() if self.escalation is not None else None,
        )
        return with_judge(checked, outcome(checked, answered, found, tally, judged))

    async def reask(
        self,
        case: Case,
        checked: CaseResult,
        selection: SelectionVerdict | None,
        arguments: list[ArgumentVerdict],
        answer: AnswerVerdict | None = None,
    ) -> Escalated:
        """As the escalation judge: answer again exactly the `uncertain` verdicts of another
        judge (only the questions they need), keeping this judge's verdicts for them."""
        asked = Escalated(selection, list(arguments), answer=answer)
        return await reask(self._answering, self._questioner, case, checked, asked)

    def check(self, case: Case) -> CaseResult:
        """The deterministic result, with the grounding evidence the judge is shown."""
        return self._questioner.check(case)

    def questions(self, case: Case, checked: CaseResult) -> Questions:
        """The verdicts decided without asking, and the questions left for the judge."""
        return self._questioner.questions(case, checked)

    async def is_cached(self, question: Question, sample: int) -> bool:
        """Whether this sample of the question would be answered from the cache."""
        return await self._asker.is_cached(question, sample)

    async def is_answered(self, rubric: Rubric, ask: Ask) -> bool:
        """Whether a scored rubric's question would be answered from the cache."""
        return await self._asker.is_answered(rubric, ask)

    def for_batches(self) -> Requests | None:
        """What asking elsewhere (a provider's batches, a batch input file) needs of this
        judge: its endpoint, the requests of a case, and taking or refusing their replies.
        None for the embedded model, which is never batched."""
        if self._endpoint is None:
            return None
        return Requests(self._endpoint, self._questioner, self._asker, self.samples)

    async def requests(self, case: Case) -> list[Asked]:
        """The requests grading `case` would send now (`Requests.of`); none for the
        embedded model."""
        port = self.for_batches()
        return [] if port is None else await port.of(case)

    async def accept(self, asked: Asked, reply: Reply) -> str | None:
        """Take a reply obtained elsewhere for a request `requests` listed (`Requests.accept`)."""
        return await self._asker.accept(asked, reply)


def grade(cases: Any, *, tools: Any = None, **options: Any) -> CheckResults:
    """Grade `cases` with a `Judge(**options)`, for scripts (blocks until done). `tools` are
    offered to every case that has none of its own, as in `check`."""
    if tools is not None:
        cases = SharedTools.of(tools).offer(iter_cases(cases))

    async def run() -> CheckResults:
        async with Judge(**options) as judge:
            return await judge.grade(cases)

    return asyncio.run(run())


def grading(judge: Judge) -> str:
    """A digest of what grades a case beside the judge itself: the match settings and the
    environment (by name: its code is not hashed)."""
    env = judge.env
    described = getattr(env, "described", None)
    return content_hash(
        {
            "match": None if judge.match is None else judge.match.model_dump(),
            "env": described() if callable(described) else env,
        }
    )


def _fingerprint(judge: Judge, answers: bool) -> dict[str, Any]:
    found = judge_fields(judge.provenance(logprobs=judge._asker.logprobs_asked))
    found["rubrics"] = [r.model_dump(mode="json") for r in judge.rubrics.refs]
    found["response_format"] = judge._format_choice
    found["samples"] = judge.samples
    found["judge_broken"] = judge.judge_broken
    if answers and judge.rubrics.answer is not None:
        found["answer_rubric"] = judge.rubrics.answer.ref.model_dump(mode="json")
    if judge.escalation is not None:  # a cascade is one judge: it covers both
        found["escalation"] = judge.escalation.fingerprint()
    return found


def _identity_of(judge: Judge) -> Identity:
    """The judge's recorded settings, with every rubric it asks with."""
    rubrics, refs = judge.rubrics, judge.rubrics.refs
    if judge.trajectory and rubrics.trajectory is not None:
        refs = (*refs, rubrics.trajectory.ref)
    if judge.answers and rubrics.answer is not None:
        refs = (*refs, rubrics.answer.ref)
    probe = judge.probe.ref if judge.probe is not None else None
    settings = (judge.temperature, judge.seed, judge.reasoning_effort, judge.extra_body)
    aligned = spec_sha256(judge.aligned) if judge.aligned is not None else None
    return Identity(judge.endpoint, *settings, refs, probe, aligned)


def _without_verdicts(
    judge: Judge, checked: CaseResult, status: Literal["skipped", "judge_error"], why: str
) -> CaseResult:
    judged = JudgeOutcome(
        status=status, error=why, samples=judge.samples, provenance=judge.provenance()
    )
    return with_judge(checked, judged)


def _rubric_set(rubrics: str | Path | RubricSet | None, *, embedded: bool) -> RubricSet:
    """The rubrics asked with: the embedded model gets the scored rubrics made for it."""
    if isinstance(rubrics, RubricSet):
        return rubrics
    return load_rubrics(rubrics, kind="quick" if embedded and rubrics is None else "default")


def _thresholds(abstain_below: float | dict[str, float] | None) -> dict[str, float] | None:
    if isinstance(abstain_below, float | int):
        return dict.fromkeys(("selection", "arguments", "answer"), float(abstain_below))
    return abstain_below
