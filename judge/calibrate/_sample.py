"""Drawing a stratified, seeded sample of cases to label by hand, and the CSV round trip for
labelling them in a spreadsheet."""

from __future__ import annotations

import csv
import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge._errors import CaseError, InputError
from judge.cases._case import Case
from judge.cases._json import dumps, loads
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
    quota = {k: max(1, round(n * len(strata[k]) / len(cases))) for k in keys}
    while sum(quota.values()) > n:  # trim the largest shares, never below one
        largest = max((k for k in keys if quota[k] > 1), key=lambda k: quota[k])
        quota[largest] -= 1
    while sum(quota.values()) < n:  # grow the strata with the most cases left over
        roomiest = max(
            (k for k in keys if quota[k] < len(strata[k])), key=lambda k: len(strata[k]) - quota[k]
        )
        quota[roomiest] += 1
    return Drawn(sorted(i for k in keys for i in rng.sample(strata[k], quota[k])), len(keys), 0)


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


CSV_COLUMNS = (
    "id",
    "request",
    "tools",
    "response_text",
    "calls",
    "selection",
    "arguments",
    "answer",
    "note",
)
_LABEL_COLUMNS = ("selection", "arguments", "answer")


def export_csv(path: str | Path, cases: list[Case]) -> None:
    """One row per case: what a labeller needs to read, and empty label columns to fill."""
    from judge.judging._prompt import rubric_variables

    with Path(path).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        for case in cases:
            variables = rubric_variables(case, check_case(case))
            request = "\n".join(
                f"[{m['role']}] {m['content']}" for m in variables["conversation"] if m["content"]
            )
            calls = "\n".join(
                f"#{c['index']} {c['name']} {_json(c['arguments'])}" for c in variables["calls"]
            )
            labels = case.labels
            writer.writerow(
                [
                    case.id,
                    request,
                    ", ".join(variables["tool_names"]),
                    variables["response_text"] or "",
                    calls,
                    (labels.selection if labels else None) or "",
                    (labels.arguments if labels else None) or "",
                    (labels.answer if labels else None) or "",
                    str(case.meta.get("label_note", "")),
                ]
            )


def import_csv(csv_path: str | Path, raw: list[bytes], cases: list[Case]) -> list[bytes]:
    """The JSONL lines with the labels (and notes) filled in from the CSV, matched by id."""
    labels: dict[str, dict[str, str]] = {}
    with Path(csv_path).open(newline="", encoding="utf-8") as handle:
        for number, read in enumerate(csv.DictReader(handle), start=2):
            for column in _LABEL_COLUMNS:
                value = (read.get(column) or "").strip().lower()
                if value not in ("", "correct", "incorrect"):
                    raise InputError(
                        f"{csv_path}:{number}: {column} must be correct, "
                        f"incorrect or empty, not {value!r}"
                    )
            labels[read["id"]] = dict(read)
    out = []
    for line, case in zip(raw, cases, strict=True):
        row = labels.get(case.id)
        if row is None:
            out.append(line)
            continue
        data: dict[str, Any] = loads(line)
        found = {k: row[k].strip().lower() for k in _LABEL_COLUMNS if (row.get(k) or "").strip()}
        if found:
            data["labels"] = {**(data.get("labels") or {}), **found}
        if (row.get("note") or "").strip():
            data["meta"] = {**(data.get("meta") or {}), "label_note": row["note"].strip()}
        out.append(dumps(data))
    return out


def _json(value: Any) -> str:
    return value if isinstance(value, str) else dumps(value).decode()
