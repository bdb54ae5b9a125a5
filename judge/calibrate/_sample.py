"""Drawing a stratified, seeded sample of cases to label by hand (`_spreadsheet`: labelling
them in a spreadsheet)."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from judge._errors import CaseError, InputError
from judge.cases._case import Case
from judge.cases._json import loads
from judge.cases._loading import iter_lines
from judge.checks._check import check_case

STRATA: dict[str, Callable[[Case], str]] = {
    "tool": lambda c: ",".join(sorted({t.name for t in c.tool_calls})) or "(no call)",
    "expected_behavior": lambda c: c.expected_behavior or "(unknown)",
    "failure": lambda c: (
        ",".join(sorted({f.kind.value for f in check_case(c).failures})) or "(none)"
    ),
    "label": lambda c: f"{c.labels.selection}/{c.labels.arguments}" if c.labels else "(none)",
}
"""The ways to stratify; `meta.KEY` stratifies by any key of a case's `meta` too."""


def judged_states(path: str) -> dict[str, str]:
    """Per case id of a `judge grade` results file: `uncertain` when the judge abstained on
    any verdict of it, `decided` when it judged it, `not judged` otherwise."""
    states: dict[str, str] = {}
    with Path(path).open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = loads(line)
                judged = row.get("judge") or {}
                verdicts = [judged.get("selection") or {}, *(judged.get("arguments") or [])]
                case_id = str(row["id"])
            except (ValueError, KeyError, AttributeError, TypeError) as exc:
                raise InputError(f"{path}:{number}: not a judge grade result: {exc}") from None
            if judged.get("status") != "ok":
                states[case_id] = "not judged"
            elif any(v.get("verdict") == "uncertain" for v in verdicts if isinstance(v, dict)):
                states[case_id] = "uncertain"
            else:
                states[case_id] = "decided"
    return states


def stratum_key(
    case: Case, fields: list[str], judged: dict[str, str] | None = None
) -> tuple[str, ...]:
    key = []
    for name in fields:
        if name == "judge":
            if judged is None:
                raise ValueError("stratifying by judge needs --results (judge grade output)")
            key.append(judged.get(case.id, "not judged"))
        elif name.startswith("meta."):
            key.append(str(case.meta.get(name.removeprefix("meta."), "(none)")))
        elif name in STRATA:
            key.append(STRATA[name](case))
        else:
            choices = ", ".join([*STRATA, "judge", "meta.KEY"])
            raise ValueError(f"cannot stratify by {name!r}: use {choices}")
    return tuple(key)


@dataclass(frozen=True)
class Drawn:
    """A stratified sample: the indices drawn, in their original order."""

    indices: list[int]
    strata: int
    """Strata among the cases."""
    left_out: int
    """Strata with no case in the sample: more strata than room (`n`)."""


def draw(
    cases: list[Case],
    n: int,
    fields: list[str],
    seed: int = 0,
    judged: dict[str, str] | None = None,
) -> Drawn:
    """A stratified, seeded sample of `n` cases. Each stratum gets its share, and at least one
    case, so rare strata are kept, as long as there are no more strata than `n`; with more,
    `n` strata chosen at random get one case each and the others are left out."""
    strata: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for index, case in enumerate(cases):
        strata[stratum_key(case, fields, judged)].append(index)
    if n >= len(cases):
        return Drawn(list(range(len(cases))), len(strata), 0)
    rng = random.Random(seed)
    keys = sorted(strata)
    if len(keys) >= n:  # more strata than room: one case from each of n strata
        chosen = sorted(rng.choice(strata[k]) for k in rng.sample(keys, n))
        return Drawn(chosen, len(keys), len(keys) - n)
    quota = allocate({k: len(strata[k]) for k in keys}, n)
    return Drawn(sorted(i for k in keys for i in rng.sample(strata[k], quota[k])), len(keys), 0)


def allocate(
    sizes: dict[tuple[str, ...], int], n: int, least: int = 1
) -> dict[tuple[str, ...], int]:
    """How many of `n` cases each stratum gets: its share of the cases, at least `least` (or
    all it has), the largest shares trimmed and the roomiest strata grown until they sum to
    `n` (`n` under the total, and at least `least` per stratum)."""
    keys = sorted(sizes)
    total = sum(sizes.values())
    quota = {k: min(sizes[k], max(least, round(n * sizes[k] / total))) for k in keys}
    while sum(quota.values()) > n:  # trim the largest shares, never below `least`
        largest = max((k for k in keys if quota[k] > least), key=lambda k: quota[k])
        quota[largest] -= 1
    while sum(quota.values()) < n:  # grow the strata with the most cases left over
        roomiest = max((k for k in keys if quota[k] < sizes[k]), key=lambda k: sizes[k] - quota[k])
        quota[roomiest] += 1
    return quota


def read_lines(path: str) -> tuple[list[bytes], list[Case]]:
    """The raw lines of a JSONL file and their cases; a bad line raises, naming where."""
    raw: list[bytes] = []
    cases: list[Case] = []
    for line, item in iter_lines(path):
        if isinstance(item, CaseError):
            raise item
        raw.append(line)
        cases.append(item)
    return raw, cases
