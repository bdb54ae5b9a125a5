"""The judge's part of a result: verdicts, the outcome of judging a case, its provenance.

The types live beside `CaseResult`, which carries them; the judging layer fills them in."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

SelectionLabel = Literal["correct", "incorrect", "uncertain"]
"""`uncertain`: the judge abstained (its confidence was under the abstention threshold)."""
ArgumentLabel = Literal["correct", "incorrect", "not_applicable", "uncertain"]
Leaning = Literal["correct", "incorrect"]
JudgeStatus = Literal["ok", "judge_error", "skipped"]
ConfidenceSource = Literal["logprobs", "samples", "probe", "none"]

SelectionCategory = Literal[
    "right_call",
    "right_no_call",
    "right_ask",
    "wrong_tool",
    "unknown_tool",
    "unnecessary_call",
    "missing_call",
    "duplicate_call",
    "should_ask",
    "needless_ask",
]
ArgumentProblem = Literal[
    "wrong_entity",
    "hallucinated_value",
    "partial",
    "wrong_type",
    "missing_value",
    "forbidden_extra",
    "invalid_json",
    "wrong_format",
    "other",
]


DEFAULT_SEED = 7
"""The judge's seed unless told otherwise (sample i asks with seed + i)."""


TrajectoryProblem = Literal[
    "needless_call",
    "missing_step",
    "missing_confirmation",
    "wrong_order",
    "repeated_call",
    "ignored_error",
    "wrong_target",
    "policy_violation",
]
AnswerCategory = Literal[
    "answered",
    "right_refusal",
    "right_ask",
    "unanswered",
    "unsupported_fact",
    "fabricated_action",
    "wrong_refusal",
    "needless_ask",
    "contradicts_reference",
]
SELECTION_CATEGORIES: tuple[str, ...] = get_args(SelectionCategory)
ANSWER_CATEGORIES: tuple[str, ...] = get_args(AnswerCategory)
ARGUMENT_PROBLEMS: tuple[str, ...] = get_args(ArgumentProblem)
TRAJECTORY_PROBLEMS: tuple[str, ...] = get_args(TrajectoryProblem)


class SelectionVerdict(BaseModel):
    """Whether the set of calls (names and count) is what the request needs."""

    model_config = ConfigDict(frozen=True)

    reasoning: str
    verdict: SelectionLabel
    category: SelectionCategory
    source: Literal["judge", "derived"] = "judge"
    """`derived`: decided from a deterministic failure (an unknown tool name), not asked."""
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    """The judge's probability that this label is right: from the label token's logprobs
    (renormalised over the allowed labels), or the share of samples that agree. 1.0 for a
    derived verdict; None when the judge gave no measure."""
    confidence_source: ConfidenceSource = "none"
    leaning: Leaning | None = None
    """An `uncertain` verdict: the label the judge gave before it abstained."""
    escalated: bool = False
    """Decided by the escalation judge (`JudgeOutcome.escalation`), the first having
    abstained."""
    features: dict[str, float] | None = None
    """A scored rubric's evidence: each question's probability of its first answer (`yes`),
    and counts from code; what `judge calibrate` fits its weights on."""


class TrajectoryVerdict(BaseModel):
    """Whether the sequence of calls, as a whole, was a sensible way to do what was asked."""

    model_config = ConfigDict(frozen=True)

    reasoning: str
    verdict: SelectionLabel
    problems: tuple[TrajectoryProblem, ...] = ()
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    """The judge's probability that this label is right: from the label token's logprobs
    (renormalised over the allowed labels), or the share of samples that agree. 1.0 for a
    derived verdict; None when the judge gave no measure."""
    confidence_source: ConfidenceSource = "none"
    leaning: Leaning | None = None
    """An `uncertain` verdict: the label the judge gave before it abstained."""
    escalated: bool = False
    """Decided by the escalation judge (`JudgeOutcome.escalation`), the first having
    abstained."""


class AnswerVerdict(BaseModel):
    """Whether the text a response (or an agent run) ends with is a right answer: it answers
    the request, states only what the conversation and the tool results support, claims no
    action that did not happen, and refuses or asks only where it should."""

    model_config = ConfigDict(frozen=True)

    reasoning: str
    verdict: SelectionLabel
    category: AnswerCategory
    source: Literal["judge", "derived"] = "judge"
    """Always `judge`: an answer is never decided without asking."""
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    """The judge's probability that this label is right (as for selection)."""
    confidence_source: ConfidenceSource = "none"
    leaning: Leaning | None = None
    """An `uncertain` verdict: the label the judge gave before it abstained."""
    escalated: bool = False
    """Decided by the escalation judge, the first having abstained."""
    features: dict[str, float] | None = None
    """A scored rubric's evidence: each question's probability of `yes`."""


class ArgumentVerdict(BaseModel):
    """Whether one call's arguments deliver what the user meant."""

    model_config = ConfigDict(frozen=True)

    call: int
    """Index of the call in the response's `tool_calls`."""
    reasoning: str
    verdict: ArgumentLabel
    problems: tuple[ArgumentProblem, ...] = ()
    source: Literal["judge", "derived"] = "judge"
    """`derived`: the call failed structurally, so its arguments are incorrect without asking."""
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    """The judge's probability that this label is right: from the label token's logprobs
    (renormalised over the allowed labels), or the share of samples that agree. 1.0 for a
    derived verdict; None when the judge gave no measure."""
    confidence_source: ConfidenceSource = "none"
    leaning: Leaning | None = None
    """An `uncertain` verdict: the label the judge gave before it abstained."""
    escalated: bool = False
    """Decided by the escalation judge (`JudgeOutcome.escalation`), the first having
    abstained."""
    features: dict[str, float] | None = None
    """A scored rubric's evidence: each question's probability of its first answer (`yes`),
    and counts from code; what `judge calibrate` fits its weights on."""


