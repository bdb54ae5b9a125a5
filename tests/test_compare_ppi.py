"""Prediction-powered pass rates and differences in `judge compare --labels`, the gate on
them (`--fail-if-worse --metric ppi_pass_rate`), the HTML report, and `POST /v1/estimate`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from judge import create_app
from judge.calibrate._ppi_paired import ppi_difference
from judge.cli import main
from judge.runs._compare import compare_runs
from judge.runs._records import read_runs

CASES = 60


def test_the_paired_difference_interval_covers_the_true_difference() -> None:
    """Seeded: two models on 400 cases, a judge right 85% of the time on each, 80 labelled
    for both; the 95% PPI interval holds the population's true difference most times."""
    rng = np.random.default_rng(53)
    population, labelled, repeats = 400, 80, 300
    covered = 0
    for _ in range(repeats):
        y_a = (rng.random(population) < 0.75).astype(float)
        y_b = (rng.random(population) < 0.6).astype(float)
        f_a = np.where(rng.random(population) < 0.85, y_a, 1 - y_a)
        f_b = np.where(rng.random(population) < 0.85, y_b, 1 - y_b)
        picked = rng.choice(population, labelled, replace=False)
        found = ppi_difference(y_a[picked], y_b[picked], f_a[picked], f_b[picked], f_a - f_b, 0.95)
        assert found.low is not None and found.high is not None
        covered += found.low <= float((y_a - y_b).mean()) <= found.high
    assert 0.9 <= covered / repeats <= 0.99


