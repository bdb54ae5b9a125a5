"""`judge local train`: a probe fitted on labelled cases, its figures held out by source, and
the file it is shipped in.

For every source (a labelled file) the heads are fitted on the other sources only and scored
on it: the probe, the same regression on the answers and counts alone (no hidden state), kNN
over them, and the rubric's own weights (today's decision). A dimension keeps its head in the
probe only where the probe's mean held-out kappa beats the rubric's; the others keep deciding
by their rubric's weights. With one source, the figures are cross-validated instead (up to 5
folds), and say so. The rubric's own weights may have been fitted on some of these sources (the
quick rubrics' were, on the project's sample and the public sets): its figures are then
flattering, and the probe has to beat them all the same."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence

import numpy as np

from judge.calibrate._fit import FOLDS, SEED, kappa
from judge.calibrate._probe_data import DIMENSIONS, Source, Unit
from judge.calibrate._probe_fit import choose, enough, knn_scores, matrix
from judge.judging._linear_probe import Head, Manifest, Probe, build_probe

BRANCHES = ("called", "not_called")
Heads = dict[tuple[str, str], Head]
_WAYS = ("probe", "extras_only", "knn", "rubric")


def fit_heads(units: Sequence[Unit], *, hidden: bool = True) -> Heads:
    """A head for every dimension and branch with enough trainable rows."""
    heads: Heads = {}
    for dimension in DIMENSIONS:
        for branch in BRANCHES:
            m = matrix([u for u in units if u.dimension == dimension and u.branch == branch])
            if enough(m):
                assert m is not None
                heads[dimension, branch] = choose(m, dimension, branch, hidden=hidden)
    return heads


def unit_says(unit: Unit, probabilities: list[float] | None) -> bool | None:
    """A unit's verdict: code's where code decided, else every call at 0.5 or above (the
    rubric's own where the way has no head for it)."""
    if unit.derived or probabilities is None:
        return unit.rubric_says
    return min(probabilities) >= 0.5


def unit_probabilities(heads: Heads, unit: Unit) -> list[float] | None:
    head = heads.get((unit.dimension, unit.branch))
    if head is None or unit.hidden is None or not unit.rows:
        return None
    return [head.probability(unit.hidden, row.features) for row in unit.rows]


def _knn(train: Sequence[Unit], test: Sequence[Unit]) -> dict[int, list[float]]:
    found: dict[int, list[float]] = {}
    for dimension in DIMENSIONS:
        for branch in BRANCHES:
            here = [u for u in train if u.dimension == dimension and u.branch == branch]
            m = matrix(here)
            if not enough(m):
                continue
            assert m is not None
            for i, unit in enumerate(test):
                if (unit.dimension, unit.branch) != (dimension, branch) or unit.derived:
                    continue
                rows = matrix([unit], m.names, scoring=True)
                if rows is not None:
                    found[i] = list(knn_scores(m, rows))
    return found


def score(
    train: Sequence[Unit], test: Sequence[Unit], fitted: set[tuple[str, str]] | None = None
) -> dict[str, list[tuple[bool, bool]]]:
    """Each way's (verdict, label) on the test units, fitted on the train units only (the
    heads fitted are added to `fitted`)."""
    heads = fit_heads(train)
    plain = fit_heads(train, hidden=False)
    if fitted is not None:
        fitted.update(key for key in heads if any((u.dimension, u.branch) == key for u in test))
    knn = _knn(train, test)
    pairs: dict[str, list[tuple[bool, bool]]] = {way: [] for way in _WAYS}
    for i, unit in enumerate(test):
        says = {
            "probe": unit_says(unit, unit_probabilities(heads, unit)),
            "extras_only": unit_says(unit, unit_probabilities(plain, unit)),
            "knn": unit_says(unit, knn.get(i)),
            "rubric": unit.rubric_says,
        }
        if any(v is None for v in says.values()):
            continue
        for way, verdict in says.items():
            pairs[way].append((bool(verdict), unit.label))
    return pairs


def _kappas(pairs: dict[str, list[tuple[bool, bool]]]) -> dict[str, float | int | None]:
    found: dict[str, float | int | None] = {"n": len(pairs["probe"])}
    for way, found_pairs in pairs.items():
        k = kappa([v for v, _ in found_pairs], [y for _, y in found_pairs])
        found[way] = None if k is None else round(k, 3)
    return found


def held_out(
    units: Sequence[Unit],
    say: Callable[[str], None] | None = None,
    fitted: set[tuple[str, str]] | None = None,
) -> dict[str, object]:
    """Per dimension: each source scored by fits on the others (or cross-validated in up to
    5 folds, where a dimension's labels come from one source), and the mean over sources.
    `fitted` gathers the (dimension, branch) heads that were fitted and scored held out."""
    report: dict[str, object] = {}
    for dimension in DIMENSIONS:
        mine = [u for u in units if u.dimension == dimension]
        sources = sorted({u.source for u in mine})
        if not mine:
            continue
        per: dict[str, dict[str, float | int | None]] = {}
        if len(sources) >= 2:
            for source in sources:
                train = [u for u in mine if u.source != source]
                test = [u for u in mine if u.source == source]
                per[source] = _kappas(score(train, test, fitted))
                if say:
                    say(f"{dimension}, {source} held out: {per[source]}")
            method = "leave-one-dataset-out"
        else:
            per[sources[0]] = _kappas(_cross_validated(mine, fitted))
            method = f"cross-validation in up to {FOLDS} folds (one source)"
            if say:
                say(f"{dimension}, {sources[0]} cross-validated: {per[sources[0]]}")
        report[dimension] = {"method": method, "sources": per, "mean": _mean(per)}
    return report


def _cross_validated(
    units: Sequence[Unit], fitted: set[tuple[str, str]] | None
) -> dict[str, list[tuple[bool, bool]]]:
    from sklearn.model_selection import StratifiedKFold

    labels = [u.label for u in units]
    k = min(FOLDS, sum(labels), len(labels) - sum(labels))
    pairs: dict[str, list[tuple[bool, bool]]] = {way: [] for way in _WAYS}
    if k < 2:  # a class (nearly) missing: nothing to measure
        return pairs
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=SEED)
    for train, test in splitter.split(np.zeros(len(units)), labels):
        found = score([units[i] for i in train], [units[i] for i in test], fitted)
        for way in _WAYS:
            pairs[way].extend(found[way])
    return pairs


