"""Scored rubrics: narrow questions asked after the rendered case, each answered with one token
whose probability is read from the logprobs, combined into a verdict by a small logistic model.

Nothing is generated but the answer token, and a case's questions share its prompt up to the
question, so a server with a prompt cache (llama.cpp) evaluates the case once."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from judge.checks._outcome import (
    AnswerCategory,
    AnswerVerdict,
    ArgumentProblem,
    ArgumentVerdict,
    SelectionCategory,
    SelectionVerdict,
)
from judge.judging._rubric import CODE_FEATURES, Combine, Rubric

ANSWER_LOGPROBS = 20
"""Alternatives asked for the answer token (the answer words are looked for among them)."""
_CLIP = 1e-4
PROBE_FEATURE = "probe"
"""The feature a probe's P(correct) is kept under in a verdict's `features` (a probability,
read as log-odds), which a calibration refits on top of."""


@dataclass(frozen=True)
class Ask:
    """One question of a scored rubric, as sent: the case, then the question."""

    id: str
    call: int | None
    messages: list[dict[str, str]]


def asks(rubric: Rubric, rendered: list[dict[str, str]], calls: tuple[int, ...]) -> list[Ask]:
    """The requests of one scored question: every question that applies, once per judged call
    for arguments. The case comes first in each, identical, so its prefix is shared."""
    system, user = rendered
    branch = "called" if calls else "not_called"
    words = " or ".join(rubric.answers)
    found = []
    for question in rubric.questions:
        if question.when not in ("always", branch):
            continue
        for call in calls if rubric.dimension == "arguments" else (None,):
            text = question.text if call is None else question.text.replace("{call}", str(call + 1))
            content = f"{user['content']}\n\nQuestion: {text}\nAnswer {words}."
            found.append(Ask(question.id, call, [system, {"role": "user", "content": content}]))
    return found


def probability(combine: Combine, features: dict[str, float]) -> float:
    """P(correct) from the features: each question's P(first answer word), taken as log-odds
    (0.5 where it was not asked), and the counts from code, as they are."""
    z = combine.bias + sum(w * feature(features, name) for name, w in combine.weights.items())
    return sigmoid(z)


def feature(features: dict[str, float], name: str) -> float:
    if name in CODE_FEATURES:
        return features.get(name, 0.0)
    return logit(features.get(name, 0.5))


def logit(p: float) -> float:
    p = min(max(p, _CLIP), 1 - _CLIP)
    return math.log(p / (1 - p))


def platt(ab: tuple[float, float], confidence: float) -> float:
    """A confidence mapped by a calibration's Platt fit: sigmoid(a x logit(c) + b)."""
    return sigmoid(ab[0] * logit(confidence) + ab[1])


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-max(min(z, 50.0), -50.0)))


@dataclass(frozen=True)
class Fit:
    """A calibration's refit of a scored rubric's decision: weights per branch, threshold."""

    combine: dict[str, Combine]
    threshold: float


_COUNTS_SAID = {
    "ungrounded": "{:g} value(s) found nowhere in the conversation",
    "unused": "{:g} value(s) of the user's in no call",
    "unsaid_options": "{:g} option(s) the user did not say, where they said another",
    "other_records": "a value of a listed record that fits the user's words worse than another",
    "word_margin": "word margin of the called tool over the closest other: {:+g}",
    "repeated": "{:g} call(s) repeating an earlier call exactly",
    "guessed_required": "{:g} required value(s) the conversation never gave",
    "best_fit": "the best-fitting tool shares {:g} of the user's words",
    "unsupported": "{:g} number(s) of the reply found nowhere before it",
    "tool_errors": "{:g} tool result(s) reporting an error",
    "injection": "{:g} value(s) or action(s) that only instructions in a tool result gave",
}
"""How the reasoning states each count from code (`CODE_FEATURES`), where it is not 0."""
_SAID_AT_ZERO = frozenset(("best_fit",))  # no tool fitting the request is evidence too


def _described(
    rubric: Rubric,
    answers: dict[str, float],
    counts: dict[str, float],
    p: float,
    threshold: float,
    probe: float | None = None,
) -> str:
    first, second = rubric.answers[0], rubric.answers[1]
    said = [
        f"{name}: {first if value >= 0.5 else second} ({value:.2f})"
        for name, value in answers.items()
    ]
    said += [
        _COUNTS_SAID[name].format(value)
        for name, value in counts.items()
        if name in _COUNTS_SAID and (value or name in _SAID_AT_ZERO)
    ]
    if probe is not None:
        said.append(f"probe on the hidden state: P(correct) {probe:.2f}")
    return "; ".join(said) + f". P(correct) = {p:.2f} (threshold {threshold:g})."


