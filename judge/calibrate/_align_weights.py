"""The `weights` candidate of `judge align`: a scored rubric's decision refitted on the user's
labels (the judge's prompt unchanged). It needs no request of its own: the base judge's
verdicts carry their answers (and the probe's P(correct) where a probe decides), and the
decision is refitted on the training folds' and applied to the held-out ones, as `judge
calibrate` fits it (`_fit.fit`: the rubric's combination rescaled or every weight refitted,
the cut at 0.5 or tuned, chosen by an inner cross-validation of the training labels)."""

from __future__ import annotations

from collections.abc import Sequence

from judge.calibrate._fit import Fitted, Item, fit, items_of, method_for, predict
from judge.cases._case import Case
from judge.checks._result import CaseResult
from judge.judging._aligned import AlignedDimension, AlignedWeights
from judge.judging._rubric import Combine

Defaults = dict[str, dict[str, Combine]]
"""Per scored dimension, per branch, what the refit starts from (`Judge.decision_defaults`)."""


class BaseItems:
    """The base judge's verdicts of every case, as the refit reads them, per dimension."""

    def __init__(
        self, cases: Sequence[Case], results: Sequence[CaseResult], defaults: Defaults,
        dimensions: Sequence[AlignedDimension],
    ) -> None:  # fmt: skip
        self.defaults = defaults
        self.items: dict[AlignedDimension, list[Item | None]] = {
            d: items_of(cases, results, d) for d in dimensions if d in defaults
        }
        """Per dimension the refit can weigh: each case's item (None: no label or verdict)."""

    def weighable(self, d: AlignedDimension) -> bool:
        """Whether the dimension's verdicts carry answers to weigh anew (a scored rubric's,
        every one of them)."""
        found = [i for i in self.items.get(d, []) if i is not None]
        return bool(found) and method_for(found) == "scored"

    def fitted(self, d: AlignedDimension, indices: Sequence[int]) -> AlignedWeights | None:
        """The decision refitted on the cases at `indices` (None: not weighable, or no
        judged verdict among them)."""
        if not self.weighable(d):
            return None
        train = [item for i in indices if (item := self.items[d][i]) is not None]
        if not any(not item.derived for item in train):
            return None
        found = fit(train, "scored", self.defaults[d])
        combine = {b: c for b, c in found.combine.items() if b in ("called", "not_called")}
        return AlignedWeights.model_validate({"combine": combine, "threshold": found.threshold})

    def verdicts(
        self, d: AlignedDimension, train: Sequence[int], base: dict[int, str | None]
    ) -> dict[int, str | None]:
        """The verdicts of the cases in `base` (their base verdicts) by the decision refitted
        on the cases at `train`: the base verdict where nothing was refitted or code decided
        it (derived)."""
        weights = self.fitted(d, train)
        if weights is None:
            return dict(base)
        combine = {str(branch): c for branch, c in weights.combine.items()}
        decision = Fitted(method="scored", threshold=weights.threshold, combine=combine)
        found: dict[int, str | None] = {}
        for i, said in base.items():
            item = self.items[d][i]
            if item is None or item.derived:
                found[i] = said
                continue
            found[i] = "correct" if predict(decision, item).verdict else "incorrect"
        return found
