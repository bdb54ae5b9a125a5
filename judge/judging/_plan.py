"""What grading would send, counted without sending anything (`judge grade --dry-run`)."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from jinja2 import TemplateError

from judge.cases._calls import ShapeError
from judge.cases._case import Case
from judge.cases._loading import iter_cases
from judge.judging._scored import asks

if TYPE_CHECKING:
    from judge.judging._grade import Judge


@dataclass
class Plan:
    """What grading would send: requests not already cached, and their estimated tokens."""

    cases: int = 0
    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    """Estimated at four characters a token."""
    by_dimension: Counter[str] = field(default_factory=Counter)
    unrenderable: int = 0
    """Cases a rubric cannot render: grading records `judge_error` for them, asking nothing."""


async def plan(judge: Judge, *sources: Any) -> Plan:
    """Count what grading the cases of every source with `judge` would send."""
    found = Plan()
    for item in itertools.chain.from_iterable(iter_cases(s) for s in sources):
        if not isinstance(item, Case) or item.response is None:
            continue
        found.cases += 1
        try:
            questions = judge.questions(item, judge.check(item)).questions
        except (TemplateError, ShapeError):  # grading gives this case `judge_error`
            found.unrenderable += 1
            continue
        hidden = judge.probe_reader.needed(questions) if judge.probe_reader else None
        if hidden is not None:  # the probe's hidden state, one a case
            if await judge.probe_reader.is_cached(hidden):  # type: ignore[union-attr]
                found.cached += 1
            else:
                found.requests += 1
                found.by_dimension["hidden_state"] += 1
                found.prompt_tokens += sum(len(m["content"]) for m in hidden.messages) // 4
        for question in questions:
            if question.rubric.scored:  # one request per question asked (per call), no samples
                for ask in asks(question.rubric, question.messages, question.calls):
                    if await judge.is_answered(question.rubric, ask):
                        found.cached += 1
                        continue
                    found.requests += 1
                    found.by_dimension[question.dimension] += 1
                    found.prompt_tokens += sum(len(m["content"]) for m in ask.messages) // 4
                continue
            for sample in range(judge.samples):
                if await judge.is_cached(question, sample):
                    found.cached += 1
                    continue
                found.requests += 1
                found.by_dimension[question.dimension] += 1
                chars = sum(len(m["content"]) for m in question.messages)
                found.prompt_tokens += chars // 4 + len(orjson.dumps(question.schema)) // 4
    return found