def _runs(tmp_path: Path, b_passes: int) -> Path:
    """Models `a` (passes every case but each tenth) and `b` (passes the first `b_passes`)."""
    path = tmp_path / "runs.jsonl"
    rows = [
        {"model": "a", "case_id": f"c{i}", "run": 1, "passed": i % 10 != 0} for i in range(CASES)
    ] + [{"model": "b", "case_id": f"c{i}", "run": 1, "passed": i < b_passes} for i in range(CASES)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _labels(tmp_path: Path, b_passes: int) -> Path:
    """Hand labels on every other case of both models: the truth is what the runs say, but
    `a`'s case 2 is wrong and `b`'s case 4 right whatever the judge said."""
    path = tmp_path / "labels.jsonl"
    rows = []
    for i in range(0, CASES, 2):
        for model, passed in (("a", i % 10 != 0 or i == 4), ("b", i < b_passes and i != 2)):
            verdict = "correct" if passed else "incorrect"
            labels = {"selection": verdict}
            rows.append({"id": f"c{i}", "labels": labels, "meta": {"model": model}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _compare(tmp_path: Path, b_passes: int, *extra: str) -> Any:
    runs, labels = _runs(tmp_path, b_passes), _labels(tmp_path, b_passes)
    argv = ["compare", str(runs), "--labels", str(labels), "--assume-random", *extra]
    return CliRunner().invoke(main, argv)


def test_compare_gives_each_models_ppi_rate_and_the_difference(tmp_path: Path) -> None:
    done = _compare(tmp_path, 30, "--format", "json")
    assert done.exit_code == 0, done.output
    ppi = json.loads(done.stdout)["ppi"]
    assert ppi["designs"] == {"a": "assumed_random", "b": "assumed_random"}
    by_model = {m["model"]: m for m in ppi["models"]}
    assert by_model["a"]["n_labelled"] == by_model["b"]["n_labelled"] == CASES // 2
    assert by_model["a"]["n_graded"] == CASES
    assert by_model["a"]["judge_only"] == pytest.approx(0.9)
    for model in by_model.values():
        interval = model["ppi"]
        assert interval["low"] <= interval["value"] <= interval["high"]
    (pair,) = ppi["pairs"]
    assert (pair["a"], pair["b"], pair["labelled"], pair["cases"]) == ("a", "b", 30, CASES)
    assert pair["judge_only"] == pytest.approx(0.4)
    assert pair["difference"]["low"] > 0 and pair["significant"]


@pytest.mark.parametrize(("b_passes", "code"), [(30, 1), (54, 0)], ids=["worse", "not-worse"])
def test_fail_if_worse_gates_on_the_ppi_difference(
    tmp_path: Path, b_passes: int, code: int
) -> None:
    done = _compare(tmp_path, b_passes, "--fail-if-worse", "a", "--metric", "ppi_pass_rate")
    assert done.exit_code == code, done.output
    if code:
        assert "b is worse than a in ppi_pass_rate" in done.stderr
    else:
        assert "no model is worse than a in ppi_pass_rate" in done.stderr


def test_ppi_pass_rate_without_labels_and_refused_labels_exit_2(tmp_path: Path) -> None:
    runs = _runs(tmp_path, 30)
    argv = ["compare", str(runs), "--fail-if-worse", "a", "--metric", "ppi_pass_rate"]
    done = CliRunner().invoke(main, argv)
    assert done.exit_code == 2 and "needs hand labels" in done.stderr
    labels = _labels(tmp_path, 30)
    done = CliRunner().invoke(main, ["compare", str(runs), "--labels", str(labels)])
    assert done.exit_code == 2 and "inclusion_probability" in done.stderr
    (tmp_path / "nameless.jsonl").write_text('{"id": "c0", "labels": {"selection": "correct"}}\n')
    argv = ["compare", str(runs), "--labels", str(tmp_path / "nameless.jsonl"), "--assume-random"]
    done = CliRunner().invoke(main, argv)
    assert done.exit_code == 2 and "meta.model" in done.stderr


def test_the_html_report_shows_the_ppi_estimates(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    done = _compare(tmp_path, 30, "--html", str(page))
    assert done.exit_code == 0, done.output
    assert "prediction-powered" in done.stdout
    shown = page.read_text()
    assert "Prediction-powered estimates" in shown and "PPI a - b" in shown
    records = read_runs(_runs(tmp_path, 30))
    from judge.calibrate._sample import read_lines

    found = compare_runs(records, labels=read_lines(str(_labels(tmp_path, 30)))[1],
                         assume_random=True).estimates  # fmt: skip
    assert found is not None and found.pairs[0].difference is not None
    assert f"{found.pairs[0].difference.value:+.1%}" in shown
    assert f"{found.models[0].ppi.value:.1%}" in shown  # type: ignore[union-attr]


def _graded(i: int) -> dict[str, Any]:
    return {"id": f"c{i}", "tool_selection": i % 3 != 0, "schema_valid": True,
            "argument_values": None, "passed": i % 3 != 0}  # fmt: skip


def test_the_service_estimates() -> None:
    results = [_graded(i) for i in range(40)]
    labels = [
        {"id": f"c{i}", "labels": {"selection": "correct" if i % 3 and i != 4 else "incorrect"}}
        for i in range(0, 40, 2)
    ]
    body = {"results": results, "labels": labels, "assume_random": True, "confidence": 0.9}
    with TestClient(create_app(), "http://127.0.0.1") as http:
        answer = http.post("/v1/estimate", json=body)
        assert answer.status_code == 200, answer.text
        found = answer.json()
        assert found["confidence"] == 0.9 and found["design"] == "assumed_random"
        selection = found["dimensions"]["selection"]
        assert selection["n_labelled"] == 20 and selection["n_graded"] == 40
        assert selection["ppi"]["low"] <= selection["ppi"]["value"] <= selection["ppi"]["high"]
        refused = http.post("/v1/estimate", json=body | {"assume_random": False})
        assert refused.status_code == 422 and "inclusion_probability" in refused.json()["detail"]
        assert http.post("/v1/estimate", json=[1]).status_code == 422
        assert http.post("/v1/estimate", content=b"{nope").status_code == 400
        bad = http.post("/v1/estimate", json=body | {"confidence": 2})
        assert bad.status_code == 422 and "confidence" in bad.json()["detail"]
        schema = http.get("/openapi.json").json()
        assert "/v1/estimate" in schema["paths"] and "Estimate" in schema["components"]["schemas"]
