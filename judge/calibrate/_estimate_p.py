"""The judge's calibrated P(correct) on a graded case, the prediction `judge estimate
--calibration` gives PPI in place of the verdict: the record's fitted decision (`_fit`)
applied to the verdict's features (a scored rubric's) or to its confidence (Platt)."""

from __future__ import annotations

from judge.calibrate._fit import Fitted, arguments_item, predict, selection_item
from judge.checks._result import CaseResult

CALLED = frozenset(("right_call", "unnecessary_call", "should_ask", "wrong_tool"))
"""The categories a scored selection verdict gives a response with calls (its branch)."""


def calibrated_p(result: CaseResult, dimension: str, fitted: Fitted) -> float | None:
    """P(correct) on `dimension` (selection or arguments) by the calibration's fit; None
    where the verdict is missing, uncertain, derived from code, or lacks what the fit reads
    (a scored fit needs the features, a Platt one the confidence)."""
    judged = result.judge
    if judged is None or judged.status != "ok":
        return None
    if dimension == "selection":
        verdict = judged.selection
        called = verdict is not None and verdict.category in CALLED
        item = selection_item(False, "called" if called else "not_called", verdict)
    elif dimension == "arguments":
        item = arguments_item(False, "called", judged.arguments)
    else:
        return None
    if item is None or item.derived:
        return None
    if fitted.method == "platt" and item.confidence is None:
        return None
    if fitted.method == "scored" and (not item.calls or item.branch not in fitted.combine):
        return None
    return predict(fitted, item).p
