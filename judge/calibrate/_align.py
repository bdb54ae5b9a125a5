"""`judge align`: per dimension, the candidate (base, weights, probe, policy, examples,
examples+policy, nearest, nearest+policy) that makes the judge agree more with the user's
labels, chosen by nested cross-validation and kept only where its held-out kappa beats the
base's. `weights` refits a scored rubric's decision on the training folds' labels, `probe`
trains the embedded judge's probe heads on them (neither grades anew: `_align_weights`,
`_align_probe`); `examples` shows every case one fixed set of k labelled cases;
`nearest` the k labelled cases nearest each case (TF-IDF), drawn from all the labels of the
training folds.

Folds are by case, a conversation's cases in one. For each outer fold, an inner
cross-validation on the other folds picks the candidate with the best inner kappa (ties to
the simpler, in the order above); the outer fold's cases are graded with it, its examples
drawn from the other folds only. The pooled outer verdicts give the kappa "after", the
base's held-out verdicts the kappa "before". A case is never in its own prompt: a fold's
examples come from other folds (and the judge leaves out an example that is the
graded case by id or content hash)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from judge.calibrate._agreement import dimension_stats, judge_verdict
from judge.calibrate._align_folds import (
    assign_folds,
    draw_examples,
    fitted_dimensions,
    kappa,
    label_counts,
    label_of,
    pool_examples,
)
from judge.calibrate._align_probe import ProbeSource, ProbeUnits
from judge.calibrate._align_weights import BaseItems, Defaults
from judge.cases._case import Case
from judge.checks._result import CaseResult
from judge.judging._aligned import (
    AlignedDimension,
    AlignedSpec,
    DimensionAlignment,
    FittedCase,
    case_content_sha256,
)

Candidate = Literal[
    "base", "weights", "probe", "policy", "examples", "examples+policy", "nearest",
    "nearest+policy",
]  # fmt: skip
SIMPLEST_FIRST: tuple[Candidate, ...] = (
    "base", "weights", "probe", "policy", "examples", "examples+policy", "nearest",
    "nearest+policy",
)  # fmt: skip
"""Every candidate, the simpler first: a tie goes to the earlier."""
DEFAULT: tuple[Candidate, ...] = tuple(c for c in SIMPLEST_FIRST if c != "probe")
"""What `judge align` measures unless told: all but `probe`, which reads a hidden state a case
more, about 1.7 times the base's seconds per case on the embedded judge, and gained little over
`weights` where measured (docs/measured/align.md): opt in with `--candidates`."""
REFITTED: tuple[Candidate, ...] = ("weights", "probe")
"""Candidates refitted on the base judge's verdicts, fold by fold: they grade nothing anew."""
Grader = Callable[[AlignedSpec | None, list[Case]], Awaitable[list[CaseResult]]]
"""Grades cases with a judge aligned by the spec (None: the base judge)."""
Verdicts = dict[int, dict[AlignedDimension, str | None]]
"""Per case index, per dimension, the judge's verdict (None: none usable)."""


@dataclass
class Held:
    """One candidate's held-out figures on one dimension."""

    n: int
    kappa: float | None
    ci_low: float | None
    ci_high: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "kappa": self.kappa, "ci_low": self.ci_low, "ci_high": self.ci_high}


@dataclass
class DimensionFit:
    """What the fitting measured on one dimension and what it chose."""

    dimension: AlignedDimension
    labels: int
    choice: Candidate
    why: str
    candidates: dict[Candidate, Held] = field(default_factory=dict)
    before: Held | None = None
    after: Held | None = None
    per_fold: list[Candidate] = field(default_factory=list)
    """The candidate each outer fold's inner cross-validation chose."""


@dataclass
class AlignmentFit:
    spec: AlignedSpec
    fits: list[DimensionFit]
    left_base: dict[AlignedDimension, int]
    """Dimensions with some labels, but too few: left base, with their count."""
    folds: int
    unweighable: list[AlignedDimension] = field(default_factory=list)
    """Dimensions `weights` was asked for but not measured on: their verdicts carry no
    answers to weigh anew (not a scored rubric's)."""
    unprobed: list[AlignedDimension] = field(default_factory=list)
    """Dimensions `probe` was asked for but not measured on: not the embedded judge's, or
    no hidden state (none could be read) and answers to learn from."""


