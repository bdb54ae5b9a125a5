"""Answering a case's questions: a scored rubric's one-token questions decided by its weights
(or the probe, on the case's hidden state), a generated verdict asked once per sample and
decided by majority, and a `$judge` value's yes or no (one token, or the samples' majority)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from judge._errors import JudgeError
from judge.checks._outcome import (
    AnswerVerdict,
    ArgumentVerdict,
    SelectionVerdict,
    TrajectoryVerdict,
)
from judge.judging._asker import Asker
from judge.judging._decide import majority, majority_arguments
from judge.judging._probing import ProbeReader
from judge.judging._questions import Question
from judge.judging._reading import ReplyError
from judge.judging._replies import ValueVerdict
from judge.judging._scored import (
    Fit,
    answer_verdict,
    argument_verdict,
    asks,
    selection_verdict,
)


@dataclass
class Answered:
    """What a judge answered to a case's questions."""

    selection: SelectionVerdict | None = None
    arguments: list[ArgumentVerdict] = field(default_factory=list)
    trajectory: TrajectoryVerdict | None = None
    answer: AnswerVerdict | None = None
    flips: list[float] = field(default_factory=list)
    error: ReplyError | None = None
    values: dict[int, ValueVerdict] = field(default_factory=dict)
    """The `$judge` values answered, by their index in the result's `judge_values`."""


class Answering:
    """One judge's way of answering questions: its asker, samples, probe and fitted weights."""

    def __init__(
        self, asker: Asker, samples: int, probing: ProbeReader | None, fits: dict[str, Fit]
    ) -> None:
        self.asker = asker
        self.samples = samples
        self.probing = probing
        self.fits = fits
        """Per dimension, a calibration's refit of the scored rubric (shared with the judge)."""

    async def answered(self, questions: list[Question], tally: Counter[str]) -> Answered:
        """The verdicts the judge gives to these questions (the first error, if any)."""
        found = Answered()
        hidden = None
        if self.probing is not None:  # asked first: the answer tokens reuse its prompt
            try:
                hidden, asked = await self.probing.hidden(questions)
            except JudgeError as exc:
                found.error = ReplyError(str(exc), None)
                return found
            tally.update(requests=int(asked))
        for question in questions:
            try:
                if question.value is not None:
                    found.values[question.value] = await self._value(question, tally)
                elif question.rubric.scored:  # one greedy token a question: samples agree
                    _take_scored(found, await self._scored(question, tally, hidden))
                else:
                    _take_sampled(found, question, await self._sampled(question, tally))
            except ReplyError as exc:
                found.error = found.error or exc
        return found

    async def _sampled(self, question: Question, tally: Counter[str]) -> list[Any]:
        return [await self.asker.ask(question, sample, tally) for sample in range(self.samples)]

    async def _value(self, question: Question, tally: Counter[str]) -> ValueVerdict:
        """A `$judge` value's verdict: a scored rubric's one token, P(its first answer) read
        from the logprobs (greedy: samples would agree); else the majority of the samples of
        a generated `{"verdict": ...}`, its confidence from the logprobs (one sample) or the
        samples' agreement."""
        rubric = question.rubric
        if not rubric.scored:
            verdict: ValueVerdict = majority(await self._sampled(question, tally))[0]
            return verdict
        [ask] = asks(rubric, question.messages, question.calls)
        p = await self.asker.answer(rubric, ask, tally)
        yes = p >= 0.5
        return ValueVerdict(
            verdict="yes" if yes else "no",
            confidence=p if yes else 1 - p,
            confidence_source="logprobs",
        )

    async def _scored(
        self, question: Question, tally: Counter[str], hidden: Any
    ) -> SelectionVerdict | AnswerVerdict | list[ArgumentVerdict]:
        """A scored rubric's verdicts: each of its questions answered with one token, decided
        by the probe on the case's hidden state where the judge has one."""
        rubric = question.rubric
        found: dict[int | None, dict[str, float]] = {}
        for ask in asks(rubric, question.messages, question.calls):
            found.setdefault(ask.call, {})[ask.id] = await self.asker.answer(rubric, ask, tally)
        fit = self.fits.get(question.dimension)
        counts = dict(question.counts)
        branch = "called" if question.calls else "not_called"

        def probed(features: dict[str, float]) -> float | None:
            if self.probing is None:
                return None
            return self.probing.probability(question.dimension, branch, hidden, features)

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


def _take_scored(
    found: Answered, scored: SelectionVerdict | AnswerVerdict | list[ArgumentVerdict]
) -> None:
    if isinstance(scored, SelectionVerdict):
        found.selection = scored
    elif isinstance(scored, AnswerVerdict):
        found.answer = scored
    else:
        found.arguments.extend(scored)


def _take_sampled(found: Answered, question: Question, answers: list[Any]) -> None:
    """The majority of a question's samples, and how often they flipped."""
    if question.dimension not in ("selection", "trajectory", "answer"):
        for argument, flip in majority_arguments(answers):
            found.arguments.append(argument)
            found.flips.append(flip)
        return
    verdict, flip = majority(answers)
    found.flips.append(flip)
    if question.dimension == "selection":
        found.selection = verdict
    elif question.dimension == "trajectory":
        found.trajectory = verdict
    else:
        found.answer = verdict
