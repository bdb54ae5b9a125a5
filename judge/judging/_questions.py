"""What the judge is asked about a case: one question per rubric (and per call for a
per-call rubric), one per `$judge` value left to it, and the verdicts decided without
asking."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from judge.cases._case import Case
from judge.cases._match import Match
from judge.checks._check import check_case
from judge.checks._env import EnvironmentFactory
from judge.checks._evidence import ungrounded_values
from judge.checks._grounding import (
    best_fit,
    failed_tool_results,
    guessed_required,
    other_records,
    repeated_calls,
    unmentioned_values,
    unsaid_options,
    unsupported_numbers,
    unused_user_values,
    word_margin,
)
from judge.checks._kinds import FailureKind
from judge.checks._outcome import (
    AnswerVerdict,
    ArgumentVerdict,
    SelectionVerdict,
    TrajectoryVerdict,
)
from judge.checks._result import CaseResult, Failure
from judge.checks._structure import SchemaCache
from judge.judging._aligned import AlignedSpec, aligned_messages
from judge.judging._decide import DERIVED_PROBLEMS, derived_argument, settle_selection
from judge.judging._prompt import (
    judged_value,
    response_failures,
    rubric_variables,
    trajectory_steps,
)
from judge.judging._replies import (
    ValueVerdict,
    answer_schema,
    arguments_schema,
    selection_schema,
    trajectory_schema,
    value_schema,
)
from judge.judging._rubric import Rubric, RubricSet


@dataclass(frozen=True)
class Question:
    """One request a case needs (asked `samples` times)."""

    dimension: Literal["selection", "arguments", "trajectory", "answer", "value"]
    rubric: Rubric
    messages: list[dict[str, str]]
    schema: dict[str, Any]
    calls: tuple[int, ...] = ()
    counts: tuple[tuple[str, float], ...] = ()
    """A scored selection or answer question's evidence from code (`CODE_FEATURES`)."""
    call_counts: tuple[tuple[tuple[str, float], ...], ...] = ()
    """A scored arguments question's evidence from code, per call of `calls`."""
    value: int | None = None
    """A value question's `$judge` value: its index in the result's `judge_values`."""


@dataclass(frozen=True)
class Questions:
    """A case's questions, and what was decided without asking."""

    selection: SelectionVerdict | None
    """Decided without asking (an unknown tool name), else None."""
    arguments: list[ArgumentVerdict]
    """Derived verdicts of calls that failed structurally."""
    questions: list[Question]


@dataclass(frozen=True)
class Questioner:
    """What a judge asks of a case: the deterministic result with the grounding evidence the
    judge is shown, then the verdicts decided without asking and the questions left."""

    rubrics: RubricSet
    judge_broken: bool = False
    trajectory: bool = False
    answers: bool = False
    match: Match | None = None
    env: EnvironmentFactory | None = None
    aligned: AlignedSpec | None = None
    schemas: SchemaCache = field(default_factory=SchemaCache)

    def check(self, case: Case) -> CaseResult:
        checked = check_case(case, schemas=self.schemas, match=self.match, env=self.env)
        return checked.model_copy(update={"ungrounded_values": ungrounded_values(case, checked)})

    def questions(self, case: Case, checked: CaseResult) -> Questions:
        return questions_for(
            case,
            checked,
            self.rubrics,
            judge_broken=self.judge_broken,
            trajectory=self.trajectory,
            answers=self.answers,
            aligned=self.aligned,
        )


def questions_for(
    case: Case,
    checked: CaseResult,
    rubrics: RubricSet,
    *,
    judge_broken: bool = False,
    trajectory: bool = False,
    answers: bool = False,
    aligned: AlignedSpec | None = None,
) -> Questions:
    """The verdicts decided without asking, and the questions left for the judge (with
    what an aligned spec adds to each dimension's prompt)."""
    variables = rubric_variables(case, checked)
    scored = rubrics.selection.scored or rubrics.arguments.scored
    per_call = (
        _call_counts(case, variables["injection"], arguments=rubrics.arguments.scored)
        if scored
        else []
    )
    broken: dict[int, list[Failure]] = {}
    for call, failure in response_failures(case, checked):
        if call is not None and failure.kind in DERIVED_PROBLEMS:
            broken.setdefault(call, []).append(failure)
    questions: list[Question] = []
    unknown = [f for fs in broken.values() for f in fs if f.kind == FailureKind.UNKNOWN_NAME]
    selection = _unknown_tool(unknown) if unknown and not judge_broken else None
    if selection is None:
        questions.append(_selection(case, checked, rubrics.selection, variables, per_call))
    derived: list[ArgumentVerdict] = []
    judged: list[int] = []
    for index in range(len(case.tool_calls)):
        if index in broken and not judge_broken:
            derived.append(derived_argument(index, broken[index]))
        else:
            judged.append(index)
    questions.extend(_arguments(rubrics.arguments, variables, judged, per_call))
    if trajectory and rubrics.trajectory is not None:
        rubric = rubrics.trajectory
        chosen = {**variables, "steps": trajectory_steps(case)}
        schema = trajectory_schema(rubric.reasoning_max_length)
        questions.append(Question("trajectory", rubric, rubric.render(chosen), schema, ()))
    if answers and rubrics.answer is not None and ends_in_text(case):
        questions.append(_answer(case, rubrics.answer, variables))
    if rubrics.value is not None:  # last: the case's own questions keep their shared prefix
        questions.extend(_values(case, checked, rubrics.value, variables))
    if aligned is not None:
        questions = [_aligned(question, aligned, case) for question in questions]
    return Questions(selection, derived, questions)


