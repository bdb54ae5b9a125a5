"""How the judge decides with a probe: one hidden state a case (its first scored question's
prompt, asked before the answer tokens so that they reuse the server's cache of it), and each
verdict's P(correct) from the head of its dimension and branch."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np

from judge._errors import JudgeError
from judge.judging._aligned import AlignedSpec
from judge.judging._cache import VerdictCache
from judge.judging._hidden import HiddenStates
from judge.judging._linear_probe import SHIPPED_PROBE, Manifest, Probe, build_probe, load_probe
from judge.judging._questions import Question
from judge.judging._rubric import Combine, RubricSet
from judge.judging._scored import PROBE_FEATURE, Ask, asks

ProbeChoice = str | Path | Probe | Literal["default"] | None
"""`default`: the shipped probe for the embedded judge with its own rubrics (none otherwise);
a path or a loaded probe; None: decide by the rubrics' weights."""


def probe_ask(questions: list[Question]) -> Ask | None:
    """The prompt whose hidden state a case's probe reads: the first question of its first
    scored rubric (selection's, unless code decided it; then arguments')."""
    for question in questions:
        if question.rubric.scored and question.dimension not in ("trajectory", "value"):
            found = asks(question.rubric, question.messages, question.calls)
            if found:
                return found[0]
    return None


def resolve_probe(
    choice: ProbeChoice, *, embedded: bool, own_rubrics: bool, aligned: AlignedSpec | None = None
) -> Probe | None:
    """The probe a judge decides with, checked against the embedded model file, with an
    aligned spec's heads in place of its own (`aligned_probe`)."""
    return aligned_probe(_chosen_probe(choice, embedded, own_rubrics), aligned, embedded=embedded)


def aligned_probe(probe: Probe | None, aligned: AlignedSpec | None, *, embedded: bool
                  ) -> Probe | None:  # fmt: skip
    """The probe with the heads of an aligned spec's `probe` dimensions in place of its own
    of the same dimension and branch (its other heads kept); `JudgeError` for a judge other
    than the embedded one (the heads read its hidden states)."""
    from judge.endpoints._local import MODEL_SHA256

    chosen = [(n, f) for n, f in (aligned.dimensions.items() if aligned else ()) if f.heads]
    if not chosen:
        return probe
    if not embedded:
        raise JudgeError(
            f"the aligned spec's {chosen[0][0]} probe reads the embedded judge's hidden states: "
            "it cannot be used with another judge model or endpoint"
        )
    heads = dict(probe.heads) if probe is not None else {}
    rubrics = dict(probe.manifest.rubrics) if probe is not None else {}
    for _, found in chosen:
        heads.update({(h.dimension, h.branch): h for h in found.heads})
        rubrics.update(found.probe_rubrics)
    created = probe.manifest.created if probe is not None else "judge align"
    manifest = Manifest(created=created, model_sha256=MODEL_SHA256, rubrics=rubrics)
    return build_probe(manifest, list(heads.values()))


def _chosen_probe(choice: ProbeChoice, embedded: bool, own_rubrics: bool) -> Probe | None:
    from judge.endpoints._local import MODEL_SHA256

    if choice is None:
        return None
    if isinstance(choice, str) and choice == "default":
        if not (embedded and own_rubrics) or not SHIPPED_PROBE.is_file():
            return None
        return load_probe(SHIPPED_PROBE, model_sha256=MODEL_SHA256)
    if not embedded:
        raise JudgeError(
            "a probe reads the embedded judge's hidden states: it cannot be used with another "
            "judge model or endpoint (leave out --model/--base-url, or the probe)"
        )
    if isinstance(choice, Probe):
        if choice.manifest.model_sha256 != MODEL_SHA256:
            raise JudgeError("the probe was fitted on another model file's hidden states")
        return choice
    return load_probe(choice, model_sha256=MODEL_SHA256)


def check_rubrics(probe: Probe, rubrics: RubricSet) -> None:
    """A probe reads the answers and the prompts of the rubrics it was fitted with: refuse
    it for a dimension whose rubric is another (or another version)."""
    fitted = probe.manifest.rubrics
    for dimension, _ in probe.heads:
        rubric = next((r for r in rubrics.all if r.dimension == dimension), None)
        if rubric is None or not rubric.scored or fitted.get(rubric.name) != rubric.version:
            mine = "none" if rubric is None else f"{rubric.name} {rubric.version}"
            theirs = ", ".join(f"{n} {v}" for n, v in sorted(fitted.items())) or "none recorded"
            raise JudgeError(
                f"{probe.path or 'the probe'} was fitted on the questions of {theirs}; this "
                f"judge's {dimension} rubric is {mine}: train a probe for it with "
                "`judge local train`"
            )


class ProbeReader:
    """A judge's probe and the server it reads hidden states from (started on first use)."""

    def __init__(self, probe: Probe, cache: VerdictCache | None) -> None:
        self.probe = probe
        self._cache = cache
        self._states: HiddenStates | None = None

    def states(self) -> HiddenStates:
        if self._states is None:
            from judge.endpoints._local import MODEL_SHA256, local_root

            self._states = HiddenStates(local_root, MODEL_SHA256, self._cache)
        return self._states

    def needed(self, questions: list[Question]) -> Ask | None:
        """The prompt whose hidden state the case needs (None when no head of the probe
        judges any of its questions)."""
        wanted = {
            (q.dimension, "called" if q.calls else "not_called")
            for q in questions
            if q.rubric.scored
        }
        if not wanted & set(self.probe.heads):
            return None
        return probe_ask(questions)

    async def hidden(self, questions: list[Question]) -> tuple[np.ndarray | None, bool]:
        """The case's hidden state (None when none is needed), and whether the server was
        asked for it."""
        ask = self.needed(questions)
        if ask is None:
            return None, False
        return await self.states().fetch(ask.messages)

    async def is_cached(self, ask: Ask) -> bool:
        return await self.states().cached(ask.messages) is not None

    def probability(
        self,
        dimension: str,
        branch: str,
        hidden: np.ndarray | None,
        features: dict[str, float],
    ) -> float | None:
        """P(correct) from the head of this dimension and branch (None: it has none)."""
        head = self.probe.head(dimension, branch)
        if head is None or hidden is None:
            return None
        return head.probability(hidden, features)

    def defaults(self, dimension: str, combine: dict[str, Combine]) -> dict[str, Combine]:
        """What a calibration refits from, per branch: the probe's log-odds as they are where
        it has a head, else the rubric's combination."""
        found = dict(combine)
        for branch in combine:
            if self.probe.head(dimension, branch) is not None:
                found[branch] = Combine(bias=0.0, weights={PROBE_FEATURE: 1.0}, threshold=0.5)
        return found

    async def aclose(self) -> None:
        if self._states is not None:
            await self._states.aclose()
            self._states = None


def decision_defaults(
    rubrics: RubricSet, reader: ProbeReader | None
) -> dict[str, dict[str, Combine]]:
    """Per scored dimension, what a calibration refits from, per branch: the probe's
    P(correct) where it decides, else the rubric's combination."""
    found: dict[str, dict[str, Combine]] = {}
    for rubric in rubrics.all:
        if rubric.scored:
            combine = rubric.combine
            found[rubric.dimension] = (
                combine if reader is None else reader.defaults(rubric.dimension, combine)
            )
    return found
