"""Stratified draws for `judge estimate`: `judge sample --for-estimate --stratify` records
each case's stratum and inclusion probability, and the estimator's variance is then the
stratified one (Fisch et al. 2024): still unbiased, still covering, narrower where the
strata differ."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from click.testing import CliRunner

from judge import Case, CaseResult, InputError, Labels, estimate
from judge.calibrate._for_estimate import stratified_draw
from judge.calibrate._ppi import _design, ppi_mean
from judge.checks._outcome import JudgeOutcome, SelectionVerdict
from judge.cli import main


def test_stratified_variance_is_the_sum_over_strata() -> None:
    values = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    pi = np.array([0.5] * 4 + [0.1] * 4)
    strata = ["a"] * 4 + ["b"] * 4
    mean, variance = _design(values, pi, strata)
    share_a = 4 / 0.5 / (4 / 0.5 + 4 / 0.1)
    assert mean == pytest.approx(share_a * 0.75 + (1 - share_a) * 0.25)
    expected = share_a**2 * values[:4].var() / 4 + (1 - share_a) ** 2 * values[4:].var() / 4
    assert variance == pytest.approx(expected)
    # a stratum with one label: the with-replacement variance, as without strata
    assert _design(values, pi, ["a"] * 7 + ["b"]) == _design(values, pi)


def test_stratified_ppi_covers_and_is_narrower() -> None:
    """Two strata of unlike rates, half the labels from the small one; 300 seeded draws (rates
    kept from 0 and 1, where a Wald interval on 40 labels undercovers whatever the design)."""
    rng = np.random.default_rng(55)
    sizes, rates = {"big": 1600, "small": 400}, {"big": 0.75, "small": 0.3}
    held, widths, pooled, errors = 0, [], [], []
    for _ in range(300):
        y = {k: rng.random(n) < rates[k] for k, n in sizes.items()}
        f = {k: np.where(rng.random(n) < 0.8, y[k], ~y[k]).astype(float) for k, n in sizes.items()}
        truth = sum(float(y[k].sum()) for k in sizes) / sum(sizes.values())
        picked = {k: rng.choice(n, 40, replace=False) for k, n in sizes.items()}
        labels = np.concatenate([y[k][picked[k]] for k in sizes]).astype(float)
        predicted = np.concatenate([f[k][picked[k]] for k in sizes])
        pi = np.concatenate([np.full(40, 40 / sizes[k]) for k in sizes])
        strata = [k for k in sizes for _ in range(40)]
        everyone = np.concatenate([f[k] for k in sizes])
        found = ppi_mean(labels, predicted, everyone, 0.95, pi, strata=strata)
        plain = ppi_mean(labels, predicted, everyone, 0.95, pi)
        assert found.low is not None and found.high is not None and found.value is not None
        assert plain.low is not None and plain.high is not None
        held += found.low <= truth <= found.high
        widths.append(found.high - found.low)
        pooled.append(plain.high - plain.low)
        errors.append(found.value - truth)
    assert 0.92 <= held / 300 <= 0.98
    assert abs(float(np.mean(errors))) < 0.01
    assert np.mean(widths) < np.mean(pooled)


def test_stratified_draw_gives_each_stratum_its_share_and_two_at_least() -> None:
    strata: dict[tuple[str, ...], list[int]] = {
        ("a",): list(range(90)),
        ("b",): list(range(90, 98)),
        ("c",): [98, 99],
    }
    drawn = stratified_draw(strata, None, 20, seed=3)
    counts: dict[str, int] = {}
    for index, _, name in drawn:
        counts[name] = counts.get(name, 0) + 1
        assert index in strata[(name,)]
    assert sum(counts.values()) == 20 and min(counts.values()) >= 2
    for _, pi, name in drawn:
        assert pi == pytest.approx(counts[name] / len(strata[(name,)]))
    with pytest.raises(ValueError, match="3 strata need at least 6 cases"):
        stratified_draw(strata, None, 5)


def _case(i: int, kind: str) -> dict[str, object]:
    return {
        "id": f"c{i}",
        "messages": [{"role": "user", "content": f"q{i}"}],
        "tools": [],
        "meta": {"kind": kind},
    }


def _result(i: int, says: bool) -> CaseResult:
    verdict: Literal["correct", "incorrect"] = "correct" if says else "incorrect"
    return CaseResult(
        id=f"c{i}", tool_selection=None, schema_valid=True, argument_values=None, passed=says,
        decided_by="judge",
        judge=JudgeOutcome(
            status="ok",
            selection=SelectionVerdict(reasoning="r", verdict=verdict, category="right_call"),
        ),
    )  # fmt: skip


def test_sample_and_estimate_from_the_command_line(tmp_path: Path) -> None:
    kinds = ["refund"] * 150 + ["search"] * 50
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(_case(i, k)) + "\n" for i, k in enumerate(kinds)))
    drawn = tmp_path / "to-label.jsonl"
    args = ["sample", str(cases), "--for-estimate", "40", "--stratify", "meta.kind"]
    done = CliRunner().invoke(main, [*args, "-o", str(drawn)])
    assert done.exit_code == 0, done.output
    assert "40 of 200 cases (uniform, 2 strata)" in done.output
    rows = [json.loads(line) for line in drawn.read_text().splitlines()]
    by = {k: [r for r in rows if r["meta"]["stratum"] == k] for k in ("refund", "search")}
    assert (len(by["refund"]), len(by["search"])) == (30, 10)
    assert {r["meta"]["inclusion_probability"] for r in by["refund"]} == {0.2}
    assert all(r["meta"]["kind"] == r["meta"]["stratum"] for r in rows)  # the rest kept
    truth = {i: (i % 4 != 0) if kinds[i] == "refund" else (i % 2 == 0) for i in range(200)}
    grades = tmp_path / "graded.jsonl"
    grades.write_text("".join(_result(i, truth[i]).model_dump_json() + "\n" for i in range(200)))
    for row in rows:
        i = int(row["id"][1:])
        row["labels"] = {"selection": "correct" if truth[i] else "incorrect"}
    labelled = tmp_path / "labels.jsonl"
    labelled.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = CliRunner().invoke(
        main, ["estimate", str(grades), "--labels", str(labelled), "--format", "json"]
    )
    assert done.exit_code == 0, done.output
    found = json.loads(done.stdout)
    assert found["strata"] == 2 and found["design"] == "known"
    # without --stratify the draw is a plain one: no stratum recorded
    done = CliRunner().invoke(main, ["sample", str(cases), "--for-estimate", "40",
                                     "-o", str(tmp_path / "plain.jsonl")])  # fmt: skip
    assert done.exit_code == 0 and "stratum" not in (tmp_path / "plain.jsonl").read_text()
    done = CliRunner().invoke(main, [*args[:3], "3", *args[4:], "-o", str(tmp_path / "x.jsonl")])
    assert done.exit_code == 2 and "2 strata need at least 4 cases" in done.output


def _labelled(i: int, **meta: object) -> Case:
    return Case(id=f"c{i}", labels=Labels(selection="correct"), meta=meta)


def test_a_stratum_on_some_labels_only_is_refused() -> None:
    results = [_result(i, True) for i in range(30)]
    mixed = [_labelled(i, inclusion_probability=0.5, stratum="a") for i in range(10)]
    mixed.append(_labelled(20, inclusion_probability=0.5))
    with pytest.raises(InputError, match="record no `meta.stratum`: 'c20'"):
        estimate(results, mixed)
    unknown = [_labelled(i, stratum="a") for i in range(10)]
    with pytest.raises(InputError, match="a stratified draw needs both"):
        estimate(results, unknown, assume_random=True)


def test_stratified_active_draw_records_unequal_probabilities() -> None:
    rng = random.Random(4)
    strata: dict[tuple[str, ...], list[int]] = {
        ("a",): list(range(100)),
        ("b",): list(range(100, 150)),
    }
    chances = [rng.choice([0.05, 0.4]) for _ in range(150)]
    drawn = stratified_draw(strata, chances, 30, seed=1)
    assert len(drawn) == 30
    within = [(pi, chances[i]) for i, pi, name in drawn if name == "a"]
    sure = [pi for pi, c in within if c == 0.05]
    unsure = [pi for pi, c in within if c == 0.4]
    assert sure and unsure and max(sure) < min(unsure)