def _aligned(question: Question, spec: AlignedSpec, case: Case) -> Question:
    """The question with the policy and examples its dimension's alignment adds."""
    alignment = spec.alignment(question.dimension)
    if alignment is None:
        return question
    return replace(question, messages=aligned_messages(question.messages, alignment, case))


def _values(
    case: Case, checked: CaseResult, rubric: Rubric, variables: dict[str, Any]
) -> list[Question]:
    """One yes/no question for each `$judge` value the judge has not answered yet."""
    schema = {} if rubric.scored else value_schema()
    return [
        Question(
            "value",
            rubric,
            rubric.render({**variables, "judged_value": judged_value(case, checked, index)}),
            schema,
            value=index,
        )
        for index, value in enumerate(checked.judge_values)
        if value.verdict is None
    ]


def _unknown_tool(unknown: list[Failure]) -> SelectionVerdict:
    """Selection decided without asking: a call names a tool the case does not list."""
    return SelectionVerdict(
        reasoning="; ".join(f.message for f in unknown),
        verdict="incorrect",
        category="unknown_tool",
        source="derived",
        confidence=1.0,
    )


def _selection(
    case: Case,
    checked: CaseResult,
    rubric: Rubric,
    variables: dict[str, Any],
    per_call: list[tuple[tuple[str, float], ...]],
) -> Question:
    return Question(
        "selection",
        rubric,
        rubric.render(variables),
        {}
        if rubric.scored
        else selection_schema(rubric.reasoning_max_length, rubric.decide_action),
        tuple(range(len(case.tool_calls))),
        _selection_counts(case, checked, per_call) if rubric.scored else (),
    )


def _arguments(
    rubric: Rubric,
    variables: dict[str, Any],
    judged: list[int],
    per_call: list[tuple[tuple[str, float], ...]],
) -> list[Question]:
    """The arguments questions: one for every judged call with a scored rubric (the case's
    prompt is shared), else one a call or one for all, as the rubric says."""
    if rubric.scored:
        groups = [judged] if judged else []
    else:
        groups = [[i] for i in judged] if rubric.per_call else ([judged] if judged else [])
    found = []
    for group in groups:
        chosen = {
            **variables,
            "judged_calls": [variables["calls"][i] for i in group],
            "ungrounded": [u for u in variables["ungrounded"] if u["call"] in group],
            "origins": [o for o in variables["origins"] if o["call"] in group],
            "injection": [i for i in variables["injection"] if i["call"] in group],
        }
        found.append(
            Question(
                "arguments",
                rubric,
                rubric.render(chosen),
                {} if rubric.scored else arguments_schema(group, rubric.reasoning_max_length),
                tuple(group),
                call_counts=tuple(per_call[i] for i in group) if rubric.scored else (),
            )
        )
    return found


def _answer(case: Case, rubric: Rubric, variables: dict[str, Any]) -> Question:
    used = used_tools(case)
    evidence = (
        (("unsupported", float(len(unsupported_numbers(case)))),
         ("tool_errors", float(failed_tool_results(case))))
        if rubric.scored
        else ()
    )  # fmt: skip
    return Question(
        "answer",
        rubric,
        rubric.render(variables),
        {} if rubric.scored else answer_schema(rubric.reasoning_max_length),
        (0,) if used else (),  # a scored rubric's branch: tools were used, or not
        counts=evidence,
    )