@dataclass(frozen=True)
class _Scored:
    """A scored rubric's decision on one verdict: whether it is correct."""

    correct: bool
    common: dict[str, Any]
    """The fields every scored verdict has: reasoning, verdict, confidence, its source and
    the features."""


def _score(
    rubric: Rubric,
    branch: str,
    answers: dict[str, float],
    counts: dict[str, float],
    fitted: Fit | None,
    probe: float | None = None,
) -> _Scored:
    """The decision: a calibration's refit where there is one for the branch (over the
    probe's P(correct) too, when a probe decided), else the probe's P(correct) at 0.5, else
    the rubric's own combination."""
    features = {**answers, **counts}
    if probe is not None:
        features[PROBE_FEATURE] = probe
    if fitted is not None and branch in fitted.combine:
        combine, threshold = fitted.combine[branch], fitted.threshold
        p = probability(combine, features)
    elif probe is not None:
        p, threshold = probe, 0.5
    else:
        combine = rubric.combine[branch]
        p, threshold = probability(combine, features), combine.threshold
    correct = p >= threshold
    common = {
        "reasoning": _described(rubric, answers, counts, p, threshold, probe),
        "verdict": "correct" if correct else "incorrect",
        "confidence": p if correct else 1 - p,
        "confidence_source": "logprobs" if probe is None else "probe",
        "features": features,
    }
    return _Scored(correct, common)


def selection_verdict(
    rubric: Rubric,
    answers: dict[str, float],
    called: bool,
    fitted: Fit | None = None,
    counts: dict[str, float] | None = None,
    probe: float | None = None,
) -> SelectionVerdict:
    """The selection verdict of a scored rubric (with the weights and threshold a calibration
    fitted, when given). The category comes from the answers to the questions `needs_call`,
    `should_ask` and `asks`, where the rubric has them."""
    branch = "called" if called else "not_called"
    scored = _score(rubric, branch, answers, counts or {}, fitted, probe)
    correct = scored.correct
    category: SelectionCategory
    asked = answers.get("asks", 0.0) >= 0.5
    if called:
        if correct:
            category = "right_call"
        elif answers.get("needs_call", 1.0) < 0.5:
            category = "unnecessary_call"
        elif answers.get("should_ask", 0.0) >= 0.5:
            category = "should_ask"
        else:
            category = "wrong_tool"
    elif correct:
        category = "right_ask" if asked else "right_no_call"
    else:
        category = "needless_ask" if asked else "missing_call"
    return SelectionVerdict(category=category, **scored.common)


def answer_verdict(
    rubric: Rubric,
    answers: dict[str, float],
    used_tools: bool,
    fitted: Fit | None = None,
    counts: dict[str, float] | None = None,
    probe: float | None = None,
) -> AnswerVerdict:
    """The answer verdict of a scored rubric. An incorrect one's category comes from the
    evidence: numbers nothing supports (or `supported` answered no), then `claims_action`."""
    counts = counts or {}
    branch = "called" if used_tools else "not_called"
    scored = _score(rubric, branch, answers, counts, fitted, probe)
    category: AnswerCategory = "answered"  # the questions cannot tell a right ask or refusal
    if not scored.correct:
        if counts.get("unsupported") or answers.get("supported", 1.0) < 0.5:
            category = "unsupported_fact"
        elif answers.get("claims_action", 0.0) >= 0.5:
            category = "fabricated_action"
        else:
            category = "unanswered"
    return AnswerVerdict(category=category, **scored.common)


def argument_verdict(
    rubric: Rubric,
    call: int,
    answers: dict[str, float],
    counts: dict[str, float],
    fitted: Fit | None = None,
    probe: float | None = None,
) -> ArgumentVerdict:
    """One call's argument verdict of a scored rubric. Problems come from the answers to
    `made_up` and `missing`, and from the counts (`CODE_FEATURES`)."""
    scored = _score(rubric, "called", answers, counts, fitted, probe)
    problems: list[ArgumentProblem] = []
    if not scored.correct:
        if counts.get("ungrounded") or answers.get("made_up", 0.0) >= 0.5:
            problems.append("hallucinated_value")
        if counts.get("unused") or answers.get("missing", 0.0) >= 0.5:
            problems.append("partial")
        if counts.get("unsaid_options") or counts.get("other_records"):
            problems.append("wrong_entity")
        problems = problems or ["other"]
    return ArgumentVerdict(call=call, problems=tuple(problems), **scored.common)