def _mean(per: dict[str, dict[str, float | int | None]]) -> dict[str, float | None]:
    found: dict[str, float | None] = {}
    for way in _WAYS:
        values = [v[way] for v in per.values() if isinstance(v.get(way), float | int)]
        found[way] = round(float(np.mean(values)), 3) if values else None  # type: ignore[arg-type]
    return found


def kept(report: dict[str, object]) -> dict[str, str]:
    """Per dimension: `probe` where its mean held-out kappa beats the rubric's, else why not."""
    found: dict[str, str] = {}
    for dimension, figures in report.items():
        mean = figures["mean"]  # type: ignore[index]
        probe, rubric = mean.get("probe"), mean.get("rubric")
        if probe is not None and (rubric is None or probe > rubric):
            found[dimension] = "probe"
        else:
            found[dimension] = (
                f"left out: held-out kappa {probe} against the rubric's {rubric}: "
                "the rubric's weights decide"
            )
    return found


def train(
    sources: Sequence[Source],
    units: Sequence[Unit],
    *,
    model_sha256: str,
    rubrics: dict[str, str],
    left_out: int = 0,
    say: Callable[[str], None] | None = None,
) -> tuple[Probe, dict[str, object]]:
    """The probe fitted on every unit, its manifest holding the held-out figures: the heads
    of the dimensions that beat their rubric held out, and only heads that were themselves
    fitted and scored held out."""
    evaluated: set[tuple[str, str]] = set()
    report = held_out(units, say, evaluated)
    used: dict[str, int] = {}
    for case in {(u.source, u.case_id) for u in units}:
        used[case[0]] = used.get(case[0], 0) + 1
    keep = kept(report)
    heads = [
        head
        for (dimension, branch), head in fit_heads(units).items()
        if keep.get(dimension) == "probe" and (dimension, branch) in evaluated
    ]
    manifest = Manifest(
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        model_sha256=model_sha256,
        rubrics=rubrics,
        sources=[{**s.summary(), "used": used.get(s.name, 0)} for s in sources],
        left_out=left_out,
        held_out=report,
        kept=keep,
    )
    return build_probe(manifest, heads), report
