"""`judge check` over the shared labelled datasets (skipped when they are absent)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from judge import check, load_cases
from judge.cli import main

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
FILES = sorted(DATASETS.glob("*.jsonl")) if DATASETS.is_dir() else []

pytestmark = pytest.mark.skipif(not FILES, reason=f"shared datasets not found at {DATASETS}")


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_case_is_graded(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    result = CliRunner().invoke(main, ["check", str(path), "-o", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    source = path.read_text().splitlines()
    assert len(lines) == len(source)
    assert [r["id"] for r in lines] == [json.loads(line)["id"] for line in source]
    assert not any(f["kind"] == "InvalidCase" for r in lines for f in r["failures"])


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_selection_agrees_with_labels_where_expected_calls_decide_it(path: Path) -> None:
    # A case whose label says the selection is wrong must never pass; when a tool call was
    # expected, a case labelled right must have the right names.
    cases = load_cases(path)
    results = check(cases)
    wrong_passed = [
        c.id
        for c, r in zip(cases, results, strict=True)
        if c.labels and c.labels.selection == "incorrect" and r.passed
    ]
    # When2Call's text answers (asking vs answering vs refusing) are for the judge to tell.
    tolerated = {c.id for c in cases if c.expected_calls == () and not c.tool_calls}
    assert set(wrong_passed) <= tolerated
    right_but_misnamed = [
        c.id
        for c, r in zip(cases, results, strict=True)
        if c.labels
        and c.labels.selection == "correct"
        and c.expected_calls
        and c.tool_calls
        and r.tool_selection is False
    ]
    assert right_but_misnamed == []


def test_bfcl_perturbations_are_caught() -> None:
    path = DATASETS / "bfcl_single_turn.jsonl"
    cases = load_cases(path)
    results = check(cases)
    caught: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for c, r in zip(cases, results, strict=True):
        kind = c.meta.get("perturbation")
        if kind and c.expected_calls is not None:
            total[kind] += 1
            caught[kind] += r.passed is False
    # Every edit but a schema-allowed extra argument is provably wrong.
    for kind in (
        "wrong_value",
        "missing_required",
        "wrong_type",
        "wrong_function",
        "missing_parallel_call",
        "no_call",
    ):
        assert caught[kind] == total[kind] > 0, kind
    assert caught["extra_arg"] == 0
