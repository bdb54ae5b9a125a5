"""`judge run --labels`: the prediction-powered pass rates and paired differences of the
candidates just run, from hand labels on part of each one's cases, and the gate on them
(`--fail-if-worse --metric ppi_pass_rate`), end to end against the scripted endpoint."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.openrouter_server import OpenRouterServer
from tests.run_helpers import lines, run, write_cases

CITIES = tuple(f"Town{i:02d}" for i in range(24))
MISSED = CITIES[:4]
"""Cases whose expected city no model names: good/m fails them, so it passes 20 of 24."""
GOOD_SLIP, OTHER_SLIP = "town06", "town08"
"""Labelled cases whose hand label says the opposite of the graded verdict (for good/m, and
for the other candidate), so that the intervals have some width."""


def _cases(tmp_path: Path) -> Path:
    elsewhere = {city: "Nowhere" for city in MISSED}
    return write_cases(tmp_path / "cases.jsonl", CITIES, **elsewhere)


def _labels(
    tmp_path: Path, other: str, *, probability: float | None = 0.5, name: str = "labels.jsonl"
) -> Path:
    """Hand labels on every other case of good/m and of `other` (bad/m: every case wrong;
    acme/m: as good/m): each as the run graded it but the slips, with `meta.
    inclusion_probability` when `probability` is given."""
    rows = []
    for city in CITIES[::2]:
        case_id = city.lower()
        graded = {"good/m": city not in MISSED, other: other != "bad/m" and city not in MISSED}
        slips = {"good/m": GOOD_SLIP, other: OTHER_SLIP}
        for model, passed in graded.items():
            right = passed != (case_id == slips[model])
            meta: dict[str, Any] = {"model": model}
            if probability is not None:
                meta["inclusion_probability"] = probability
            verdict = "correct" if right else "incorrect"
            rows.append({"id": case_id, "labels": {"selection": verdict}, "meta": meta})
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_run_reports_each_models_ppi_rate_and_the_paired_difference(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    out = tmp_path / "runs.jsonl"
    labels = _labels(tmp_path, "bad/m")
    done = run(fake, _cases(tmp_path), "--models", "good/m,bad/m", "-o", str(out),
               "--labels", str(labels), "--format", "json")  # fmt: skip
    assert done.exit_code == 0, done.stderr
    assert len(lines(out)) == 2 * len(CITIES)
    report = json.loads(done.stdout)
    by_rate = {m["model"]: m["pass_rate"]["value"] for m in report["models"]}
    assert by_rate == {"good/m": pytest.approx(20 / 24), "bad/m": 0.0}
    ppi = report["ppi"]
    assert ppi["confidence"] == 0.95 and ppi["warnings"] == []
    assert ppi["designs"] == {"good/m": "known", "bad/m": "known"}
    by_model = {m["model"]: m for m in ppi["models"]}
    assert set(by_model) == {"good/m", "bad/m"}
    for model in by_model.values():
        assert (model["n_labelled"], model["n_graded"]) == (len(CITIES) // 2, len(CITIES))
        interval = model["ppi"]
        assert 0 <= interval["low"] <= interval["value"] <= interval["high"] <= 1
        assert model["labels_only"] is not None
    assert by_model["good/m"]["judge_only"] == pytest.approx(20 / 24)
    assert by_model["bad/m"]["judge_only"] == 0.0
    assert by_model["good/m"]["ppi"]["high"] > by_model["good/m"]["ppi"]["low"]
    (pair,) = ppi["pairs"]
    assert {pair["a"], pair["b"]} == {"good/m", "bad/m"}
    assert (pair["labelled"], pair["cases"]) == (len(CITIES) // 2, len(CITIES))
    difference = pair["difference"]
    assert -1 <= difference["low"] <= difference["value"] <= difference["high"] <= 1
    assert difference["high"] > difference["low"] and pair["significant"] is True
    # good/m - bad/m: the judge's difference and the whole PPI interval above 0
    sign = 1 if pair["a"] == "good/m" else -1
    assert sign * pair["judge_only"] == pytest.approx(20 / 24)
    assert min(sign * difference["low"], sign * difference["high"]) > 0


def test_run_prints_the_ppi_tables(fake: OpenRouterServer, tmp_path: Path) -> None:
    out = tmp_path / "runs.jsonl"
    labels = _labels(tmp_path, "bad/m")
    done = run(fake, _cases(tmp_path), "--models", "good/m,bad/m", "-o", str(out),
               "--labels", str(labels))  # fmt: skip
    assert done.exit_code == 0, done.stderr
    assert "prediction-powered pass rates" in done.stdout
    assert "prediction-powered paired differences" in done.stdout
    # without -o the records go to standard output, the comparison to standard error
    done = run(fake, _cases(tmp_path), "--models", "good/m,bad/m", "--labels", str(labels))
    assert done.exit_code == 0, done.stderr
    assert "prediction-powered pass rates" in done.stderr
    assert "prediction-powered" not in done.stdout


@pytest.mark.parametrize(
    ("models", "baseline", "code", "said"),
    [
        ("good/m,bad/m", "good/m", 1, "bad/m is worse than good/m in ppi_pass_rate"),
        ("good/m,bad/m", "bad/m", 0, "no model is worse than bad/m in ppi_pass_rate for sure"),
        ("good/m,acme/m", "good/m", 0, "no model is worse than good/m in ppi_pass_rate"),
    ],
    ids=["worse", "better", "alike"],
)
def test_fail_if_worse_gates_the_run_on_the_ppi_difference(
    fake: OpenRouterServer, tmp_path: Path, models: str, baseline: str, code: int, said: str
) -> None:
    other = models.split(",")[1]
    labels = _labels(tmp_path, other)
    done = run(fake, _cases(tmp_path), "--models", models, "-o", str(tmp_path / "runs.jsonl"),
               "--labels", str(labels), "--fail-if-worse", baseline,
               "--metric", "ppi_pass_rate")  # fmt: skip
    assert done.exit_code == code, done.output
    assert said in done.stderr
    if code:
        assert f"over {len(CITIES)} common cases, {len(CITIES) // 2} labelled for both" in (
            done.stderr
        )
    # the same records gated on the pass rate alone agree where the candidate is clearly worse
    if other == "bad/m":
        again = run(fake, _cases(tmp_path), "--models", models,
                    "-o", str(tmp_path / "runs.jsonl"), "--fail-if-worse", baseline)  # fmt: skip
        assert again.exit_code == code, again.output


def test_labels_of_unknown_design_are_refused_unless_assumed_random(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases, out = _cases(tmp_path), tmp_path / "runs.jsonl"
    unknown = _labels(tmp_path, "bad/m", probability=None)
    argv = ["--models", "good/m,bad/m", "-o", str(out), "--labels", str(unknown)]
    done = run(fake, cases, *argv, "--format", "json")
    assert done.exit_code == 2, done.output
    assert "judge run: " in done.stderr and "record no `meta.inclusion_probability`" in done.stderr
    assert "--assume-random" in done.stderr
    assert done.stdout == ""  # no comparison printed
    assert not fake.chats and not out.exists()  # refused before any request
    done = run(fake, cases, *argv, "--assume-random", "--format", "json")
    assert done.exit_code == 0, done.stderr
    ppi = json.loads(done.stdout)["ppi"]
    assert ppi["designs"] == {"good/m": "assumed_random", "bad/m": "assumed_random"}
    (pair,) = ppi["pairs"]
    assert pair["difference"] is not None and pair["significant"] is True
    # the gate refuses them alike, and is not run without labels at all
    gate = ["--fail-if-worse", "good/m", "--metric", "ppi_pass_rate"]
    done = run(fake, cases, *argv, *gate)
    assert done.exit_code == 2 and "inclusion_probability" in done.stderr
    asked = len(fake.chats)
    done = run(fake, cases, "--models", "good/m,bad/m", "-o", str(tmp_path / "more.jsonl"), *gate)
    assert done.exit_code == 2 and "needs hand labels (--labels)" in done.stderr
    assert len(fake.chats) == asked  # refused before any request


def _no_probability(row: dict[str, Any]) -> None:
    del row["meta"]["inclusion_probability"]


def _no_model(row: dict[str, Any]) -> None:
    del row["meta"]["model"]


def _other_model(row: dict[str, Any]) -> None:
    row["meta"]["model"] = "acme/m"


@pytest.mark.parametrize(
    ("spoil", "said"),
    [
        (_no_probability, "some labelled cases record no `meta.inclusion_probability`: "),
        (_no_model, "labels must name the model whose response they label (`meta.model`): "),
        (_other_model, "labels on models the runs lack: 'acme/m'"),
    ],
    ids=["some-without-probability", "no-model", "model-not-run"],
)
def test_labels_the_run_cannot_use_are_refused(
    fake: OpenRouterServer, tmp_path: Path, spoil: Callable[[dict[str, Any]], None], said: str
) -> None:
    """The first label spoiled, the others as `_labels` writes them; refused even with
    --assume-random (exit 2, the reason on standard error)."""
    known = _labels(tmp_path, "bad/m").read_text().splitlines()
    first = json.loads(known[0])
    spoil(first)
    spoiled = tmp_path / "spoiled.jsonl"
    spoiled.write_text("\n".join([json.dumps(first), *known[1:]]) + "\n")
    done = run(fake, _cases(tmp_path), "--models", "good/m,bad/m",
               "-o", str(tmp_path / "runs.jsonl"), "--labels", str(spoiled),
               "--assume-random")  # fmt: skip
    assert done.exit_code == 2, done.output
    assert f"judge run: {said}" in done.stderr
    assert not fake.chats and not (tmp_path / "runs.jsonl").exists()
    if spoil is not _other_model:
        assert repr(first["id"]) in done.stderr
