"""The review queue: where each case stands (`place`) and why, the strata it can be narrowed
to, and the progress overall and per stratum."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from judge.calibrate._agreement import Dimension, dimensions_of, judge_verdict
from judge.calibrate._labels import NOTE_KEY, LabelState, label_state
from judge.cases._case import Case
from judge.checks._outcome import JudgeOutcome
from judge.checks._result import CaseResult

Group = Literal["disagreement", "uncertain", "flipped", "rest"]
GROUPS: tuple[Group, ...] = ("disagreement", "uncertain", "flipped", "rest")
"""The queue's order: cases whose label disagrees with the judge, then those the judge was
unsure of (abstained, low confidence, no verdict), then those whose verdict flipped between
samples, then the rest."""
FILTERS = ("group", "tool", "failure", "state")
"""Besides `meta.KEY`: the strata a queue can be narrowed to."""
_META_VALUES = 20  # a meta key with more distinct values (free text) is not a stratum

Strata = dict[str, list[str]]
"""Each stratum's values for a case (a case calls several tools, fails several ways)."""


@dataclass(frozen=True)
class Placed:
    """Where a case stands in the queue, and why."""

    group: Group
    reason: str
    confidence: float | None
    """The lowest confidence among its verdicts."""


def place(case: Case, result: CaseResult | None, low_confidence: float) -> Placed:
    """A case's group in the queue: disagreement with its labels first, then the judge's
    doubt, then flips between samples."""
    judged = result.judge if result is not None else None
    if result is None or judged is None or judged.status == "skipped":
        return Placed("rest", "no judge verdict to check", None)
    if judged.status != "ok":
        return Placed(
            "uncertain", f"the judge gave no verdict ({judged.error or 'judge_error'})", 0
        )
    lowest = _lowest_confidence(judged)
    against = []
    for dimension in dimensions_of([case]):
        label = getattr(case.labels, dimension, None) if case.labels else None
        verdict, _ = judge_verdict(result, dimension)
        if label is not None and verdict is not None and label != verdict:
            against.append(f"{dimension}: labelled {label}, judged {verdict}")
    if against:
        return Placed("disagreement", "disagrees with the judge on " + "; ".join(against), lowest)
    dimensions: tuple[Dimension, ...] = ("selection", "arguments", "answer")
    unsure = [d for d in dimensions if judge_verdict(result, d)[1] == "uncertain"]
    if unsure:
        return Placed("uncertain", "the judge abstained on " + ", ".join(unsure), lowest)
    if lowest is not None and lowest < low_confidence:
        return Placed("uncertain", f"low confidence ({lowest:.2f} < {low_confidence})", lowest)
    if judged.flip_rate:
        shown = f"{judged.flip_rate:.2f} over {judged.samples} samples"
        return Placed("flipped", f"the verdict flipped between samples (flip rate {shown})", lowest)
    labelled = label_state(given_labels(case), case) == "labelled"
    return Placed("rest", "agrees with the labels" if labelled else "not labelled yet", lowest)


def _lowest_confidence(judged: JudgeOutcome) -> float | None:
    verdicts = [judged.selection, judged.answer, *judged.arguments]
    found = [v.confidence for v in verdicts if v is not None and v.confidence is not None]
    return min(found) if found else None


def given_labels(case: Case) -> dict[str, Any] | None:
    # Only the labels given: `arguments: null` is a label ("not applicable"), absence is not.
    if case.labels is None:
        return None
    return case.labels.model_dump(include=case.labels.model_fields_set)


def strata_of(case: Case, checked: CaseResult, placed: Placed, state: LabelState) -> Strata:
    """A case's strata; `checked`: its deterministic checks."""
    kinds = sorted({f.kind.value for f in checked.failures})
    found = {
        "group": [placed.group],
        "tool": sorted({t.name for t in case.tool_calls}) or ["(no call)"],
        "failure": kinds or ["(none)"],
        "state": [state],
    }
    for key, value in case.meta.items():
        if isinstance(value, str | int | float | bool) and key != NOTE_KEY:
            found[f"meta.{key}"] = [str(value)]
    return found


def check_filters(filters: dict[str, str]) -> None:
    """ValueError for a filter that names no stratum."""
    unknown = [k for k in filters if k not in FILTERS and not k.startswith("meta.")]
    if unknown:
        raise ValueError(
            f"cannot filter by {', '.join(unknown)}: use {', '.join(FILTERS)}, or meta.KEY"
        )


def queue_of(
    cases: list[Case],
    results: dict[str, CaseResult],
    low_confidence: float,
    strata: Callable[[Case, Placed, LabelState], Strata],
    filters: dict[str, str],
) -> dict[str, Any]:
    """The cases in review order with why each is there, narrowed by `filters` (stratum ->
    value, checked already), the progress overall and per stratum, and the filters."""
    items, progress = [], _Progress()
    for index, case in enumerate(cases):
        placed = place(case, results.get(case.id), low_confidence)
        state = label_state(given_labels(case), case)
        found = strata(case, placed, state)
        progress.add(found, state)
        if all(value in found.get(name, ["(none)"]) for name, value in filters.items()):
            items.append(
                (
                    GROUPS.index(placed.group),
                    state == "labelled",
                    placed.confidence if placed.confidence is not None else 1.0,
                    index,
                    {
                        "id": case.id,
                        "group": placed.group,
                        "reason": placed.reason,
                        "state": state,
                    },
                )
            )
    items.sort(key=lambda item: item[:4])
    return {
        "cases": [item[4] for item in items],
        "progress": progress.figures(),
        "filters": filters,
    }


class _Progress:
    """Labelled / total, overall and per stratum value."""

    def __init__(self) -> None:
        self.total = self.labelled = self.partial = 0
        self.strata: dict[str, dict[str, list[int]]] = defaultdict(
            lambda: defaultdict(lambda: [0, 0])
        )

    def add(self, strata: dict[str, list[str]], state: LabelState) -> None:
        self.total += 1
        self.labelled += state == "labelled"
        self.partial += state == "partial"
        for name, values in strata.items():
            for value in values:
                counts = self.strata[name][value]
                counts[0] += state == "labelled"
                counts[1] += 1

    def figures(self) -> dict[str, Any]:
        strata = {
            name: {v: {"labelled": c[0], "total": c[1]} for v, c in sorted(values.items())}
            for name, values in sorted(self.strata.items())
            if not name.startswith("meta.") or 1 < len(values) <= min(_META_VALUES, self.total - 1)
        }
        return {
            "labelled": self.labelled,
            "partial": self.partial,
            "total": self.total,
            "strata": strata,
        }
