"""The judge in a run: `judge run --judge` and `judge regrade`, a judge that fails, and the
calibration gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judge.cli import main
from tests.chat_server import ChatServer, Reply, answer
from tests.openrouter_server import OpenRouterServer, openrouter
from tests.run_helpers import REFUSED, judge_args, lines, run, write_cases


def test_run_with_judge_judges_stored_responses_without_asking_again(
    fake: OpenRouterServer,
    server: ChatServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m,bad/m", "-o", str(out)).exit_code == 0
    asked = len(fake.chats)
    judged = run(
        fake, cases, "--models", "good/m,bad/m", "-o", str(out), "--judge",
        "--judge-model", "judge-m", "--judge-base-url", server.url, "--format", "json",
    )  # fmt: skip
    assert judged.exit_code == 0, judged.stderr
    assert len(fake.chats) == asked  # no candidate asked again
    assert len(server.chat_requests) > 0
    records = lines(out)
    assert len(records) == 4  # superseded lines compacted away
    assert all(r["judge"]["status"] == "ok" for r in records)
    assert json.loads(judged.stdout)["models"][0]["breakdown"]["judge"] == 1.0


def test_regrade_judges_concurrently_and_a_refusing_judge_exits_4_keeping_its_work(
    fake: OpenRouterServer,
    server: ChatServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    cases = write_cases(tmp_path / "c.jsonl")
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m,bad/m", "-o", str(out)).exit_code == 0
    server.default = lambda body: Reply(body=answer(body).body, delay=0.1)
    server.push(*[server.default] * 6)
    server.default = lambda body: REFUSED
    refused = CliRunner().invoke(
        main, ["regrade", str(out), str(cases), *judge_args(server), "--concurrency", "3"]
    )
    assert refused.exit_code == 4, refused.output
    assert "rejected the API key" in refused.stderr and "again with --judge" in refused.stderr
    records = lines(out)
    assert len(records) == 8 and all(r["passed"] is not None for r in records)
    judged = [r for r in records if "judge" in r]
    assert 1 <= len(judged) < 8 and all(r["judge"]["status"] == "ok" for r in judged)
    assert server.max_in_flight > 1  # judged several records at once

    server.default = answer
    again = CliRunner().invoke(main, ["regrade", str(out), str(cases), *judge_args(server)])
    assert again.exit_code == 0, again.stderr
    assert all(r["judge"]["status"] == "ok" for r in lines(out))


def test_a_judge_failure_during_a_run_keeps_every_response_paid_for(
    server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    cases = write_cases(tmp_path / "c.jsonl", tuple(f"City{i}" for i in range(8)))
    out = tmp_path / "runs.jsonl"
    # the first refusal is quick, the others slow: a run that cancelled its other jobs on the
    # first one lost the responses they had already received
    server.push(REFUSED)
    server.default = lambda body: Reply(status=401, body=REFUSED.body, delay=0.3)
    with openrouter(slow_seconds=0.2) as fake:
        failed = run(
            fake, cases, "--models", "slow/m", "-o", str(out), "--concurrency", "3",
            *judge_args(server),
        )  # fmt: skip
        assert failed.exit_code == 4, failed.output
        assert "rejected the API key" in failed.stderr
        asked = len(fake.chats)
        stored = lines(out)
        assert len(stored) == asked < 8  # no new job after the refusal; none thrown away
        assert all(r["passed"] is True and "judge" not in r for r in stored)

        server.default = answer
        done = run(fake, cases, "--models", "slow/m", "-o", str(out), *judge_args(server))
        assert done.exit_code == 0, done.stderr
        assert len(fake.chats) == 8  # only the missing ones asked
    records = lines(out)
    assert len(records) == 8 and all(r["judge"]["status"] == "ok" for r in records)


def test_the_judge_of_a_run_passes_the_calibration_gate(
    fake: OpenRouterServer, server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    out = tmp_path / "runs.jsonl"
    record = tmp_path / "calibration.json"
    record.write_text("{}")
    gate = ["--calibration", str(record)]
    refused = run(fake, cases, "--models", "good/m", "-o", str(out), *judge_args(server), *gate)
    assert refused.exit_code == 3
    assert "not a calibration record" in refused.stderr
    assert fake.seen == [] and not out.exists()  # refused before anything was sent
    no_judge = run(fake, cases, "--models", "good/m", *gate)
    assert no_judge.exit_code == 2 and "add --judge" in no_judge.stderr
    forced = run(
        fake, cases, "--models", "good/m", "-o", str(out), *judge_args(server), *gate, "--force"
    )
    assert forced.exit_code == 0, forced.stderr
    [graded] = lines(out)
    assert graded["judge"]["trusted"] is False
