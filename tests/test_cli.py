"""`judge check` as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge.cli import main
from tests.helpers import call, case

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "cases.jsonl"

PASSING = case(
    [call("get_weather", {"city": "Paris"})],
    [{"name": "get_weather", "arguments": {"city": "Paris"}}],
) | {"id": "pass"}
FAILING = case(
    [call("get_weather", {"city": "Rome"})],
    [{"name": "get_weather", "arguments": {"city": "Paris"}}],
) | {"id": "fail"}
UNGRADED = case([call("get_weather", {"city": "Rome"})]) | {"id": "ungraded"}
FAILING_CALL = {"name": "get_weather", "arguments": {"city": "Rome"}}  # a plain list's call


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def run(*args: str) -> Any:
    return CliRunner().invoke(main, ["check", *args])


def test_writes_one_result_per_line_and_a_json_summary(tmp_path: Path) -> None:
    cases = write(tmp_path / "cases.jsonl", [PASSING, FAILING, UNGRADED, "{oops"])
    out = tmp_path / "results.jsonl"
    result = run(str(cases), "-o", str(out), "--format", "json")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["passed"]) for r in lines] == [
        ("pass", True),
        ("fail", False),
        ("ungraded", None),
        ("cases.jsonl:4", None),
    ]
    assert set(lines[0]) == {
        "id",
        "tool_selection",
        "schema_valid",
        "argument_values",
        "passed",
        "tool_assertions",
        "call_scores",
        "failures",
        "value_origins",
        "injection",
    }
    assert lines[0]["tool_assertions"] is None
    assert lines[0]["call_scores"] == {
        "matched": 1,
        "precision": 1.0,
        "recall": 1.0,
        "f1": 1.0,
        "arguments": 1.0,
    }
    assert lines[1]["failures"] == [
        {
            "call": 0,
            "kind": "WrongValue",
            "path": "/city",
            "message": 'argument \'city\' is "Rome", expected "Paris"',
        }
    ]
    summary = json.loads(result.stdout)
    assert {
        k: summary[k]
        for k in ("cases", "passed", "failed", "not_gradable", "invalid_cases", "pass_rate")
    } == {
        "cases": 4,
        "passed": 1,
        "failed": 1,
        "not_gradable": 2,
        "invalid_cases": 1,
        "pass_rate": 1 / 3,  # the unreadable line counts as failed
    }
    counted = {kind: n for kind, n in summary["failure_kinds"].items() if n}
    assert counted == {"WrongValue": 1, "InvalidCase": 1}
    assert f"{cases}:4" in result.stderr  # the bad line is reported where it is


def test_table_summary(tmp_path: Path) -> None:
    cases = write(tmp_path / "cases.jsonl", [PASSING, FAILING])
    result = run(str(cases), "-o", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 0
    for text in ("cases", "passed", "failed", "not gradable", "50.0%", "WrongValue"):
        assert text in result.stdout


def test_without_output_results_go_to_stdout_and_summary_to_stderr(tmp_path: Path) -> None:
    cases = write(tmp_path / "cases.jsonl", [PASSING])
    result = run(str(cases), "--format", "json")
    assert json.loads(result.stdout)["id"] == "pass"
    assert json.loads(result.stderr)["passed"] == 1


@pytest.mark.parametrize(
    ("rate", "code"),
    [
        pytest.param("0.5", 0, id="at-the-threshold"),
        pytest.param("50%", 0, id="percent"),
        pytest.param("0.51", 1, id="under-the-threshold"),
        pytest.param("1.5", 2, id="not-a-rate"),
    ],
)
def test_fail_under(tmp_path: Path, rate: str, code: int) -> None:
    cases = write(tmp_path / "cases.jsonl", [PASSING, FAILING, UNGRADED])
    result = run(str(cases), "-o", str(tmp_path / "r.jsonl"), "--fail-under", rate)
    assert result.exit_code == code, result.output


def test_fail_under_with_nothing_gradable_fails(tmp_path: Path) -> None:
    cases = write(tmp_path / "cases.jsonl", [UNGRADED])
    result = run(str(cases), "-o", str(tmp_path / "r.jsonl"), "--fail-under", "0")
    assert result.exit_code == 1
    assert "no gradable case" in result.stderr


def test_unreadable_input_exits_2(tmp_path: Path) -> None:
    result = run(str(tmp_path / "missing.jsonl"))
    assert result.exit_code == 2
    assert "missing.jsonl" in result.stderr


def test_reads_standard_input_as_a_real_process(tmp_path: Path) -> None:
    stdin = json.dumps(PASSING) + "\n" + json.dumps(FAILING) + "\n"
    done = subprocess.run(
        [sys.executable, "-m", "judge", "check", "-", "--format", "json"],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["passed"] for line in done.stdout.splitlines()] == [True, False]
    assert json.loads(done.stderr)["cases"] == 2


def test_progress_bar_does_not_touch_the_results(tmp_path: Path) -> None:
    cases = write(tmp_path / "cases.jsonl", [PASSING] * 300)
    out = tmp_path / "r.jsonl"
    result = run(str(cases), "-o", str(out), "--progress", "--format", "json")
    assert result.exit_code == 0
    assert len(out.read_text().splitlines()) == 300


def test_check_loads_neither_the_openai_sdk_nor_fastapi(tmp_path: Path) -> None:
    # `judge check` starts fast: the judge's (its rubrics' Jinja too), runner's and service's
    # libraries stay unloaded, and so does the Python jsonschema.
    probe = (
        "import sys, runpy; sys.argv = ['judge', 'check', sys.argv[1], '-o', sys.argv[2]]\n"
        "try:\n    runpy.run_module('judge', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in ('openai', 'fastapi', 'sklearn', 'matplotlib', 'jinja2', "
        "'jsonschema') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(EXAMPLES), str(tmp_path / "out.jsonl")],
        capture_output=True,
        text=True,
    )
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stderr
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 9


def test_check_reads_cases_of_the_common_form_without_the_models(tmp_path: Path) -> None:
    # The check path's start-up: lines in the common form never load pydantic; the first line
    # in another form does, and is graded the same way.
    probe = (
        "import sys, runpy; sys.argv = ['judge', 'check', sys.argv[1], '-o', sys.argv[2]]\n"
        "try:\n    runpy.run_module('judge', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('pydantic' in sys.modules)"
    )
    lean = write(tmp_path / "lean.jsonl", [PASSING, FAILING, UNGRADED])
    other = write(tmp_path / "other.jsonl", [PASSING, FAILING | {"response": [FAILING_CALL]}])
    loaded = []
    for cases in (lean, other):
        done = subprocess.run(
            [sys.executable, "-c", probe, str(cases), str(tmp_path / "out.jsonl")],
            capture_output=True,
            text=True,
        )
        loaded.append(done.stdout.strip().splitlines()[-1])
        results = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
        assert [r["passed"] for r in results][:2] == [True, False], done.stderr
    assert loaded == ["False", "True"]