def _call_counts(
    case: Case, injection: list[dict[str, Any]], *, arguments: bool
) -> list[tuple[tuple[str, float], ...]]:
    """What code counts per call: its values found nowhere in the conversation and the user's
    numbers and quoted phrases that no call holds (the same for each call), and, where there
    is any, its injection evidence (values only instructions in a tool result gave); with
    `arguments`
    (a scored arguments rubric) also its options the user did not say where they said
    another, and whether it took a value from a listed record that fits the user's words
    worse than another."""
    unused = float(len(unused_user_values(case)))
    ungrounded = unmentioned_values(case)
    found: list[tuple[tuple[str, float], ...]] = [
        (("ungrounded", float(sum(u.call == index for u in ungrounded))), ("unused", unused))
        + _injected(injection, index)
        for index in range(len(case.tool_calls))
    ]
    if not arguments:
        return found
    options, records = unsaid_options(case), other_records(case)
    return [
        (*counts, ("unsaid_options", float(n)), ("other_records", float(m)))
        for counts, n, m in zip(found, options, records, strict=True)
    ]


def _selection_counts(
    case: Case, checked: CaseResult, per_call: list[tuple[tuple[str, float], ...]]
) -> tuple[tuple[str, float], ...]:
    """What code counts for a scored selection rubric: the values of all calls found nowhere
    in the conversation and the user's values that no call holds; for calls, how well the
    called tool fits the request against the others, the calls repeated exactly, the required
    values made up; for a reply without calls, how well the best tool would have fitted."""
    if not case.tool_calls:
        return (("best_fit", float(best_fit(case))),)
    ungrounded = sum(dict(counts)["ungrounded"] for counts in per_call)
    unused = dict(per_call[0])["unused"]  # the same for every call
    injected = sum(bool(dict(counts).get("injection")) for counts in per_call)
    return (
        ("ungrounded", ungrounded),
        ("unused", unused),
        ("word_margin", float(word_margin(case))),
        ("repeated", float(repeated_calls(case))),
        ("guessed_required", float(guessed_required(case))),
    ) + ((("injection", float(injected)),) if injected else ())


def _injected(injection: list[dict[str, Any]], index: int) -> tuple[tuple[str, float], ...]:
    """A call's injection evidence counted (clipped to 3), where it has any: absent at 0, so
    that features and results without it stay as they were."""
    count = min(3, sum(e["call"] == index for e in injection))
    return (("injection", float(count)),) if count else ()


def used_tools(case: Case) -> bool:
    """Some earlier assistant turn of the conversation called a tool: the branch a scored
    answer rubric takes (and calibration fits)."""
    return any(m.get("role") == "assistant" and m.get("tool_calls") for m in case.messages)


def ends_in_text(case: Case) -> bool:
    """The response is text without calls: an answer to judge."""
    response = case.response
    return (
        response is not None and not response.tool_calls and bool((response.content or "").strip())
    )


_OURS = ("source", "confidence", "confidence_source", "leaning", "escalated", "features")
"""Verdict fields only the pipeline sets: whatever a reply says of them is dropped."""


def _asked(data: Any, labels: tuple[str, ...]) -> Any:
    """A reply's verdict object as the judge may give it: its label one of the rubric's,
    and nothing of what only the pipeline decides (its source, confidence, abstention)."""
    if not isinstance(data, dict):
        return data
    if data.get("verdict") not in labels:
        raise ValueError(f"verdict must be one of {list(labels)}, not {data.get('verdict')!r}")
    return {k: v for k, v in data.items() if k not in _OURS}


def parser(question: Question) -> Callable[[Any], Any]:
    labels = question.rubric.labels
    if question.dimension == "trajectory":
        return lambda data: TrajectoryVerdict.model_validate(_asked(data, labels))
    if question.dimension == "answer":
        return lambda data: AnswerVerdict.model_validate(_asked(data, labels))
    if question.dimension == "value":
        return lambda data: ValueVerdict.model_validate(_asked(data, labels))
    if question.dimension == "selection":
        if question.rubric.decide_action:
            return lambda data: settle_selection(_asked(data, labels), called=bool(question.calls))
        return lambda data: SelectionVerdict.model_validate(_asked(data, labels))

    def parse(data: Any) -> list[ArgumentVerdict]:
        if not isinstance(data, dict) or not isinstance(data.get("verdicts"), list):
            raise ValueError('expected {"verdicts": [...]}')
        # Whatever the reply says, these verdicts were asked, not derived.
        verdicts = [ArgumentVerdict.model_validate(_asked(v, labels)) for v in data["verdicts"]]
        if sorted(v.call for v in verdicts) != sorted(question.calls):
            raise ValueError(f"expected one verdict for each of the calls {list(question.calls)}")
        return verdicts

    return parse
