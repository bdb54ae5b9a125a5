"""Calibration that fits the judge's decision by cross-validation and reports its confidence:
the threshold, the refitted weights of a scored rubric, Platt maps, reliability and
risk-coverage, and `judge grade --calibration` applying what was fitted."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from judge.calibrate import _fit
from judge.calibrate._fit import (
    Item,
    Prediction,
    best_threshold,
    confidence_stats,
    cross_validate,
    fit,
    kappa,
    predict,
)
from judge.judging._rubric import Combine, builtin_rubrics_dir, load_rubrics
from tests.chat_server import ChatServer, Reply, one_token, serving
from tests.helpers import call, case, invoke

T, F = True, False


def test_the_threshold_is_the_cut_with_the_best_kappa() -> None:
    scores = [0.9, 0.8, 0.6, 0.4, 0.3, 0.2]
    labels = [T, T, F, T, F, F]
    # Cuts: 0.5 and the midpoints 0.25, 0.35, 0.5, 0.7, 0.85. At 0.7: [T,T,F,F,F,F],
    # agreement 5/6, chance 1/2: kappa 2/3. At 0.35: [T,T,T,T,F,F], 5/6 and 1/2 again: 2/3.
    # At 0.5: 4/6: 1/3. The tie goes to the cut nearest 0.5.
    assert kappa([s >= 0.7 for s in scores], labels) == pytest.approx(2 / 3)
    assert kappa([s >= 0.5 for s in scores], labels) == pytest.approx(1 / 3)
    assert best_threshold(scores, labels) == pytest.approx(0.35)


def test_reliability_and_risk_coverage_by_hand() -> None:
    # Five verdicts, most confident first; the third and fifth disagree with the label.
    predictions = [
        Prediction(0.95, T, 0.95),
        Prediction(0.1, F, 0.9),
        Prediction(0.75, T, 0.75),
        Prediction(0.35, F, 0.65),
        Prediction(0.55, T, 0.55),
    ]
    labels = [T, F, F, F, F]
    stats = confidence_stats("scored", predictions, labels)
    by_bin = {(round(b.low, 1), b.n): b for b in stats.reliability}
    assert by_bin[(0.5, 1)].accuracy == 0.0 and by_bin[(0.5, 1)].confidence == 0.55
    assert by_bin[(0.9, 2)].accuracy == 1.0 and by_bin[(0.9, 2)].confidence == pytest.approx(0.925)
    # ECE: (1 x |0 - .55| + 1 x |1 - .65| + 1 x |0 - .75| + 2 x |1 - .925|) / 5
    assert stats.ece == pytest.approx((0.55 + 0.35 + 0.75 + 0.15) / 5)
    rows = {round(r.coverage, 1): r for r in stats.risk_coverage}
    assert [r.n for r in stats.risk_coverage] == [1, 2, 3, 4, 5]
    assert rows[0.4].agreement == 1.0 and rows[0.4].kappa == pytest.approx(1.0)
    assert rows[0.6].agreement == pytest.approx(2 / 3)
    assert rows[1.0].agreement == pytest.approx(3 / 5)
    assert rows[0.4].min_confidence == 0.9 and rows[1.0].min_confidence == 0.55
    assert rows[0.2].kappa is None  # one label class: no kappa


DEFAULTS = {"called": Combine(bias=0.0, weights={"needs_call": 1.0})}


def scored_items(n: int, flip: int = 0) -> list[Item]:
    """Items whose answer says it all (`needs_call` high iff correct), `flip` of them lying."""
    items = []
    for i in range(n):
        label = i % 2 == 0
        says = label if i >= flip else not label
        items.append(Item(label, "called", [{"needs_call": 0.85 if says else 0.2}]))
    return items


def test_cross_validation_predicts_each_fold_from_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import judge.calibrate._fit as fitting

    items = scored_items(20)
    trained: list[set[int]] = []
    fitting_now = [False]  # a fit predicts its own items (its threshold): not held out
    real_fit, real_predict = fitting.fit, fitting.predict

    def recording_fit(train: list[Item], *args: Any) -> Any:
        trained.append({id(i) for i in train})
        fitting_now[0] = True
        try:
            return real_fit(train, *args)
        finally:
            fitting_now[0] = False

    def checked_predict(fitted: Any, item: Item) -> Any:
        if not fitting_now[0]:
            assert id(item) not in trained[-1], "an item predicted by a fit that saw it"
        return real_predict(fitted, item)

    monkeypatch.setattr(fitting, "fit", recording_fit)
    monkeypatch.setattr(fitting, "predict", checked_predict)
    predictions, folds = cross_validate(items, "scored", DEFAULTS)
    monkeypatch.undo()
    assert folds == len(trained) == 5
    assert all(len(t) == 16 for t in trained)  # each fit saw the other four fifths
    assert [p.verdict for p in predictions] == [i.label for i in items]
    fitted = fit(items, "scored", DEFAULTS)
    assert fitted.method == "scored" and fitted.combine["called"].weights["needs_call"] > 0
    p_yes = predict(fitted, Item(True, "called", [{"needs_call": 0.85}]))
    assert p_yes.verdict and p_yes.p > 0.5
    # A liar among the training folds cannot be predicted right when it is held out.
    lying, _ = cross_validate(scored_items(20, flip=2), "scored", DEFAULTS)
    assert sum(p.verdict != i.label for p, i in zip(lying, scored_items(20, 2), strict=True)) == 2


def test_a_branch_with_one_class_keeps_the_rubric_weights() -> None:
    items = [Item(True, "called", [{"needs_call": 0.9}])] * 6
    items += [
        Item(i % 2 == 0, "not_called", [{"asks": 0.9 if i % 2 == 0 else 0.1}]) for i in range(8)
    ]
    defaults = {**DEFAULTS, "not_called": Combine(weights={"asks": 1.0})}
    fitted = fit(items, "scored", defaults)
    assert fitted.combine["called"] == DEFAULTS["called"]
    assert fitted.combine["not_called"] != defaults["not_called"]


def test_platt_maps_an_overconfident_judge_to_its_hit_rate() -> None:
    # Always 95% sure of "correct", right 6 times in 10.
    items = [Item(i < 6, "called", [], True, 0.95) for i in range(10)] * 3
    fitted = fit(items, "platt", {})
    assert fitted.platt is not None
    a, b = fitted.platt
    mapped = 1 / (1 + math.exp(-(a * math.log(0.95 / 0.05) + b)))
    assert mapped == pytest.approx(0.6, abs=0.03)
    prediction = predict(fitted, items[0])
    assert prediction.verdict is True and prediction.confidence == pytest.approx(mapped)


def test_derived_verdicts_are_never_fitted() -> None:
    import random

    draw = random.Random(1)  # labels that overlap: the threshold is a real choice here
    items = [
        Item(i % 2 == 0, "called", [{"needs_call": draw.uniform(0.5, 0.95)
                                     if i % 2 == 0 else draw.uniform(0.2, 0.75)}])
        for i in range(24)
    ]  # fmt: skip
    fitted = fit(items, "scored", DEFAULTS)
    derived = [Item(True, "called", derived=True)] * 6  # decided by code, whatever the labels
    assert fit([*items, *derived], "scored", DEFAULTS) == fitted
    prediction = predict(fitted, derived[0])
    assert (prediction.verdict, prediction.confidence) == (False, 1.0)


# -- end to end: judge calibrate, then judge grade --calibration ---------------------------------

QUICK = builtin_rubrics_dir("quick")


def marked(i: int, good: bool) -> dict[str, Any]:
    label = "correct" if good else "incorrect"
    return case(
        [call("get_weather", {"city": "Paris"})],
        messages=[
            {"role": "user", "content": f"weather in Paris ({'GOOD' if good else 'BAD'} {i})"}
        ],
    ) | {"id": f"q{i}", "labels": {"selection": label, "arguments": label}}


def by_marker(body: dict[str, Any]) -> Reply:
    """Every question answered `yes` at 0.62 on GOOD cases and 0.58 on BAD ones: the rubric's
    own decision cannot tell them apart, a fitted threshold can."""
    return one_token(0.62 if "GOOD" in body["messages"][-1]["content"] else 0.58)


def test_calibrate_fits_a_scored_judge_and_grade_applies_it(tmp_path: Path) -> None:
    path = tmp_path / "sample.jsonl"
    path.write_text("".join(json.dumps(marked(i, i % 2 == 0)) + "\n" for i in range(30)))
    record_path = tmp_path / "calibration.json"
    with serving(by_marker) as server:
        done = invoke(
            server, tmp_path, "calibrate", str(path), "-o", str(record_path),
            "--rubrics", str(QUICK), "--report", str(tmp_path / "r.html"),
        )  # fmt: skip
        assert done.exit_code == 0, done.output
        record = json.loads(record_path.read_text())
        for name in ("selection", "arguments"):
            assert record["fitted"][name]["method"] == "scored"
            assert record["dimensions"][name]["kappa"] == 1.0  # cross-validated
            coverage = record["confidence"][name]["risk_coverage"]
            assert [c["coverage"] for c in coverage] == [0.2, 0.4, 0.6, 0.8, 1.0]
            assert 0 <= record["confidence"][name]["ece"] <= 1
        assert "reliability" in (tmp_path / "r.html").read_text()
        assert "abstain below" in done.output
        graded = grade(server, tmp_path, record_path)
        plain = grade(server, tmp_path, None)
    assert graded["q1"] == ("incorrect", "incorrect") and graded["q0"] == ("correct", "correct")
    assert len(set(plain.values())) == 1  # without the fit, GOOD and BAD look the same


def grade(server: ChatServer, tmp_path: Path, record: Path | None) -> dict[str, tuple[str, str]]:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(marked(0, True)) + "\n" + json.dumps(marked(1, False)) + "\n")
    out = tmp_path / f"graded-{record is not None}.jsonl"
    extra = ["--calibration", str(record)] if record else []
    done = invoke(
        server, tmp_path, "grade", str(cases), "-o", str(out), "--rubrics", str(QUICK), *extra
    )
    assert done.exit_code == 0, done.output
    found = {}
    for line in out.read_text().splitlines():
        judged = json.loads(line)["judge"]
        found[json.loads(line)["id"]] = (
            judged["selection"]["verdict"],
            judged["arguments"][0]["verdict"],
        )
    return found


def test_a_refit_replaces_the_rubrics_weights_only_when_it_does_better() -> None:
    import random

    noise = random.Random(3)
    items = [
        Item(i % 2 == 0, "called", [{"needs_call": 0.85 if i % 2 == 0 else 0.2,
                                     "noise": noise.uniform(0.1, 0.9)}])
        for i in range(40)
    ]  # fmt: skip
    # The rubric weighs only the noise: rescaling it cannot help, refitting can.
    blind = {"called": Combine(weights={"noise": 1.0, "needs_call": 0.0})}
    fitted = fit(items, "scored", blind)
    assert abs(fitted.combine["called"].weights["needs_call"]) > 0.5
    assert [predict(fitted, i).verdict for i in items] == [i.label for i in items]
    # The rubric already weighs the answer that matters: it is kept, only rescaled.
    sighted = {"called": Combine(weights={"needs_call": 1.0})}
    kept = fit(items, "scored", sighted).combine["called"]
    assert set(kept.weights) == {"needs_call"} and kept.weights["needs_call"] > 1.0


def test_a_few_dozen_labels_do_not_overfit_the_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    # The embedded judge's arguments verdicts on 85 public cases drawn at random (BFCL,
    # When2Call, ACEBench, BFCL multi-turn): 40 labelled, 11 decided by code. Always tuning the
    # cut to the training folds' best kappa held out at kappa -0.05; the inner
    # cross-validation keeps the fitted P(correct)'s own cut where that does better.
    rows = json.loads((Path(__file__).parent / "fit_arguments_items.json").read_text())
    items = [Item(r["label"], "called", r["calls"], derived=r["derived"]) for r in rows]
    defaults = load_rubrics(kind="quick").arguments.combine

    def held_out() -> float | None:
        predictions, _ = cross_validate(items, "scored", defaults)
        return kappa([p.verdict for p in predictions], [i.label for i in items])

    assert (held_out() or 0) >= 0.35
    monkeypatch.setattr(_fit, "_DECISIONS", tuple(d for d in _fit._DECISIONS if d[1]))
    assert (held_out() or 0) < 0.0
