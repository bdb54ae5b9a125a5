"""The runs file of `judge run`: resuming, re-grading without asking the candidates again, and
files that are not runs files (refused, left as they were)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from judge.cli import main
from tests.openrouter_server import KEY, OpenRouterServer, openrouter
from tests.run_helpers import lines, run, write_cases


def test_resuming_with_other_settings_is_refused(fake: OpenRouterServer, tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m", "-o", str(out)).exit_code == 0
    result = run(fake, cases, "--models", "good/m", "-o", str(out), "--temperature", "1")
    assert result.exit_code == 2
    assert "was run with other settings" in result.stderr


def test_a_killed_run_resumes_with_only_the_missing_requests(tmp_path: Path) -> None:
    cities = tuple(f"City{i}" for i in range(8))
    cases = write_cases(tmp_path / "c.jsonl", cities)
    out = tmp_path / "runs.jsonl"
    with openrouter(slow_seconds=0.2) as fake:
        command = [
            sys.executable, "-m", "judge", "run", str(cases), "--models", "slow/m",
            "--runs", "2", "--seed", "100", "--concurrency", "1", "-o", str(out),
            "--base-url", fake.url, "--api-key-env", "FAKE_KEY",
        ]  # fmt: skip
        env = {**os.environ, "FAKE_KEY": KEY}
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
            not out.exists() or len(out.read_text().splitlines()) < 5
        ):
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait()
        text = out.read_text()
        out.write_text(text[: text.rindex("\n", 0, len(text) - 1) + 40])  # last line cut short
        kept = {
            (r["case_id"], r["run"]) for r in map(json.loads, out.read_text().splitlines()[:-1])
        }
        assert len(kept) >= 4
        asked_before = len(fake.chats)

        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        asked = {
            (b["messages"][0]["content"].rsplit(" ", 1)[-1].lower(), b["seed"] - 99)
            for b in fake.chats[asked_before:]
        }
        everything = {(c.lower(), r) for c in cities for r in (1, 2)}
        assert asked == everything - kept
        assert len(fake.chats) - asked_before == len(everything - kept)
    records = lines(out)
    assert sorted((r["case_id"], r["run"]) for r in records) == sorted(everything)


def test_regrading_never_asks_the_candidates_again(fake: OpenRouterServer, tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m", "-o", str(out)).exit_code == 0
    asked = len(fake.chats)
    # the expected city of one case was wrong: fix the cases, grade the stored responses again
    write_cases(cases, ("Paris", "Oslo"), Oslo="Bergen")
    result = CliRunner().invoke(main, ["regrade", str(out), str(cases), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert len(fake.chats) == asked
    passed = {r["case_id"]: r["passed"] for r in lines(out)}
    assert passed == {"paris": True, "oslo": False}
    assert json.loads(result.stdout)["models"][0]["pass_rate"]["value"] == 0.5


def test_a_file_holding_only_a_cut_line_is_cleaned_before_appending(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    # regression: appending after a cut line without its newline corrupted the first record
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    out.write_text('{"model": "good/m", "case_id": "par')
    result = run(fake, cases, "--models", "good/m", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert f"{out}:1: skipped a last line cut short" in result.stderr
    assert [(r["case_id"], r["passed"]) for r in lines(out)] == [("paris", True)]


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["run", "{cases}", "--models", "good/m", "-o", "{file}"], id="run-o"),
        pytest.param(["regrade", "{file}", "{cases}"], id="regrade-in-place"),
        pytest.param(["compare", "{file}"], id="compare"),
    ],
)
@pytest.mark.parametrize(
    ("content", "where"),
    [
        pytest.param("cases", ":1: not a run record (/model: Field required)", id="cases-file"),
        pytest.param("results", ":1: not a run record (/model: Field required)", id="results"),
        pytest.param("one-case", ":1: not a run record", id="one-line-cases-file"),
        pytest.param("cut-inside", ":1: not a run record (not JSON", id="cut-line-not-last"),
    ],
)
def test_a_file_that_is_not_a_runs_file_is_refused_and_left_untouched(
    fake: OpenRouterServer, tmp_path: Path, command: list[str], content: str, where: str
) -> None:
    # regression: unreadable lines were skipped, then the file was compacted: a cases or
    # results file passed as the runs file was emptied
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    target = tmp_path / "target.jsonl"
    if content == "cases":
        target.write_bytes(cases.read_bytes())
    elif content == "one-case":
        target.write_text(cases.read_text().splitlines()[0] + "\n")
    elif content == "results":
        done = CliRunner().invoke(main, ["check", str(cases), "-o", str(target)])
        assert done.exit_code == 0, done.stderr
    else:
        assert run(fake, cases, "--models", "good/m", "-o", str(target)).exit_code == 0
        first, second = target.read_text().splitlines()
        target.write_text(f"{first[:30]}\n{second}\n")
    before = target.read_bytes()
    fake.seen.clear()
    args = [a.format(file=target, cases=cases) for a in command]
    if args[0] == "run":
        args += ["--base-url", fake.url, "--api-key-env", "FAKE_KEY"]
    result = CliRunner(env={"FAKE_KEY": KEY}).invoke(main, args)
    assert result.exit_code == 2, result.output
    assert f"{target}{where}" in result.stderr
    assert target.read_bytes() == before
    assert fake.chats == []


def test_regrade_refuses_a_file_with_no_records(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    empty = tmp_path / "runs.jsonl"
    empty.write_text("")
    result = CliRunner().invoke(main, ["regrade", str(empty), str(cases)])
    assert result.exit_code == 2
    assert f"{empty}: no run records" in result.stderr


def test_resuming_with_other_settings_is_refused_for_any_model_in_the_file(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    # regression: records of models not in this run were not compared
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m", "-o", str(out)).exit_code == 0
    before = out.read_bytes()
    result = run(fake, cases, "--models", "bad/m", "-o", str(out), "--temperature", "1")
    assert result.exit_code == 2
    assert "was run with other settings" in result.stderr and "good/m" in result.stderr
    assert out.read_bytes() == before
    added = run(fake, cases, "--models", "bad/m", "-o", str(out))  # same settings: fine
    assert added.exit_code == 0, added.stderr
    assert sorted(r["model"] for r in lines(out)) == ["bad/m", "good/m"]


def test_a_fair_file_mixing_cases_with_and_without_tools_is_not_called_unfair(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    chat = {"id": "hello", "messages": [{"role": "user", "content": "hi Paris"}]}
    cases.write_text(cases.read_text() + json.dumps(chat | {"expected_calls": []}) + "\n")
    out = tmp_path / "runs.jsonl"
    result = run(
        fake, cases, "--models", "good/m,bad/m", "-o", str(out), "--seed", "5", "--runs", "2"
    )
    assert result.exit_code == 0, result.stderr
    hello = [b for b in fake.chats if b["messages"][0]["content"] == "hi Paris"]
    assert len(hello) == 4 and not any("tool_choice" in b or "tools" in b for b in hello)
    assert "same settings" not in result.stdout
    settings = {json.dumps(r["settings"], sort_keys=True) for r in lines(out)}
    assert [json.loads(s) for s in settings] == [
        {
            "tool_choice": "auto",
            "reasoning": {"effort": "low"},
            "provider": {"require_parameters": True},
            "temperature": 0.0,
            "seed": 5,
        }
    ]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--models", "good/m,notools/m"], id="refused-by-preflight"),
        pytest.param(["--models", "good/m", "--temperature", "1"], id="other-settings"),
    ],
)
def test_a_refused_run_leaves_the_runs_file_as_it_was(
    fake: OpenRouterServer, tmp_path: Path, args: list[str]
) -> None:
    # regression: the file was compacted (its cut last line dropped) before pre-flight
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m", "-o", str(out)).exit_code == 0
    out.write_text(out.read_text() + '{"model": "good/m", "case_')
    before = out.read_bytes()
    result = run(fake, cases, *args, "-o", str(out))
    assert result.exit_code == 2
    assert out.read_bytes() == before
