"""Reading a reply into verdicts: a JSON verdict validated against its question's schema, with
each verdict's confidence read from the reply's token logprobs; a one-token answer's share of
the rubric's first answer word."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from pydantic import ValidationError

from judge._errors import JudgeError
from judge.checks._outcome import (
    AnswerVerdict,
    ArgumentVerdict,
    SelectionVerdict,
    TrajectoryVerdict,
)
from judge.endpoints._client import Reply
from judge.judging._confidence import answer_distribution, label_distributions
from judge.judging._decide import selection_confidence, taken_action
from judge.judging._questions import Question
from judge.judging._replies import ACTIONS
from judge.judging._rubric import Rubric
from judge.judging._scored import Ask

CONFIDENCE = "$confidence"
"""Where a cached reply keeps its verdicts' confidences."""
Verdicts = SelectionVerdict | TrajectoryVerdict | AnswerVerdict | list[ArgumentVerdict]


class ReplyError(JudgeError):
    """The judge gave no usable verdict (after re-asking, or it refused)."""

    def __init__(self, message: str, raw: str | None) -> None:
        super().__init__(message)
        self.raw = raw


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


def read_cached(hit: Any, parse: Callable[[Any], Any]) -> Any:
    """The verdicts a cached reply gives, with the confidences kept beside it."""
    confidences = hit.pop(CONFIDENCE, None) if isinstance(hit, dict) else None
    return with_confidences(parse(hit), confidences)


def kept(data: Any, confidences: list[float | None], logprobs: int | None) -> Any:
    """What the cache keeps of a usable reply: its data, with the confidences where logprobs
    were asked."""
    if logprobs is not None and isinstance(data, dict):
        return {**data, CONFIDENCE: confidences}
    return data


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


def with_confidences(answer: Any, confidences: list[float | None] | None) -> Any:
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


def _short(exc: BaseException) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= 300 else text[:297] + "..."