class RubricRef(BaseModel):
    """Which rubric produced a verdict."""

    model_config = ConfigDict(frozen=True)

    name: str
    version: str
    sha256: str
    """Hash of the rubric file's content."""


class Provenance(BaseModel):
    """Everything that could change a verdict. Never holds an API key."""

    model_config = ConfigDict(frozen=True)

    model: str
    endpoint: str
    temperature: float
    seed: int | None
    reasoning_effort: str | None = None
    response_format: str
    """How structured output was asked for: `json_schema`, `json_object` or `tool`."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Provider fields passed through as they are."""
    rubrics: tuple[RubricRef, ...] = ()
    logprobs: int | None = None
    """How many alternatives of each token were asked for, to read confidence from (None:
    not asked, or the endpoint refused them)."""
    probe: str | None = None
    """The sha256 of the probe file the embedded judge decided with (None: the rubrics'
    weights decided)."""
    aligned: str | None = None
    """The sha256 of the aligned spec (`judge align`) whose policy and examples the prompts
    held (None: none)."""


class Usage(BaseModel):
    """Requests and tokens spent on a case (cached answers cost nothing)."""

    model_config = ConfigDict(frozen=True)

    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    """Of the prompt tokens, those the server took from its prompt cache, where it says so
    (llama.cpp's `timings.cache_n`, OpenAI's `cached_tokens`)."""


class Agreement(BaseModel):
    """Whether the judge agrees with the deterministic checks, where both exist."""

    model_config = ConfigDict(frozen=True)

    selection: bool | None = None
    """Judge selection verdict vs `tool_selection`."""
    arguments: bool | None = None
    """Judge's case-level arguments verdict vs `argument_values`."""


class JudgeOutcome(BaseModel):
    """The judge's part of a result: verdicts, or why there are none."""

    model_config = ConfigDict(frozen=True)

    status: JudgeStatus
    """`ok`; `judge_error` (the judge gave no usable verdict: never a pass, never a fail);
    `skipped` (nothing to judge)."""
    selection: SelectionVerdict | None = None
    arguments: tuple[ArgumentVerdict, ...] = ()
    trajectory: TrajectoryVerdict | None = None
    """With `trajectory=True` (`judge grade --trajectory`): the verdict on the whole path."""
    answer: AnswerVerdict | None = None
    """With `answers=True` (`judge grade --answers`, `judge run --judge`): the verdict on the
    text the response ends with, when it ends in text."""
    samples: int = 1
    flip_rate: float | None = None
    """Share of samples that disagree with the majority verdict (with `samples` > 1)."""
    error: str | None = None
    raw: str | None = None
    """The judge's last reply, kept when it could not be used."""
    agreement: Agreement = Field(default_factory=Agreement)
    usage: Usage = Field(default_factory=Usage)
    trusted: bool | None = None
    """False when the calibration gate was overridden; None when no calibration was given.
    Calibration measures selection and arguments: a trajectory verdict is never calibrated."""
    provenance: Provenance | None = None
    escalated: int = 0
    """Verdicts the escalation judge decided, the first judge having abstained on them."""
    escalation_usage: Usage | None = None
    """What asking the escalation judge cost (with `escalated` > 0)."""
    escalation: Provenance | None = None
    """The escalation judge, when there is one."""
    batch: str | None = None
    """The provider batches whose replies gave this case's verdicts (`judge grade --batch`),
    comma-separated. Where a reply came from changes no verdict, so it is not the judge's
    provenance (results written before kept it there: it is read from there too)."""

    @model_validator(mode="before")
    @classmethod
    def _batch_from_provenance(cls, data: Any) -> Any:
        provenance = data.get("provenance") if isinstance(data, dict) else None
        if isinstance(provenance, dict) and "batch" in provenance:
            provenance = dict(provenance)
            batch = provenance.pop("batch")
            data = {**data, "provenance": provenance}
            if data.get("batch") is None:
                data["batch"] = batch
        return data

    @property
    def arguments_verdict(self) -> SelectionLabel | None:
        """The case-level arguments verdict: correct iff every applicable call verdict is;
        incorrect when any is; else (some call uncertain) uncertain."""
        applicable = [a.verdict for a in self.arguments if a.verdict != "not_applicable"]
        if not applicable:
            return None
        if "incorrect" in applicable:
            return "incorrect"
        return "uncertain" if "uncertain" in applicable else "correct"

    @property
    def uncertain(self) -> bool:
        """The judge abstained on this case: nothing it is sure of fails it, something it
        would need to pass it is uncertain."""
        return self.status == "ok" and self.passed is None

    @property
    def passed(self) -> bool | None:
        """The judge passed the case: selection correct, no call's arguments incorrect, and
        the answer (when it was judged) correct. None unless the status is `ok`, and None when
        an uncertain verdict decides it."""
        if self.status != "ok":
            return None
        selection = self.selection.verdict if self.selection is not None else "incorrect"
        verdicts = (selection, self.arguments_verdict, self.answer and self.answer.verdict)
        if "incorrect" in verdicts:
            return False
        if "uncertain" in verdicts:
            return None
        return True