class _Fitting:
    """The graded verdicts of every (candidate, training folds) the nested CV needs."""

    def __init__(
        self, cases: Sequence[Case], dimensions: list[AlignedDimension], policy: str | None,
        k: int, seed: int, fold_of: list[int], allowed: Sequence[Candidate] = SIMPLEST_FIRST,
        defaults: Defaults | None = None, probe: ProbeSource | None = None,
    ) -> None:  # fmt: skip
        self.cases, self.dimensions, self.policy = list(cases), dimensions, policy
        self.k, self.seed, self.fold_of = k, seed, fold_of
        self.folds = frozenset(fold_of)
        self.defaults, self.probe = defaults or {}, probe
        self.candidates: tuple[Candidate, ...] = tuple(
            c for c in SIMPLEST_FIRST
            if c == "base" or (c in allowed and (policy or "policy" not in c))
            and (c != "weights" or self.defaults) and (c != "probe" or probe)
        )  # fmt: skip
        self.graded: dict[tuple[Candidate, frozenset[int]], Verdicts] = {}
        self.base = BaseItems([], [], {}, [])
        """The base judge's verdicts as the `weights` refit reads them (once graded)."""
        self.units = ProbeUnits([], [], [], [])
        """The base judge's verdicts with their hidden states, as `probe` learns from them."""

    def candidates_for(self, d: AlignedDimension) -> tuple[Candidate, ...]:
        """The candidates measured on the dimension: `weights` only where the base judge's
        verdicts carry answers to weigh anew, `probe` where they have hidden states too."""
        return tuple(
            c for c in self.candidates
            if (c != "weights" or self.base.weighable(d))
            and (c != "probe" or self.units.trainable(d))
        )  # fmt: skip

    def spec(self, candidate: Candidate, train: frozenset[int]) -> AlignedSpec | None:
        """The candidate's spec with its examples drawn from the training folds only."""
        if candidate == "base" or candidate in REFITTED:  # they change no prompt
            return None
        indices = [i for i, f in enumerate(self.fold_of) if f in train]
        dimensions = {
            d: alignment_of(candidate, "a candidate being measured", self.policy, self.cases,
                            indices, d, self.k, self.seed)
            for d in self.dimensions
        }  # fmt: skip
        return AlignedSpec(version=1, dimensions=dimensions)

    def trains(self) -> list[frozenset[int]]:
        """Every training set the nested CV grades with: all but one fold (the outer), all
        but two (an outer and an inner)."""
        alone = [self.folds - {o} for o in sorted(self.folds)]
        pairs = {self.folds - {o, i} for o in self.folds for i in self.folds if o != i}
        return [*alone, *sorted(pairs, key=sorted)]

    async def grade(self, grader: Grader) -> None:
        everyone = list(range(len(self.cases)))
        for candidate in self.candidates:
            if candidate == "weights":  # after the base, on its verdicts
                self._refit(candidate, self.base)
            elif candidate == "probe":
                self._refit(candidate, self.units)
            elif not drawn(candidate):  # the same prompt for every fold: graded once
                spec = self.spec(candidate, self.folds)
                results = await grader(spec, [self.cases[i] for i in everyone])
                self.graded[candidate, self.folds] = self._verdicts(everyone, results)
                if candidate == "base":
                    await self._keep_base(results)
            else:
                for train in self.trains():
                    held = [i for i, f in enumerate(self.fold_of) if f not in train]
                    chosen = [self.cases[i] for i in held]
                    results = await grader(self.spec(candidate, train), chosen)
                    self.graded[candidate, train] = self._verdicts(held, results)

    async def _keep_base(self, results: list[CaseResult]) -> None:
        """The base judge's verdicts as the refitted candidates read them (and, for `probe`,
        each case's hidden state)."""
        if "weights" in self.candidates:
            self.base = BaseItems(self.cases, results, self.defaults, self.dimensions)
        if self.probe is not None and "probe" in self.candidates:
            states = await self.probe.hidden(self.cases)
            self.units = ProbeUnits(self.cases, results, states, self.dimensions)

    def _refit(self, candidate: Candidate, refitter: BaseItems | ProbeUnits) -> None:
        """The candidate's verdicts of every training set's held-out cases, refitted on the
        training cases' base verdicts and labels: no request."""
        base = self.graded["base", self.folds]
        for train in self.trains():
            taught = [i for i, f in enumerate(self.fold_of) if f in train]
            held = {i: base[i] for i, f in enumerate(self.fold_of) if f not in train}
            refit = {
                d: refitter.verdicts(d, taught, {i: v[d] for i, v in held.items()})
                for d in self.dimensions
            }
            self.graded[candidate, train] = {i: {d: refit[d][i] for d in refit} for i in held}

    def _verdicts(self, indices: list[int], results: list[CaseResult]) -> Verdicts:
        return {
            i: {d: judge_verdict(r, d)[0] for d in self.dimensions}
            for i, r in zip(indices, results, strict=True)
        }

    def verdict(self, candidate: Candidate, train: frozenset[int], i: int, d: AlignedDimension
                ) -> str | None:  # fmt: skip
        """Case i's verdict by the candidate built from the training folds (never its own)."""
        assert self.fold_of[i] not in train or not per_train(candidate)
        key = train if per_train(candidate) else self.folds
        return self.graded[candidate, key][i][d]

    def pairs(self, candidate: Candidate, d: AlignedDimension, cases: list[int],
              leave_out: frozenset[int] = frozenset()) -> list[tuple[str, str]]:  # fmt: skip
        """(label, verdict) of the cases, each graded with the training folds that leave out
        its own fold and `leave_out`."""
        found = []
        for i in cases:
            label = label_of(self.cases[i], d)
            verdict = self.verdict(candidate, self.folds - leave_out - {self.fold_of[i]}, i, d)
            if label is not None and verdict is not None:
                found.append((label, verdict))
        return found

    def best(self, d: AlignedDimension, cases: list[int], leave_out: frozenset[int]) -> Candidate:
        """The candidate with the best kappa over the cases (ties to the simpler)."""
        candidates = self.candidates_for(d)
        scores = {c: kappa(self.pairs(c, d, cases, leave_out)) for c in candidates}
        return max(candidates, key=lambda c: (_score(scores[c]), -SIMPLEST_FIRST.index(c)))

    def refitted(self, found: DimensionFit, everyone: list[int]) -> DimensionAlignment:
        """The spec's `weights` or `probe` of a dimension, refitted on every label."""
        d, why = found.dimension, found.why
        if found.choice == "weights":
            return DimensionAlignment(
                choice="weights", why=why, weights=self.base.fitted(d, everyone)
            )
        assert self.probe is not None
        heads = self.units.heads(d, everyone)
        if not heads:  # no branch has labels enough for a head on all of them (rare)
            return DimensionAlignment(choice="base", why=f"base kept: no head fitted ({why})")
        return DimensionAlignment(
            choice="probe", why=why, heads=heads, probe_rubrics=self.probe.rubrics
        )

    def fit(self, d: AlignedDimension, labels: int) -> DimensionFit:
        labelled = [i for i, c in enumerate(self.cases) if label_of(c, d) is not None]
        held = {c: _held(self.pairs(c, d, labelled)) for c in self.candidates_for(d)}
        after: list[tuple[str, str]] = []
        per_fold: list[Candidate] = []
        for outer in sorted(self.folds):
            inner = [i for i in labelled if self.fold_of[i] != outer]
            chosen = self.best(d, inner, frozenset({outer}))
            per_fold.append(chosen)
            after += self.pairs(chosen, d, [i for i in labelled if self.fold_of[i] == outer])
        before, nested = held["base"], _held(after)
        best = self.best(d, labelled, frozenset())
        wins = best != "base" and _score(nested.kappa) > _score(before.kappa)
        figures = f"nested held-out kappa {_shown(nested)} against the base's {_shown(before)}"
        why = (
            f"{best}: {figures}" if wins
            else f"base kept: no candidate beat the base held out ({figures})"
        )  # fmt: skip
        return DimensionFit(d, labels, best if wins else "base", why, held, before, nested,
                            per_fold)  # fmt: skip


