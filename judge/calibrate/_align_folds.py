"""The parts of `judge align` that touch no judge: which dimensions have labels enough, the
folds (by case, a conversation's cases in one fold), the fixed set of labelled examples drawn
from a set of folds (or all of them: the pool of the nearest examples), and Cohen's kappa of
a few pairs (the inner cross-validation's)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from judge._errors import InputError
from judge.cases._case import Case
from judge.cases._hash import content_hash
from judge.judging._aligned import (
    ALIGNED_DIMENSIONS,
    AlignedDimension,
    LabelledExample,
    case_content_sha256,
    example_text,
)

MIN_LABELS = 20
"""A dimension with fewer labels than this is left base: too few to fit and hold out."""
MIN_FOLDS = 3
"""Nested cross-validation needs an outer fold and at least two inner ones."""
NOTE_KEY = "label_note"


def label_of(case: Case, dimension: AlignedDimension) -> str | None:
    found = getattr(case.labels, dimension, None) if case.labels is not None else None
    return None if found is None else str(found)


def label_counts(cases: Sequence[Case]) -> dict[AlignedDimension, int]:
    """Per dimension, how many cases carry its label."""
    return {d: sum(label_of(c, d) is not None for c in cases) for d in ALIGNED_DIMENSIONS}


def fitted_dimensions(counts: dict[AlignedDimension, int]) -> list[AlignedDimension]:
    """The dimensions with labels enough; `InputError` naming each count when none has."""
    fitted = [d for d, n in counts.items() if n >= MIN_LABELS]
    if not fitted:
        said = ", ".join(f"{d} {n}" for d, n in counts.items())
        raise InputError(
            f"no dimension has {MIN_LABELS} labels to align on (labels: {said}): label more "
            "cases (judge review, judge label)"
        )
    return fitted


def refuse_duplicate_ids(sources: Iterable[tuple[str, Sequence[Case]]]) -> None:
    """`InputError` naming an id that two labelled cases share (in one file or two)."""
    seen: dict[str, str] = {}
    for source, cases in sources:
        for case in cases:
            if case.id in seen:
                raise InputError(
                    f"duplicate case id {case.id!r}: in {seen[case.id]} and in {source} "
                    "(each labelled case needs an id of its own)"
                )
            seen[case.id] = source


def conversation_key(case: Case) -> str:
    """What cases that share a conversation (the same messages before the response) share."""
    return content_hash(case.messages)


def request_key(case: Case) -> str | None:
    """What an example shows of a case's conversation: its last user request (two cases that
    share it look alike as examples, whatever their system prompts); None without one."""
    users = [m.get("content") for m in case.messages if m.get("role") == "user"]
    return content_hash(users[-1]) if users else None


def conversation_groups(cases: Sequence[Case]) -> list[list[int]]:
    """The cases' indices grouped so that cases sharing a conversation or a last request are
    in one group (joined transitively), in the order of each group's first case."""
    parent = list(range(len(cases)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for key in (conversation_key, request_key):
        first: dict[str, int] = {}
        for i, case in enumerate(cases):
            found = key(case)
            if found is not None:
                parent[root(i)] = root(first.setdefault(found, i))
    groups: dict[int, list[int]] = {}
    for i in range(len(cases)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def assign_folds(cases: Sequence[Case], folds: int, seed: int) -> list[int]:
    """Each case's fold: the conversations shuffled (seeded), the largest first, each into the
    smallest fold so far; a conversation's cases (and the cases that share its last request,
    which its examples would show alike) always in one fold."""
    order = conversation_groups(cases)
    if len(order) < MIN_FOLDS:
        raise InputError(
            f"the labelled cases hold {len(order)} conversations: nested cross-validation "
            f"needs at least {MIN_FOLDS}"
        )
    random.Random(seed).shuffle(order)
    order.sort(key=len, reverse=True)  # stable: equal sizes stay shuffled
    count = min(folds, len(order))
    sizes = [0] * count
    fold_of = [0] * len(cases)
    for members in order:
        fold = min(range(count), key=lambda j: (sizes[j], j))
        sizes[fold] += len(members)
        for i in members:
            fold_of[i] = fold
    return fold_of


def draw_examples(
    cases: Sequence[Case], indices: Iterable[int], dimension: AlignedDimension, k: int, seed: int
) -> tuple[LabelledExample, ...]:
    """A fixed set of `k` labelled examples of `dimension` from the cases at `indices` (and
    from no other): both labels represented where both are there, drawn seeded."""
    by_label: dict[str, list[int]] = {"correct": [], "incorrect": []}
    for i in sorted(set(indices)):
        label = label_of(cases[i], dimension)
        if label in by_label:
            by_label[label].append(i)
    rng = random.Random(f"{seed}:{dimension}")
    pools = {label: rng.sample(found, len(found)) for label, found in by_label.items()}
    chosen: list[int] = []
    while len(chosen) < k and any(pools.values()):
        for label in ("incorrect", "correct"):  # alternate: both labels before a second of one
            if pools[label] and len(chosen) < k:
                chosen.append(pools[label].pop())
    return tuple(_example(cases[i], dimension) for i in chosen)


def pool_examples(
    cases: Sequence[Case], indices: Iterable[int], dimension: AlignedDimension
) -> tuple[LabelledExample, ...]:
    """Every labelled case of `dimension` at `indices`, in the cases' order: the pool the
    nearest examples of each case are drawn from."""
    return tuple(
        _example(cases[i], dimension)
        for i in sorted(set(indices))
        if label_of(cases[i], dimension) in ("correct", "incorrect")
    )


def _example(case: Case, dimension: AlignedDimension) -> LabelledExample:
    note = case.meta.get(NOTE_KEY)
    return LabelledExample(
        id=case.id,
        sha256=case_content_sha256(case),
        label=label_of(case, dimension),  # type: ignore[arg-type]
        note=note if isinstance(note, str) and note.strip() else None,
        text=example_text(case),
    )


def kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of (label, verdict) pairs; None where it is undefined."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(a == b for a, b in pairs) / n
    expected = sum(
        (sum(a == x for a, _ in pairs) / n) * (sum(b == x for _, b in pairs) / n)
        for x in ("correct", "incorrect")
    )
    return None if expected >= 1 else (observed - expected) / (1 - expected)
