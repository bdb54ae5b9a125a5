"""`judge sample --for-estimate`: uniform and active draws record each case's inclusion
probability, `judge estimate` reads them as a known design, and an active draw weighed by
them stays unbiased."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from judge.calibrate._for_estimate import (
    FLOOR,
    draw_for_estimate,
    inclusion_probabilities,
    wrong_chance,
)
from judge.calibrate._ppi import labels_only, ppi_mean
from judge.checks._outcome import JudgeOutcome, SelectionVerdict
from judge.checks._result import CaseResult
from judge.cli import main

CASES = 200


def truth(i: int) -> bool:
    return i % 5 != 0


def confidence(i: int) -> float:
    """Sure of most cases, unsure of each seventh."""
    return 0.6 if i % 7 == 0 else 0.97


def result(i: int) -> CaseResult:
    said = truth(i) if i % 7 else not truth(i)  # wrong on the unsure ones
    verdict = SelectionVerdict(
        reasoning="r",
        verdict="correct" if said else "incorrect",
        category="right_call",
        confidence=confidence(i),
    )
    return CaseResult(
        id=f"c{i}",
        tool_selection=None,
        schema_valid=True,
        argument_values=None,
        passed=said,
        decided_by="judge",
        judge=JudgeOutcome(status="ok", selection=verdict),
    )


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    cases = tmp_path / "cases.jsonl"
    rows = [
        {"id": f"c{i}", "messages": [{"role": "user", "content": "hi"}], "meta": {"n": i}}
        for i in range(CASES)
    ]
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    graded = tmp_path / "graded.jsonl"
    graded.write_text("".join(result(i).model_dump_json() + "\n" for i in range(CASES)))
    return cases, graded


def sample(*args: str) -> list[dict[str, Any]]:
    run = CliRunner().invoke(main, ["sample", *args])
    assert run.exit_code == 0, run.output
    out = Path(args[args.index("-o") + 1])
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_a_uniform_draw_records_n_over_total(files: tuple[Path, Path], tmp_path: Path) -> None:
    cases, _ = files
    out = str(tmp_path / "to_label.jsonl")
    drawn = sample(str(cases), "--for-estimate", "40", "--seed", "3", "-o", out)
    assert len(drawn) == 40
    assert {r["meta"]["inclusion_probability"] for r in drawn} == {0.2}
    assert all(r["meta"]["n"] == int(r["id"][1:]) for r in drawn)  # the rest of meta kept
    again = sample(str(cases), "--for-estimate", "40", "--seed", "3", "-o", out)
    other = sample(str(cases), "--for-estimate", "40", "--seed", "4", "-o", out)
    assert again == drawn != other


def test_an_active_draw_favours_the_unsure_above_a_floor(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    cases, graded = files
    out = str(tmp_path / "to_label.jsonl")
    args = [str(cases), "--results", str(graded), "--for-estimate", "40", "--active"]
    drawn = sample(*args, "--seed", "3", "-o", out)
    assert len(drawn) == 40
    pi = inclusion_probabilities([wrong_chance(result(i)) for i in range(CASES)], 40)
    assert sum(pi) == pytest.approx(40)
    assert min(pi) >= FLOOR * 40 / CASES and max(pi) <= 1.0
    assert pi[7] > 40 / CASES > pi[1]
    for row in drawn:
        assert row["meta"]["inclusion_probability"] == pytest.approx(pi[int(row["id"][1:])])
    assert sample(*args, "--seed", "3", "-o", out) == drawn


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--for-estimate", "5", "--active"], "--active needs --results"),
        (["--active"], "goes with --for-estimate"),
    ],
)
def test_active_needs_results_and_a_size(
    files: tuple[Path, Path], tmp_path: Path, args: list[str], message: str
) -> None:
    cases, graded = files
    extra = ["--results", str(graded)] if "--for-estimate" not in args else []
    run = CliRunner().invoke(
        main, ["sample", str(cases), *args, *extra, "-o", str(tmp_path / "o.jsonl")]
    )
    assert run.exit_code != 0 and message in run.output


@pytest.mark.parametrize("active", [False, True])
def test_sample_label_estimate_is_a_known_design(
    files: tuple[Path, Path], tmp_path: Path, active: bool
) -> None:
    cases, graded = files
    out = str(tmp_path / "to_label.jsonl")
    more = ["--results", str(graded), "--active"] if active else []
    drawn = sample(str(cases), "--for-estimate", "60", *more, "-o", out)
    for row in drawn:  # labelled by hand
        label = "correct" if truth(int(row["id"][1:])) else "incorrect"
        row["labels"] = {"selection": label}
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in drawn))
    run = CliRunner().invoke(
        main, ["estimate", str(graded), "--labels", str(labels), "--format", "json"]
    )
    assert run.exit_code == 0, run.output
    found = json.loads(run.stdout)
    assert found["design"] == "known"
    selection = found["dimensions"]["selection"]
    assert (selection["n_labelled"], selection["n_graded"]) == (60, CASES)
    assert selection["ppi"]["low"] <= 0.8 <= selection["ppi"]["high"]
    if not active:
        share = sum(r["labels"]["selection"] == "correct" for r in drawn) / 60
        assert selection["labels_only"]["value"] == pytest.approx(share)


def test_an_active_draw_weighed_by_its_probabilities_is_unbiased() -> None:
    """2,000 cases, the judge wrong on them as often as its confidence says; 300 active draws
    of 100: the mean PPI and labels-only estimates land on the true rate, the intervals
    cover it about as often as they say."""
    rng = np.random.default_rng(7)
    size, n, repetitions = 2000, 100, 300
    sure = rng.uniform(0.55, 0.99, size)
    y = (rng.random(size) < 0.75).astype(float)
    f = np.where(rng.random(size) < sure, y, 1 - y)
    pi = np.array(inclusion_probabilities(list(1 - sure), n))
    ppi: list[float] = []
    alone: list[float] = []
    covered = 0
    for seed in range(repetitions):
        drawn = draw_for_estimate(list(pi), n, seed)
        assert len(drawn) == n
        found = ppi_mean(y[drawn], f[drawn], f, pi=pi[drawn])
        assert found.value is not None and found.low is not None and found.high is not None
        ppi.append(found.value)
        alone.append(labels_only(y[drawn], pi=pi[drawn]).value or 0.0)
        covered += found.low <= y.mean() <= found.high
    spread = float(np.std(ppi)) / np.sqrt(repetitions)
    assert abs(np.mean(ppi) - y.mean()) < 4 * spread + 0.002
    assert abs(np.mean(alone) - y.mean()) < 0.01
    assert covered / repetitions >= 0.9
    uniform = [float(np.mean(y[random.Random(s).sample(range(size), n)])) for s in range(300)]
    assert np.std(ppi) < np.std(uniform)  # and it is worth it


@pytest.mark.parametrize(
    ("key", "extra"),
    [
        pytest.param("inclusion_probability", (), id="a-case-drawn-before"),
        pytest.param("stratum", ("--stratify", "meta.n"), id="a-stratum-of-the-users-own"),
    ],
)
def test_a_case_holding_what_the_draw_writes_is_refused_not_overwritten(
    tmp_path: Path, key: str, extra: tuple[str, ...]
) -> None:
    cases = tmp_path / "cases.jsonl"
    rows = [
        {"id": f"c{i}", "messages": [{"role": "user", "content": "hi"}],
         "meta": {"n": i % 2} | ({key: "mine"} if i == 3 else {})}
        for i in range(10)
    ]  # fmt: skip
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "drawn.jsonl"
    run = CliRunner().invoke(
        main, ["sample", str(cases), "--for-estimate", "6", *extra, "-o", str(out)]
    )
    assert run.exit_code == 2
    assert f"case 4 (c3): /meta/{key} is already set ('mine')" in run.output
    assert str(cases) in run.output and not out.exists()
