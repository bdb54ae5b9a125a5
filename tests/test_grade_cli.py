"""`judge grade` as a user runs it: configuration, exit codes, summary, resuming."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge._errors import JudgeError
from judge.cli import main
from judge.endpoints._endpoint import OPENAI_URL, OPENROUTER_URL, resolve_endpoint
from tests.chat_server import ChatServer, Reply, answer
from tests.helpers import call, case
from tests.test_judge import REQUIRED_IS_A_NUMBER

PARIS = case(
    [call("get_weather", {"city": "Paris"})],
    [{"name": "get_weather", "arguments": {"city": "Paris"}}],
) | {"id": "paris"}


def no_call(i: int) -> dict[str, Any]:
    return case([]) | {"id": f"n{i}", "response": {"content": f"hello {i}", "tool_calls": []}}


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def grade(server: ChatServer, tmp_path: Path, *args: str) -> Any:
    return CliRunner().invoke(
        main,
        [
            "grade",
            *args,
            "--base-url",
            server.url,
            "--model",
            "m",
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
    )


def test_results_carry_check_fields_and_judge(server: ChatServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", [PARIS, no_call(1)])
    out = tmp_path / "r.jsonl"
    result = grade(server, tmp_path, str(cases), "-o", str(out), "--format", "json")
    assert result.exit_code == 0, result.output
    lines = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    paris = lines["paris"]
    assert paris["passed"] is True and paris["failures"] == []
    judged = paris["judge"]
    assert judged["status"] == "ok"
    assert set(judged["selection"]) >= {"verdict", "category", "reasoning"}
    assert set(judged["arguments"][0]) >= {"call", "verdict", "reasoning", "problems"}
    assert {"samples", "flip_rate", "provenance"} <= set(judged)
    summary = json.loads(result.stdout)["judge"]
    assert summary["status"] == {"ok": 2, "judge_error": 0, "skipped": 0}
    assert summary["selection"] == {"correct": 2, "incorrect": 0, "uncertain": 0, "none": 0}
    assert summary["requests"] == 3
    assert summary["prompt_tokens"] == 300
    assert summary["agreement"]["selection"] == {"agree": 1, "disagree": 0}


def test_a_bad_line_is_reported_by_grade_as_grade(server: ChatServer, tmp_path: Path) -> None:
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps(PARIS) + "\n{oops\n")
    result = grade(server, tmp_path, str(cases), "-o", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 0, result.output
    assert f"judge grade: skipped {cases}:2: not valid JSON" in result.stderr
    assert "judge check" not in result.stderr


def test_environment_configures_the_endpoint(
    server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_BASE_URL", server.url)
    monkeypatch.setenv("JUDGE_MODEL", "env-model")
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    cases = write(tmp_path / "c.jsonl", [no_call(1)])
    result = CliRunner().invoke(main, ["grade", str(cases), "-o", str(tmp_path / "r.jsonl")])
    assert result.exit_code == 0, result.output
    assert server.chat_requests[0].body["model"] == "env-model"
    assert list((tmp_path / "cache").iterdir())


def test_judge_errors_are_counted_and_exit_zero(server: ChatServer, tmp_path: Path) -> None:
    server.default = lambda body: Reply(status=400, body={"error": {"message": "nope"}})
    cases = write(tmp_path / "c.jsonl", [no_call(1), no_call(2)])
    result = grade(
        server, tmp_path, str(cases), "-o", str(tmp_path / "r.jsonl"), "--format", "json"
    )
    assert result.exit_code == 0
    assert json.loads(result.stdout)["judge"]["status"] == {"ok": 0, "judge_error": 2, "skipped": 0}


def test_fail_under_reads_the_one_pass_rate(server: ChatServer, tmp_path: Path) -> None:
    server.default = lambda body: answer(body, "incorrect")
    cases = write(tmp_path / "c.jsonl", [no_call(1)])
    result = grade(
        server, tmp_path, str(cases), "-o", str(tmp_path / "r.jsonl"), "--fail-under", "0.5"
    )
    assert result.exit_code == 1
    assert "pass rate 0.0%" in result.stderr and "by the judge 1" in result.stderr


def test_endpoint_refusal_exits_4_and_says_what_to_fix(server: ChatServer, tmp_path: Path) -> None:
    server.default = lambda body: Reply(status=401, body={"error": {"message": "bad key"}})
    cases = write(tmp_path / "c.jsonl", [no_call(1)])
    result = grade(server, tmp_path, str(cases), "-o", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 4
    assert "JUDGE_API_KEY" in result.stderr


def test_unreadable_input_exits_2(server: ChatServer, tmp_path: Path) -> None:
    result = grade(server, tmp_path, str(tmp_path / "missing.jsonl"))
    assert result.exit_code == 2
    assert server.chat_requests == []


def test_dry_run_sends_nothing(server: ChatServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", [PARIS, no_call(1)])
    result = grade(server, tmp_path, str(cases), "--dry-run", "--price-per-mtok", "2")
    assert result.exit_code == 0, result.output
    assert "requests to send: 3" in result.stdout
    assert "prompt cost (estimated): $" in result.stdout
    assert server.chat_requests == []
    grade(server, tmp_path, str(cases), "-o", str(tmp_path / "r.jsonl"))
    again = grade(server, tmp_path, str(cases), "--dry-run")
    assert "requests to send: 0" in again.stdout
    assert "answered from cache: 3" in again.stdout


def test_a_run_killed_midway_resumes_asking_only_for_what_is_missing(
    server: ChatServer, tmp_path: Path
) -> None:
    cases = write(tmp_path / "c.jsonl", [no_call(i) for i in range(6)])
    out = tmp_path / "r.jsonl"
    answered = iter(range(3))

    def three_then_hang(body: dict[str, Any]) -> Reply:
        reply = answer(body)
        if next(answered, None) is None:
            reply.delay = 60.0
        return reply

    server.default = three_then_hang
    env = {**os.environ, "JUDGE_BASE_URL": server.url, "JUDGE_MODEL": "m"}
    command = [
        sys.executable,
        "-m",
        "judge",
        "grade",
        str(cases),
        "-o",
        str(out),
        "--concurrency",
        "1",
        "--no-cache",
    ]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (
        not out.exists() or len(out.read_text().splitlines()) < 3
    ):
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert len(out.read_text().splitlines()) == 3
    before = len(server.chat_requests)

    server.default = answer
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert len(server.chat_requests) - before == 3  # only the three missing cases
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert sorted(ids) == [f"n{i}" for i in range(6)]


def test_resume_redoes_judge_errors_and_cut_lines(server: ChatServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", [no_call(1), no_call(2)])
    out = tmp_path / "r.jsonl"
    server.push(Reply(status=400, body={"error": {"message": "nope"}}))
    grade(server, tmp_path, str(cases), "-o", str(out), "--concurrency", "1")
    statuses = sorted(json.loads(x)["judge"]["status"] for x in out.read_text().splitlines())
    assert statuses == ["judge_error", "ok"]
    out.write_text(out.read_text() + '{"id": "n3", "tool_sel')  # a line cut by a crash
    grade(server, tmp_path, str(cases), "-o", str(out))
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted((r["id"], r["judge"]["status"]) for r in lines) == [("n1", "ok"), ("n2", "ok")]


@pytest.mark.parametrize(
    ("flags", "env", "expected"),
    [
        pytest.param({}, {}, None, id="nothing-configured-is-local"),
        pytest.param({"model": "local"}, {"OPENAI_API_KEY": "sk-oa-1"}, None, id="model-local"),
        pytest.param(
            {},
            {"OPENROUTER_API_KEY": "sk-or-1"},
            (OPENROUTER_URL, "openai/gpt-4.1-mini", "openrouter"),
            id="openrouter",
        ),
        pytest.param(
            {}, {"OPENAI_API_KEY": "sk-oa-1"}, (OPENAI_URL, "gpt-4.1-mini", "openai"), id="openai"
        ),
        pytest.param(
            {"base_url": "http://127.0.0.1:9/v1/", "model": "q"},
            {"OPENROUTER_API_KEY": "sk-or-1"},
            ("http://127.0.0.1:9/v1", "q", "custom"),
            id="flag-base-url-wins",
        ),
        pytest.param(
            {},
            {"JUDGE_BASE_URL": "http://h/v1", "JUDGE_MODEL": "x"},
            ("http://h/v1", "x", "custom"),
            id="env-base-url",
        ),
        pytest.param(
            {"model": "anthropic/claude"},
            {"OPENROUTER_API_KEY": "sk-or-1"},
            (OPENROUTER_URL, "anthropic/claude", "openrouter"),
            id="model-flag",
        ),
    ],
)
def test_endpoint_resolution(
    flags: dict[str, str], env: dict[str, str], expected: tuple[str, str, str] | None
) -> None:
    found = resolve_endpoint(env=env, **flags)
    got = None if found is None else (found.base_url, found.model, found.provider)
    assert got == expected
    if found is not None:
        assert "sk-" not in repr(found)


def test_custom_endpoint_needs_a_model() -> None:
    with pytest.raises(JudgeError, match="--model"):
        resolve_endpoint(base_url="http://127.0.0.1:9/v1", env={})


def test_output_that_is_an_input_is_refused_and_left_alone(
    server: ChatServer, tmp_path: Path
) -> None:
    # Regression: `judge grade mine.jsonl -o mine.jsonl` emptied the input.
    cases = write(tmp_path / "mine.jsonl", [PARIS, no_call(1)])
    before = cases.read_bytes()
    done = grade(server, tmp_path, str(cases), "-o", str(cases))
    assert done.exit_code == 2
    assert f"-o {cases} is the input {cases}: write elsewhere" in done.stderr
    assert cases.read_bytes() == before
    assert server.chat_requests == []


@pytest.mark.parametrize("made_by", ["cases", "check"])
def test_output_that_is_not_a_results_file_is_refused_and_left_alone(
    server: ChatServer, tmp_path: Path, made_by: str
) -> None:
    cases = write(tmp_path / "c.jsonl", [no_call(1)])
    other = write(tmp_path / "other.jsonl", [PARIS, no_call(2)])
    if made_by == "check":  # the results of `judge check`: no judge verdicts
        checked = CliRunner().invoke(main, ["check", str(other), "-o", str(other) + ".out"])
        assert checked.exit_code == 0, checked.output
        other = Path(str(other) + ".out")
    before = other.read_bytes()
    done = grade(server, tmp_path, str(cases), "-o", str(other))
    assert done.exit_code == 2
    assert f"{other}:1: not a result of `judge grade`" in done.stderr
    assert other.read_bytes() == before
    assert server.chat_requests == []


def test_a_bad_line_before_the_last_is_refused(server: ChatServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", [no_call(1), no_call(2)])
    out = tmp_path / "r.jsonl"
    assert grade(server, tmp_path, str(cases), "-o", str(out)).exit_code == 0
    lines = out.read_text().splitlines()
    out.write_text(lines[0] + "\n" + '{"id": "n9", "tool_sel\n' + lines[1] + "\n")
    before = out.read_bytes()
    done = grade(server, tmp_path, str(cases), "-o", str(out))
    assert done.exit_code == 2
    assert f"{out}:2: not a result" in done.stderr
    assert out.read_bytes() == before


@pytest.mark.parametrize(
    ("changed", "says"),
    [
        pytest.param(["--model", "other"], "model", id="another-model"),
        pytest.param(["--samples", "3"], "samples", id="more-samples"),
        pytest.param(["--temperature", "0.5"], "temperature", id="another-temperature"),
    ],
)
def test_resuming_with_another_judge_is_refused(
    server: ChatServer, tmp_path: Path, changed: list[str], says: str
) -> None:
    cases = write(tmp_path / "c.jsonl", [no_call(1), no_call(2)])
    out = tmp_path / "r.jsonl"
    assert grade(server, tmp_path, str(cases), "-o", str(out)).exit_code == 0
    before, sent = out.read_bytes(), len(server.chat_requests)
    done = CliRunner().invoke(
        main,
        [
            "grade",
            str(cases),
            "-o",
            str(out),
            "--base-url",
            server.url,
            "--model",
            "m",
            "--cache-dir",
            str(tmp_path / "cache"),
            *changed,
        ],
    )
    assert done.exit_code == 2
    assert "judged by another judge" in done.stderr and says in done.stderr
    assert out.read_bytes() == before
    assert len(server.chat_requests) == sent
    again = grade(server, tmp_path, str(cases), "-o", str(out))  # the same judge resumes
    assert again.exit_code == 0 and len(server.chat_requests) == sent


def test_inputs_are_not_counted_without_a_progress_bar(
    server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Counting lines reads every input once more; only a progress bar needs the count.
    def counted(path: str) -> int:
        raise AssertionError(f"{path} was counted with no progress bar shown")

    monkeypatch.setattr("judge.cli._grade.line_count", counted)
    cases = write(tmp_path / "c.jsonl", [no_call(1)])
    done = grade(server, tmp_path, str(cases), "-o", str(tmp_path / "r.jsonl"))
    assert done.exit_code == 0, done.output


def test_no_credit_exits_4(server: ChatServer, tmp_path: Path) -> None:
    server.default = lambda body: Reply(status=402, body={"error": {"message": "no credits"}})
    cases = write(tmp_path / "c.jsonl", [no_call(1)])
    done = grade(server, tmp_path, str(cases), "-o", str(tmp_path / "r.jsonl"))
    assert done.exit_code == 4
    assert "credit" in done.stderr
    assert len(server.chat_requests) == 1


def test_dry_run_counts_a_case_the_rubric_cannot_render(server: ChatServer, tmp_path: Path) -> None:
    from judge.judging._rubric import builtin_rubrics_dir

    cases = write(tmp_path / "c.jsonl", [REQUIRED_IS_A_NUMBER, no_call(1)])
    small = str(builtin_rubrics_dir("small"))
    done = grade(server, tmp_path, str(cases), "--dry-run", "--rubrics", small)
    assert done.exit_code == 0, done.output
    assert "cases to judge: 2" in done.stdout and "requests to send: 1" in done.stdout
    assert "cases the rubrics cannot render (judge_error): 1" in done.stdout


@pytest.mark.parametrize(
    ("flags", "env", "key"),
    [
        pytest.param(
            {"base_url": "http://127.0.0.1:9/v1", "model": "q"},
            {"OPENAI_API_KEY": "sk-oa-1", "OPENROUTER_API_KEY": "sk-or-1"},
            "not-needed",
            id="custom-url-gets-no-provider-key",
        ),
        pytest.param(
            {"base_url": "http://127.0.0.1:9/v1", "model": "q"},
            {"OPENAI_API_KEY": "sk-oa-1", "JUDGE_API_KEY": "sk-judge"},
            "sk-judge",
            id="custom-url-gets-judge-key",
        ),
        pytest.param(
            {"base_url": "http://127.0.0.1:9/v1", "model": "q", "api_key": "sk-flag"},
            {"JUDGE_API_KEY": "sk-judge"},
            "sk-flag",
            id="custom-url-gets-the-given-key",
        ),
        pytest.param(
            {"base_url": "https://openrouter.ai/api/v1"},
            {"OPENAI_API_KEY": "sk-oa-1", "OPENROUTER_API_KEY": "sk-or-1"},
            "sk-or-1",
            id="openrouter-url-gets-its-key",
        ),
        pytest.param(
            {"base_url": "https://api.openai.com/v1"},
            {"OPENAI_API_KEY": "sk-oa-1", "OPENROUTER_API_KEY": "sk-or-1"},
            "sk-oa-1",
            id="openai-url-gets-its-key",
        ),
        pytest.param(
            {"base_url": "http://evil.example/openrouter.ai/v1", "model": "q"},
            {"OPENROUTER_API_KEY": "sk-or-1"},
            "not-needed",
            id="a-url-naming-openrouter-is-not-openrouter",
        ),
    ],
)
def test_a_provider_key_goes_only_to_its_provider(
    flags: dict[str, str], env: dict[str, str], key: str
) -> None:
    found = resolve_endpoint(env=env, **flags)
    assert found is not None and found.api_key == key


def test_resume_keeps_going_past_the_result_of_an_unreadable_case(
    server: ChatServer, tmp_path: Path
) -> None:
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps(no_call(1)) + "\n" + '{"id": "bad", "tools": 3}\n')
    out = tmp_path / "r.jsonl"
    assert grade(server, tmp_path, str(cases), "-o", str(out)).exit_code == 0
    sent = len(server.chat_requests)
    again = grade(server, tmp_path, str(cases), "-o", str(out))
    assert again.exit_code == 0, again.output
    assert len(server.chat_requests) == sent
    assert sorted(json.loads(x)["id"] for x in out.read_text().splitlines()) == ["bad", "n1"]
