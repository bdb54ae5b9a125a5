"""`judge sample --for-estimate`: draw cases to label for `judge estimate` and record in each
drawn case's `meta.inclusion_probability` how likely it was to be drawn (the estimator
weighs each label by it).

Uniform: a simple random sample of exactly n cases, each with probability n/N. Active
(after Zrnic and Candès 2024): each case's probability in proportion to the square root of
the judge's chance of being wrong on it, raised to a floor (`FLOOR` x n/N) and capped at 1,
scaled to sum to n; drawn by randomized systematic PPS (the cases in a seeded random order,
a random start, then every unit step along their cumulated probabilities): exactly n cases,
each drawn with its probability. Stratified (`--stratify` given): each stratum its share of
n, at least two, drawn within it either way, each drawn case recording its stratum in
`meta.stratum` (the estimator's variance is then the stratified one)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from judge._errors import InputError
from judge.calibrate._estimate import INCLUSION_KEY, STRATUM_KEY
from judge.cases._case import Case
from judge.cases._json import dumps_line, loads
from judge.checks._result import CaseResult

FLOOR = 0.1
"""The least probability of a case in an active draw, as a share of the uniform n/N: no case
is left so unlikely that its one label swamps the estimate."""
UNSURE = 0.5
"""The judge's chance of being wrong where it abstained, gave no verdict, or disagrees with
the checks and measured no confidence."""
LEAST_PER_STRATUM = 2
"""The fewest cases a stratified draw takes from a stratum: its variance needs two."""
SURE = 0.05
"""Where it agrees with the checks and measured no confidence; also the least chance used."""


def wrong_chance(result: CaseResult | None) -> float:
    """How likely the judge is wrong on a case: 1 - its confidence, the largest over its
    verdicts; where a verdict has none, `UNSURE` or `SURE` by whether the judge disagrees
    with the checks; `UNSURE` without a judge outcome."""
    judged = None if result is None else result.judge
    if judged is None or judged.status != "ok":
        return UNSURE
    verdicts = [judged.selection, *judged.arguments, judged.answer, judged.trajectory]
    given = [v for v in verdicts if v is not None]
    chances: list[float] = []
    for verdict in given:
        if verdict.verdict == "uncertain":
            chances.append(UNSURE)
        elif verdict.confidence is not None:
            chances.append(1.0 - verdict.confidence)
    if len(chances) < len(given) or not given:
        agreement = (judged.agreement.selection, judged.agreement.arguments)
        chances.append(SURE if True in agreement and False not in agreement else UNSURE)
    return max(SURE, max(chances))


def inclusion_probabilities(chances: Sequence[float], n: int, floor: float = FLOOR) -> list[float]:
    """Each case's probability of being drawn: in proportion to the square root of its
    chance of a wrong verdict, at least `floor` x n/N, at most 1, summing to n."""
    size = len(chances)
    if n >= size:
        return [1.0] * size
    least = floor * n / size
    scores = [math.sqrt(max(SURE, c)) for c in chances]

    def total(scale: float) -> float:
        return sum(min(1.0, max(least, scale * s)) for s in scores)

    low, high = 0.0, 1.0 / min(scores)  # at `high` every probability is 1: the total is N
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if total(middle) < n else (low, middle)
    return [min(1.0, max(least, high * s)) for s in scores]


def uniform_probabilities(size: int, n: int) -> list[float]:
    return [min(1.0, n / size)] * size


def draw_for_estimate(pi: Sequence[float], n: int, seed: int = 0) -> list[int]:
    """The indices (ascending) of a seeded draw of n cases with inclusion probabilities `pi`
    (summing to n, each at most 1): a simple random sample where they are all equal, a
    randomized systematic PPS sample otherwise."""
    rng = random.Random(seed)
    if n >= len(pi):
        return list(range(len(pi)))
    if min(pi) == max(pi):
        return sorted(rng.sample(range(len(pi)), n))
    order = rng.sample(range(len(pi)), len(pi))
    step = sum(pi) / n  # 1 but for rounding: exactly n points
    point, reached, chosen = rng.random() * step, 0.0, set[int]()
    for index in order:
        reached += pi[index]
        while point < reached and len(chosen) < n:
            chosen.add(index)
            point += step
    return sorted(chosen)


def _refuse_drawn(path: str, cases: Sequence[Case], stratified: bool) -> None:
    """`InputError` for a case whose `meta` holds what the draw writes (an inclusion
    probability, or a stratum when stratified): never overwritten silently."""
    keys = (INCLUSION_KEY, STRATUM_KEY) if stratified else (INCLUSION_KEY,)
    for number, case in enumerate(cases, start=1):
        meta = case.meta if isinstance(case.meta, dict) else {}
        for key in keys:
            if key in meta:
                raise InputError(
                    f"{path}: case {number} ({case.id}): /meta/{key} is already set "
                    f"({meta[key]!r}); the draw records its own there: draw from the cases "
                    "as they were before an earlier draw, or rename your field"
                )


def with_probability(line: bytes, probability: float, stratum: str | None = None) -> bytes:
    """A case's JSON line with `meta.inclusion_probability` (and `meta.stratum`) set,
    everything else as it was."""
    row = loads(line)
    meta = row.get("meta") if isinstance(row.get("meta"), dict) else {}
    row["meta"] = {**meta, INCLUSION_KEY: round(probability, 12)}
    if stratum is not None:
        row["meta"][STRATUM_KEY] = stratum
    return dumps_line(row)


def stratified_draw(
    strata: dict[tuple[str, ...], list[int]],
    chances: Sequence[float] | None,
    n: int,
    seed: int = 0,
) -> list[tuple[int, float, str]]:
    """A stratified draw of n cases (indices by stratum): each stratum its share, at least
    `LEAST_PER_STRATUM` (what a stratum's variance needs), drawn within it uniformly or, with
    each case's `chances` of a wrong verdict, actively. Each drawn case with its inclusion
    probability and its stratum's name."""
    from judge.calibrate._sample import allocate

    if len(strata) * LEAST_PER_STRATUM > n:
        raise ValueError(
            f"{len(strata)} strata need at least {len(strata) * LEAST_PER_STRATUM} cases "
            f"({LEAST_PER_STRATUM} each): raise --for-estimate, or stratify by fewer fields"
        )
    quota = allocate({k: len(v) for k, v in strata.items()}, n, LEAST_PER_STRATUM)
    rng = random.Random(seed)
    chosen: list[tuple[int, float, str]] = []
    for key in sorted(strata):
        members, size = strata[key], quota[key]
        if chances is None:
            pi = uniform_probabilities(len(members), size)
        else:
            pi = inclusion_probabilities([chances[i] for i in members], size)
        drawn = draw_for_estimate(pi, size, rng.randrange(2**32))
        chosen += [(members[j], pi[j], "|".join(key)) for j in drawn]
    return sorted(chosen)


def sample_for_estimate(
    cases: str, results: str | None, n: int, seed: int = 0, fields: Sequence[str] = ()
) -> tuple[bytes, str]:
    """The lines of CASES drawn for `judge estimate` (active with `results`, the judge's
    grades of them; uniform without; stratified by `fields` where given), and what was
    drawn, in words."""
    from judge.calibrate._review import read_results
    from judge.calibrate._sample import judged_states, read_lines, stratum_key

    raw, loaded = read_lines(cases)
    _refuse_drawn(cases, loaded, bool(fields))
    graded = read_results(results) if results else None
    chances = None if graded is None else [wrong_chance(graded.get(c.id)) for c in loaded]
    how = "uniform" if graded is None else "active"
    if fields:
        judged = judged_states(results) if results else None
        strata: dict[tuple[str, ...], list[int]] = {}
        for index, case in enumerate(loaded):
            strata.setdefault(stratum_key(case, list(fields), judged), []).append(index)
        drawn = stratified_draw(strata, chances, n, seed)
        text = b"".join(with_probability(raw[i], p, name) for i, p, name in drawn)
        return text, f"{len(drawn)} of {len(loaded)} cases ({how}, {len(strata)} strata)"
    pi = (
        uniform_probabilities(len(loaded), n)
        if chances is None
        else (inclusion_probabilities(chances, n))
    )
    chosen = draw_for_estimate(pi, n, seed)
    text = b"".join(with_probability(raw[i], pi[i]) for i in chosen)
    return text, f"{len(chosen)} of {len(loaded)} cases ({how})"