async def fit_alignment(
    cases: Sequence[Case], grader: Grader, *, policy: str | None = None, folds: int = 5,
    k: int = 4, seed: int = 0, candidates: Sequence[Candidate] = DEFAULT,
    defaults: Defaults | None = None, probe: ProbeSource | None = None,
) -> AlignmentFit:  # fmt: skip
    """Fit the spec on the labelled cases, choosing among `candidates` (the base always
    measured; those with `policy` only with a policy; `weights` only with the judge's
    `defaults`, on a dimension its verdicts weigh; `probe` only with the embedded judge's
    hidden states, `probe`) (`InputError` where no dimension has labels enough, or the cases
    hold too few conversations to nest the folds)."""
    counts = label_counts(cases)
    dimensions = fitted_dimensions(counts)
    fold_of = assign_folds(cases, folds, seed)
    fitting = _Fitting(cases, dimensions, policy, k, seed, fold_of, candidates, defaults, probe)
    await fitting.grade(grader)
    fits = [fitting.fit(d, counts[d]) for d in dimensions]
    left_base = {d: n for d, n in counts.items() if n > 0 and d not in dimensions}
    everyone = list(range(len(cases)))
    spec_dimensions: dict[AlignedDimension, DimensionAlignment] = {}
    for found in fits:  # the examples, or the weights, from all the labels
        if found.choice in REFITTED:
            chosen = fitting.refitted(found, everyone)
        else:
            chosen = alignment_of(found.choice, found.why, policy, cases, everyone,
                                  found.dimension, k, seed)  # fmt: skip
        measured = _measured(found, len(set(fold_of)), k, seed)
        spec_dimensions[found.dimension] = chosen.model_copy(update={"measured": measured})
    for d, n in left_base.items():
        spec_dimensions[d] = DimensionAlignment(
            choice="base", why=f"base kept: {n} labels, too few to align on"
        )
    fitted_on = tuple(
        FittedCase(id=c.id, sha256=case_content_sha256(c))
        for c in cases
        if any(label_of(c, d) is not None for d in counts)
    )
    spec = AlignedSpec(version=1, dimensions=spec_dimensions, fitted_on=fitted_on)
    unweighable, unprobed = (
        [d for d in dimensions if c in candidates and c not in fitting.candidates_for(d)]
        for c in REFITTED
    )
    return AlignmentFit(spec, fits, left_base, len(set(fold_of)), unweighable, unprobed)


