"""The `probe` candidate of `judge align`: for the embedded judge, a probe trained on the user's
labels, within their distribution (what `judge local train` fits across sources): per
dimension and branch, a head on the judge's hidden state and its answers and counts. It needs
no grading of its own: the base judge's verdicts carry the answers, and each case's hidden
state (of its first scored question's prompt) is read once, cached like the verdicts. Heads
are fitted on the training folds' labels and decide the held-out ones; a branch with too few
labels for a head keeps the base judge's decision."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import numpy as np
from jinja2 import TemplateError

from judge._errors import JudgeError
from judge.calibrate._probe_data import Unit, hidden_ask, units_of
from judge.calibrate._probe_train import Heads, fit_heads, unit_probabilities, unit_says
from judge.cases._calls import ShapeError
from judge.cases._case import Case
from judge.checks._result import CaseResult
from judge.judging._aligned import AlignedDimension
from judge.judging._grade import Judge
from judge.judging._hidden import HiddenStates
from judge.judging._linear_probe import Head

Hidden = Callable[[list[Case]], Awaitable[list[np.ndarray | None]]]
"""Reads each case's hidden state (None: the case has no scored question)."""


@dataclass(frozen=True)
class ProbeSource:
    """What the `probe` candidate needs of the embedded judge: each case's hidden state, and
    the scored rubrics (name: version) whose questions its heads read."""

    hidden: Hidden
    rubrics: dict[str, str]


class ProbeUnits:
    """The labelled units of the base judge's verdicts, with each case's hidden state."""

    def __init__(
        self, cases: Sequence[Case], results: Sequence[CaseResult],
        hidden: Sequence[np.ndarray | None], dimensions: Sequence[AlignedDimension],
    ) -> None:  # fmt: skip
        self.units: dict[AlignedDimension, dict[int, Unit]] = {d: {} for d in dimensions}
        for i, (case, result, state) in enumerate(zip(cases, results, hidden, strict=True)):
            for unit in units_of("align", case, result, state):
                if unit.dimension in self.units:
                    self.units[unit.dimension][i] = unit

    def trainable(self, d: AlignedDimension) -> bool:
        """Whether any unit of the dimension has a hidden state and answers to learn from."""
        return any(u.hidden is not None and u.rows for u in self.units.get(d, {}).values())

    def heads(self, d: AlignedDimension, indices: Sequence[int]) -> tuple[Head, ...]:
        """The heads fitted on the units of the cases at `indices` (a branch with too few
        trainable rows gets none)."""
        mine = self.units.get(d, {})
        fitted = fit_heads([mine[i] for i in indices if i in mine])
        return tuple(head for (dimension, _), head in sorted(fitted.items()) if dimension == d)

    def verdicts(
        self, d: AlignedDimension, train: Sequence[int], base: dict[int, str | None]
    ) -> dict[int, str | None]:
        """The verdicts of the cases in `base` by heads fitted on the cases at `train`: the
        base verdict where no head decides (code decided it, or the branch has no head)."""
        heads: Heads = {(h.dimension, h.branch): h for h in self.heads(d, train)}
        mine = self.units.get(d, {})
        found: dict[int, str | None] = {}
        for i, said in base.items():
            unit = mine.get(i)
            probabilities = None if unit is None else unit_probabilities(heads, unit)
            if unit is None or probabilities is None:
                found[i] = said
                continue
            says = unit_says(unit, probabilities)
            found[i] = None if says is None else "correct" if says else "incorrect"
        return found


async def hidden_states(judge: Judge, cases: list[Case]) -> list[np.ndarray | None]:
    """Each case's hidden state as the embedded judge's probe reads it (its first scored
    question's prompt), cached with the judge's verdicts; None for a case without one or
    whose hidden state could not be read (that case keeps the base judge's decision)."""
    from judge.endpoints import _local  # read when asked: where the embedded model runs now

    states = HiddenStates(_local.local_root, _local.MODEL_SHA256, judge.verdict_cache)
    found: list[np.ndarray | None] = []
    try:
        for case in cases:
            try:
                ask = hidden_ask(judge, case)
                found.append(None if ask is None else await states.of(ask.messages))
            except (JudgeError, TemplateError, ShapeError, ValueError):
                found.append(None)
    finally:
        await states.aclose()
    return found


def probe_source(make: Callable[[], Judge], judge: Judge) -> ProbeSource | None:
    """The `probe` candidate's source for this judge (None unless it is the embedded judge
    with a scored rubric): `make` builds the judge that reads the hidden states."""
    rubrics = {r.name: r.version for r in judge.rubrics.all if r.scored}
    if judge.endpoint is not None or not rubrics:
        return None

    async def hidden(cases: list[Case]) -> list[np.ndarray | None]:
        async with make() as reading:
            return await hidden_states(reading, cases)

    return ProbeSource(hidden, rubrics)
