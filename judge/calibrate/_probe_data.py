"""What a probe is trained on: for every labelled case, the embedded judge's hidden state (its
first scored question's prompt) and its verdicts' answers and counts, by dimension and branch.
Everything asked is cached like verdicts, so a second training run asks nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from jinja2 import TemplateError

from judge._errors import JudgeError
from judge.cases._calls import ShapeError
from judge.cases._case import Case
from judge.checks._outcome import AnswerVerdict, ArgumentVerdict, SelectionVerdict
from judge.checks._result import CaseResult
from judge.endpoints._local import MODEL_SHA256, local_root
from judge.judging._grade import Judge
from judge.judging._hidden import HiddenStates
from judge.judging._probing import probe_ask
from judge.judging._questions import used_tools
from judge.judging._scored import PROBE_FEATURE, Ask

DIMENSIONS = ("selection", "arguments", "answer")


@dataclass
class Row:
    """One verdict the judge asked about: what a head reads, and the label it learns."""

    features: dict[str, float]
    label: bool
    trainable: bool
    """An arguments call of an incorrect case with several calls is not: which is wrong is
    not known."""


@dataclass
class Unit:
    """One labelled case on one dimension."""

    source: str
    case_id: str
    dimension: str
    branch: str
    label: bool
    hidden: np.ndarray | None
    rows: list[Row] = field(default_factory=list)
    derived: bool = False
    """Code decided the verdict (a broken call, an unknown tool): no probe changes it."""
    rubric_says: bool | None = None
    """The verdict the rubric's own weights gave."""


@dataclass(frozen=True)
class Source:
    """One labelled file: its name (the file's stem unless given), its cases and its hash."""

    name: str
    path: str
    sha256: str
    cases: tuple[Case, ...]

    def summary(self) -> dict[str, object]:
        labels: dict[str, int] = {}
        for case in self.cases:
            for dimension in DIMENSIONS:
                if case.labels is not None and getattr(case.labels, dimension) is not None:
                    labels[dimension] = labels.get(dimension, 0) + 1
        return {
            "name": self.name,
            "path": self.path,
            "sha256": self.sha256,
            "cases": len(self.cases),
            "labels": labels,
        }


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def units_of(source: str, case: Case, result: CaseResult, hidden: np.ndarray | None) -> list[Unit]:
    """The case's labelled dimensions, as the judge's verdicts (without a probe) left them."""
    found: list[Unit] = []
    outcome = result.judge
    if case.labels is None or outcome is None or outcome.status != "ok":
        return found
    branch = "called" if case.tool_calls else "not_called"
    for dimension in DIMENSIONS:
        label = getattr(case.labels, dimension)
        if label is None:
            continue
        unit = Unit(source, case.id, dimension, branch, label == "correct", hidden)
        if dimension == "selection":
            _single(unit, outcome.selection)
        elif dimension == "answer":
            unit.branch = "called" if used_tools(case) else "not_called"
            _single(unit, outcome.answer)
        else:
            _calls(unit, outcome.arguments)
        if unit.derived or unit.rows:
            found.append(unit)
    return found


def _single(unit: Unit, verdict: SelectionVerdict | AnswerVerdict | None) -> None:
    if verdict is None:
        return
    if verdict.source == "derived":
        unit.derived, unit.rubric_says = True, verdict.verdict == "correct"
        return
    if verdict.features is None:
        return
    unit.rubric_says = (verdict.leaning or verdict.verdict) == "correct"
    unit.rows.append(Row(_own(verdict.features), unit.label, trainable=True))


def _calls(unit: Unit, verdicts: Sequence[ArgumentVerdict]) -> None:
    applicable = [v for v in verdicts if v.verdict != "not_applicable"]
    if not applicable:
        return
    if any(v.source == "derived" for v in applicable):
        unit.derived, unit.rubric_says = True, False
        return
    if any(v.features is None for v in applicable):
        return
    unit.rubric_says = all((v.leaning or v.verdict) == "correct" for v in applicable)
    trainable = unit.label or len(applicable) == 1
    for verdict in applicable:
        unit.rows.append(Row(_own(verdict.features or {}), unit.label, trainable))


def _own(features: dict[str, float]) -> dict[str, float]:
    """The answers and counts, without what an earlier probe said."""
    return {k: v for k, v in features.items() if k != PROBE_FEATURE}


def labelled(case: Case) -> bool:
    """Whether the case has a label of a dimension a probe learns (and a response to judge)."""
    return (
        case.labels is not None
        and case.response is not None
        and any(getattr(case.labels, d) is not None for d in DIMENSIONS)
    )


def hidden_ask(judge: Judge, case: Case) -> Ask | None:
    """The prompt whose hidden state a probe reads for the case: its first scored question's."""
    return probe_ask(judge.questions(case, judge.check(case)).questions)


async def _case_units(
    source: str, case: Case, judge: Judge, states: HiddenStates, only_cached: bool
) -> list[Unit] | None:
    """The case's units, or None when it is left out (not cached whole, with `only_cached`;
    or its judge could not judge it)."""
    ask = hidden_ask(judge, case)
    hidden = None
    if ask is not None:
        hidden = await states.cached(ask.messages)
        if hidden is None:
            if only_cached:
                return None
            hidden = await states.of(ask.messages)
    result = await judge.grade_case(case)
    if result.judge is not None and result.judge.status != "ok":
        return None
    return units_of(source, case, result, hidden)


async def collect(
    sources: Sequence[Source],
    *,
    cache_dir: str | None = None,
    cache: bool = True,
    only_cached: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Unit], int]:
    """Every labelled unit of these sources, by the embedded judge without a probe (answers
    judged where a case has an answer label), and how many cases were left out. The hidden
    state is asked first, so the answer tokens reuse the server's cache of the prompt. A case
    the judge cannot judge (a `judge_error`, a hidden state refused) is left out, and so, with
    `only_cached` (nothing is asked), is one the cache does not answer whole."""
    plain = Judge(probe=None, cache_dir=cache_dir, cache=cache)
    answering = Judge(probe=None, cache_dir=cache_dir, cache=cache, answers=True)
    if only_cached:
        for judge in (plain, answering):
            judge.refuse({}, offline="not in the cache (--only-cached)")
    total, done, left_out = sum(len(s.cases) for s in sources), 0, 0
    units: list[Unit] = []
    states = HiddenStates(local_root, MODEL_SHA256, plain.verdict_cache)
    try:
        for source in sources:
            for case in source.cases:
                done += 1
                if progress is not None:
                    progress(done, total)
                if not labelled(case):
                    continue
                judge = answering if case.labels and case.labels.answer else plain
                try:
                    found = await _case_units(source.name, case, judge, states, only_cached)
                except (JudgeError, TemplateError, ShapeError, ValueError):
                    found = None  # this case only: the others are still learned from
                if found is None:
                    left_out += 1
                    continue
                units.extend(found)
    finally:
        await states.aclose()
        await plain.aclose()
        await answering.aclose()
    return units, left_out