def drawn(candidate: Candidate) -> bool:
    """Whether the candidate shows examples (drawn from the training folds)."""
    return "examples" in candidate or "nearest" in candidate


def per_train(candidate: Candidate) -> bool:
    """Whether the candidate is built anew from each training set (examples, refits)."""
    return drawn(candidate) or candidate in REFITTED


def alignment_of(
    candidate: Candidate, why: str, policy: str | None, cases: Sequence[Case],
    indices: Sequence[int], d: AlignedDimension, k: int, seed: int,
) -> DimensionAlignment:  # fmt: skip
    """The candidate's alignment of dimension `d`, its examples from the cases at `indices`
    only: `examples`, a fixed set of k; `nearest`, all of them, each case shown its k nearest
    (the spec's choice `examples` with `nearest` k). Where there is no example to show, the
    policy alone (`...+policy`) or the base."""
    if "nearest" in candidate:
        examples = pool_examples(cases, indices, d)
    else:
        examples = draw_examples(cases, indices, d, k, seed) if drawn(candidate) else ()
    if drawn(candidate) and not examples:  # nothing to show: the policy alone, if any
        candidate = "policy" if "policy" in candidate else "base"
    choice = "base" if candidate == "base" else candidate.replace("nearest", "examples")
    return DimensionAlignment(
        choice=choice,  # type: ignore[arg-type]
        why=why,
        policy=policy if "policy" in candidate else None,
        examples=examples,
        nearest=k if "nearest" in candidate else None,
    )


def _measured(found: DimensionFit, folds: int, k: int, seed: int) -> dict[str, Any]:
    assert found.before is not None and found.after is not None
    return {
        "labels": found.labels,
        "folds": folds,
        "k": k,
        "seed": seed,
        "before": found.before.as_dict(),
        "after": found.after.as_dict(),
        "candidates": {c: h.as_dict() for c, h in found.candidates.items()},
        "chosen_per_fold": found.per_fold,
    }


def _held(pairs: list[tuple[str, str]]) -> Held:
    stats = dimension_stats(pairs, {})
    return Held(stats.n, stats.kappa, stats.ci_low, stats.ci_high)


def _score(value: float | None) -> float:
    return -2.0 if value is None else value


def _shown(held: Held) -> str:
    if held.kappa is None:
        return f"n/a (n={held.n})"
    interval = "" if held.ci_low is None else f" [{held.ci_low:.2f}, {held.ci_high:.2f}]"
    return f"{held.kappa:.2f}{interval} (n={held.n})"
