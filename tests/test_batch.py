"""`judge grade --batch` against a fake OpenAI Batch API on 127.0.0.1: exactly the requests
online grading sends, the same results, a kill while polling resumed without a new batch,
expired batches resubmitted once, unusable lines asked again, files for runners elsewhere."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.batch_server import BatchServer, batch_serving, judge_on, offline_output
from tests.chat_server import Reply, completion, serving
from tests.review_helpers import clean_env

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "cases.jsonl"
REFUNDS = "examples.refunds"


@pytest.fixture
def server() -> Iterator[BatchServer]:  # overrides conftest's: this one serves batches too
    with batch_serving() as running:
        yield running


judge = judge_on


def kill_while_polling(server: BatchServer, command: list[str], polls: int) -> None:
    """Run `command` until it has checked its batch's status `polls` times, then SIGKILL it."""
    process = subprocess.Popen(command, env=clean_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 60
    seen = 0
    while time.monotonic() < deadline and seen < polls:
        seen = sum(1 for s in server.seen if s.method == "GET" and "/batches/" in s.path)
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert seen >= polls, "the batch was never polled"


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    """A result without what says how it was asked (usage, the batch id)."""
    judged = dict(row["judge"] or {})
    judged.pop("usage", None)
    judged.pop("batch", None)
    return {**row, "judge": judged}


def by_id(path: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: comparable(r) for r in rows(path)}


def bodies(server: BatchServer) -> list[dict[str, Any]]:
    """The bodies of every batch's input lines, in order."""
    return [line["body"] for b in server.batches for line in server.input_lines(b)]


def test_a_batch_sends_exactly_what_online_grading_sends_and_grades_the_same(
    server: BatchServer, tmp_path: Path
) -> None:
    online = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(tmp_path / "online.jsonl"),
                   cache="online-cache")  # fmt: skip
    assert online.returncode in (0, 1), online.stderr
    sent_online = sorted(json.dumps(r.body, sort_keys=True) for r in server.chat_requests)
    server.seen.clear()

    batched = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(tmp_path / "batch.jsonl"),
                    "--batch", "--batch-poll", "0.05", "--price-per-mtok", "2")  # fmt: skip
    assert batched.returncode == online.returncode, batched.stderr
    assert server.chat_requests == []  # nothing asked online
    assert server.batch_creations == 1
    in_batch = sorted(json.dumps(b, sort_keys=True) for b in bodies(server))
    assert in_batch == sent_online
    assert by_id(tmp_path / "batch.jsonl") == by_id(tmp_path / "online.jsonl")
    graded = rows(tmp_path / "batch.jsonl")
    noted = {r["judge"].get("batch") for r in graded if r["judge"]["usage"]["cached"]}
    assert noted == {"batch_1"}
    assert not any("batch" in r["judge"]["provenance"] for r in graded)  # not the judge's
    # the cost, online and at the batch price
    line = next(x for x in batched.stdout.splitlines() if x.startswith("cost at $2.0/Mtok"))
    online_cost, batch_cost = (
        float(p.split(" ")[0].strip("$")) for p in line.split(": ")[1].split(", ")
    )
    assert batch_cost == pytest.approx(online_cost * 0.5, abs=1e-4) and online_cost > 0
    # and a batch line is a Batch API line: custom_id, method, url, body
    first = server.input_lines(next(iter(server.batches)))[0]
    assert set(first) == {"custom_id", "method", "url", "body"}
    assert first["method"] == "POST" and first["url"] == "/v1/chat/completions"

    # graded again: every answer is cached, nothing is submitted
    server.seen.clear()
    again = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(tmp_path / "again.jsonl"),
                  "--batch", "--batch-poll", "0.05")  # fmt: skip
    assert again.returncode == online.returncode, again.stderr
    assert server.batch_creations == 0 and server.chat_requests == []


def test_a_kill_while_polling_resumes_the_same_batch_without_a_new_one(
    server: BatchServer, tmp_path: Path
) -> None:
    server.hold.clear()  # every batch stays in progress
    output = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "judge", "grade", str(EXAMPLES), "-o", str(output),
               "--batch", "--batch-poll", "0.05", "--base-url", server.url, "--model", "m",
               "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    kill_while_polling(server, command, polls=3)
    assert Path(f"{output}.batch.json").exists() and server.batch_creations == 1

    server.hold.set()
    resumed = subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=300)
    assert resumed.returncode in (0, 1), resumed.stderr
    assert server.batch_creations == 1  # zero new submissions
    assert "no new batch: resumed" in resumed.stderr
    assert len(rows(output)) == 9 and all(
        r["judge"]["status"] != "judge_error" for r in rows(output)
    )


def test_a_batch_recorded_nowhere_is_adopted_not_paid_twice(
    server: BatchServer, tmp_path: Path
) -> None:
    output = tmp_path / "out.jsonl"
    first = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(output), "--batch",
                  "--batch-poll", "0.05")  # fmt: skip
    assert first.returncode in (0, 1), first.stderr
    # as if the process had died between creating the batch and writing its state
    Path(f"{output}.batch.json").unlink()
    output.unlink()
    second = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(output), "--batch",
                   "--batch-poll", "0.05", cache="other-cache")  # fmt: skip
    assert second.returncode == first.returncode, second.stderr
    assert server.batch_creations == 1


def test_an_expired_batch_is_resubmitted_once_then_judge_error(
    server: BatchServer, tmp_path: Path
) -> None:
    server.ends.extend(["expired", "completed"])
    output = tmp_path / "out.jsonl"
    run = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(output), "--batch",
                "--batch-poll", "0.05")  # fmt: skip
    assert run.returncode in (0, 1), run.stderr
    first, second = server.batches
    assert (
        len(server.input_lines(second))
        == len(server.input_lines(first)) - len(server.input_lines(first)) // 2
    )  # only what the expired batch left unanswered
    assert all(
        r["judge"]["status"] == "ok" for r in rows(output) if r["judge"]["status"] != "skipped"
    )
    assert server.chat_requests == []


def test_what_two_batches_left_unanswered_is_judge_error_never_asked_online(
    server: BatchServer, tmp_path: Path
) -> None:
    server.ends.extend(["expired", "expired"])
    output = tmp_path / "twice.jsonl"
    judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(output), "--batch",
          "--batch-poll", "0.05")  # fmt: skip
    assert server.batch_creations == 2
    errors = [r for r in rows(output) if r["judge"]["status"] == "judge_error"]
    assert errors and server.chat_requests == []
    assert all("expired before answering it" in r["judge"]["error"] for r in errors)


def test_an_unusable_line_is_asked_again_online_or_in_one_follow_up_batch(
    server: BatchServer, tmp_path: Path
) -> None:
    broken: list[str] = []

    def fault(line: dict[str, Any]) -> str | None:
        if not broken:
            broken.append(line["custom_id"])
        return "malformed" if line["custom_id"] == broken[0] and len(server.batches) == 1 else None

    server.fault = fault
    output = tmp_path / "online.jsonl"
    run = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(output), "--batch",
                "--batch-poll", "0.05")  # fmt: skip
    assert run.returncode in (0, 1), run.stderr
    # the malformed line's request, asked online, exactly as the batch line held it
    line = next(x for x in server.input_lines("batch_1") if x["custom_id"] == broken[0])
    assert [r.body for r in server.chat_requests] == [line["body"]]
    assert all(r["judge"]["status"] != "judge_error" for r in rows(output))

    broken.clear()
    server.batches.clear()
    server.seen.clear()
    output = tmp_path / "batch.jsonl"
    run = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(output), "--batch",
                "--batch-poll", "0.05", "--batch-retry", "batch", cache="fresh")  # fmt: skip
    assert run.returncode in (0, 1), run.stderr
    assert server.chat_requests == []
    first, *follow_up = server.batches
    assert len(follow_up) == 1
    assert [x["custom_id"] for x in server.input_lines(follow_up[0])] == broken
    assert all(r["judge"]["status"] != "judge_error" for r in rows(output))


def test_an_errored_line_is_judge_error_with_batch_retry_batch_once_it_fails_twice(
    server: BatchServer, tmp_path: Path
) -> None:
    target: list[str] = []

    def fault(line: dict[str, Any]) -> str | None:
        target.append(target[0] if target else line["custom_id"])
        return "error" if line["custom_id"] == target[0] else None

    server.fault = fault
    output = tmp_path / "out.jsonl"
    judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(output), "--batch",
          "--batch-poll", "0.05", "--batch-retry", "batch")  # fmt: skip
    assert server.batch_creations == 2 and server.chat_requests == []
    errors = [r for r in rows(output) if r["judge"]["status"] == "judge_error"]
    assert len(errors) == 1 and "the server had an error" in errors[0]["judge"]["error"]


def test_large_work_is_split_into_several_batches(server: BatchServer, tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    run = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(output), "--batch",
                "--batch-poll", "0.05", "--batch-max-requests", "5")  # fmt: skip
    assert run.returncode in (0, 1), run.stderr
    sizes = [len(server.input_lines(b)) for b in server.batches]
    assert len(sizes) == 3 and max(sizes) <= 5 and sum(sizes) == 13
    server.batches.clear()  # (else the same chunks would be adopted from the first run)
    run = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(tmp_path / "b.jsonl"),
                "--batch", "--batch-poll", "0.05", "--batch-max-bytes", "20000",
                cache="fresh")  # fmt: skip
    more = list(server.batches)
    assert len(more) > 1
    assert all(len(server.files[server.batches[b]["input_file_id"]]) <= 20000 for b in more)


def test_a_batch_file_for_a_runner_elsewhere_and_its_output_read_back(
    server: BatchServer, tmp_path: Path
) -> None:
    written = tmp_path / "input.jsonl"
    run = judge(server, tmp_path, "grade", str(EXAMPLES), "--batch-file", str(written))
    assert run.returncode == 0, run.stderr
    assert "wrote 13 requests" in run.stderr and server.seen == []
    output_file = tmp_path / "output.jsonl"
    output_file.write_bytes(offline_output(server, written.read_bytes()))
    graded = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(tmp_path / "out.jsonl"),
                   "--batch-results", str(output_file))  # fmt: skip
    assert graded.returncode in (0, 1), graded.stderr
    assert server.chat_requests == []
    online = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(tmp_path / "on.jsonl"),
                   cache="online")  # fmt: skip
    assert by_id(tmp_path / "out.jsonl") == by_id(tmp_path / "on.jsonl")
    assert online.returncode == graded.returncode


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--batch"], "give -o FILE"),
        (["--batch", "-o", "x.jsonl", "--dry-run"], "--dry-run"),
        (["--batch", "--batch-file", "f.jsonl", "-o", "x.jsonl"], "choose one"),
        (["--batch", "-o", "x.jsonl", "--no-cache"], "not with --no-cache"),
    ],
)
def test_batch_options_that_cannot_work_are_refused(
    server: BatchServer, tmp_path: Path, args: list[str], says: str
) -> None:
    run = judge(server, tmp_path, "grade", str(EXAMPLES), *args)
    assert run.returncode == 2 and says in run.stderr


def test_the_embedded_judge_has_no_batch_api(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "judge", "grade", str(EXAMPLES), "-o", str(tmp_path / "x.jsonl"),
         "--batch", "--cache-dir", str(tmp_path / "cache")],
        capture_output=True, text=True, env=clean_env(), timeout=120,
    )  # fmt: skip
    assert run.returncode == 2 and "give --base-url" in run.stderr


def candidate(body: dict[str, Any]) -> Reply:
    """A candidate model: calls the first tool offered with a city, and says what it cost."""
    reply = completion(None)
    tools = body.get("tools") or []
    if tools:
        name = tools[0]["function"]["name"]
        reply["choices"][0]["message"]["tool_calls"] = [
            {"id": "c1", "type": "function",
             "function": {"name": name, "arguments": json.dumps({"city": "Paris"})}}
        ]  # fmt: skip
        reply["choices"][0]["finish_reason"] = "tool_calls"
    reply["usage"]["cost"] = 0.001
    reply["model"] = body["model"]
    return Reply(body=reply)


@pytest.fixture
def candidates() -> Iterator[BatchServer]:
    running = BatchServer(candidate).start()
    try:
        yield running
    finally:
        running.stop()


def run_models(server: BatchServer, output: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "judge", "run", str(EXAMPLES), "--models", "a/one,b/two",
            "--base-url", server.url, "--no-preflight", "--reasoning-effort", "off",
            "-o", str(output), *args]  # fmt: skip


def test_judge_run_batch_sends_the_online_bodies_and_records_what_was_charged(
    candidates: BatchServer, tmp_path: Path
) -> None:
    command = run_models(candidates, tmp_path / "online.jsonl")
    online = subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=300)
    assert online.returncode == 0, online.stderr
    sent_online = sorted(json.dumps(r.body, sort_keys=True) for r in candidates.chat_requests)
    candidates.seen.clear()
    batched = subprocess.run(
        run_models(candidates, tmp_path / "batch.jsonl", "--batch", "--batch-poll", "0.05",
                   "--price-per-mtok", "1"),
        capture_output=True, text=True, env=clean_env(), timeout=300,
    )  # fmt: skip
    assert batched.returncode == 0, batched.stderr
    assert candidates.chat_requests == [] and candidates.batch_creations == 1
    assert sorted(json.dumps(b, sort_keys=True) for b in bodies(candidates)) == sent_online
    records = rows(tmp_path / "batch.jsonl")
    assert len(records) == 18 and {r["batch"] for r in records} == {"batch_1"}
    assert {r["cost_usd"] for r in records} == {0.001}  # what the provider says it charged
    keep = ("model", "case_id", "run", "passed", "tool_selection", "argument_values", "failures")
    as_online = {(r["model"], r["case_id"]): {k: r[k] for k in keep}
                 for r in rows(tmp_path / "online.jsonl")}  # fmt: skip
    assert {(r["model"], r["case_id"]): {k: r[k] for k in keep} for r in records} == as_online
    assert "cost at $1.0/Mtok" in batched.stderr


def test_judge_run_batch_killed_while_polling_resumes_without_a_new_batch(
    candidates: BatchServer, tmp_path: Path
) -> None:
    candidates.hold.clear()
    output = tmp_path / "runs.jsonl"
    command = run_models(candidates, output, "--batch", "--batch-poll", "0.05")
    kill_while_polling(candidates, command, polls=3)
    candidates.hold.set()
    resumed = subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert candidates.batch_creations == 1
    assert len(rows(output)) == 18 and candidates.chat_requests == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--models", "local", "-o", "r.jsonl"], "no Batch API"),
        (["--models", "a/one", "-o", "r.jsonl", "--env", f"{REFUNDS}.environment:make_environment"],
         "agent runs"),
        (["--models", "a/one", "-o", "r.jsonl", "--agent", f"{REFUNDS}.agent:refund_agent"],
         "agent runs"),
        (["--models", "a/one"], "give -o FILE"),
        (["--models", "a/one", "-o", "r.jsonl", "--batch-file", "in.jsonl"], "for judge grade"),
    ],
)  # fmt: skip
def test_judge_run_batch_refuses_what_a_batch_cannot_hold(
    candidates: BatchServer, tmp_path: Path, args: list[str], says: str
) -> None:
    refused = subprocess.run(
        [sys.executable, "-m", "judge", "run", str(EXAMPLES), "--base-url", candidates.url,
         "--no-preflight", "--batch",
         *(str(tmp_path / a) if a.endswith(".jsonl") else a for a in args)],
        capture_output=True, text=True, env=clean_env(), timeout=120, cwd=EXAMPLES.parents[1],
    )  # fmt: skip
    assert refused.returncode == 2 and says in refused.stderr, refused.stderr
    assert candidates.seen == []  # refused before anything was sent


@pytest.mark.parametrize("end", ["failed", "cancelled"])
def test_a_failed_or_cancelled_batch_is_submitted_once_more(
    server: BatchServer, tmp_path: Path, end: str
) -> None:
    server.ends.extend([end, "completed"])
    output = tmp_path / "out.jsonl"
    run = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(output), "--batch",
                "--batch-poll", "0.05")  # fmt: skip
    assert run.returncode in (0, 1), run.stderr
    first, second = (server.input_lines(b) for b in server.batches)
    left = len(first) if end == "failed" else len(first) - len(first) // 2
    assert len(second) == left  # what the first left unanswered, and only that
    assert f"batch_1 {end}" in run.stderr
    assert all(r["judge"]["status"] != "judge_error" for r in rows(output))
    assert server.chat_requests == []


def test_a_resubmitted_request_answered_unusably_is_still_asked_online(
    server: BatchServer, tmp_path: Path
) -> None:
    server.ends.extend(["expired", "completed"])
    server.fault = lambda line: "malformed" if len(server.batches) == 2 else None
    output = tmp_path / "out.jsonl"
    run = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(output), "--batch",
                "--batch-poll", "0.05")  # fmt: skip
    assert run.returncode in (0, 1), run.stderr
    second = server.input_lines("batch_2")
    assert sorted(json.dumps(r.body) for r in server.chat_requests) == sorted(
        json.dumps(line["body"]) for line in second
    )
    assert all(r["judge"]["status"] != "judge_error" for r in rows(output))


def test_a_batch_the_endpoint_lost_is_submitted_again_and_a_state_of_another_endpoint_refused(
    server: BatchServer, tmp_path: Path
) -> None:
    server.hold.clear()
    output = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "judge", "grade", str(EXAMPLES), "-o", str(output),
               "--batch", "--batch-poll", "0.05", "--base-url", server.url, "--model", "m",
               "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    kill_while_polling(server, command, polls=1)
    server.batches.clear()  # purged at the provider
    server.hold.set()
    resumed = subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=300)
    assert resumed.returncode in (0, 1), resumed.stderr
    assert "batch_1 lost" in resumed.stderr and server.batch_creations == 2
    assert all(r["judge"]["status"] != "judge_error" for r in rows(output))

    other = [*command[:-6], "--base-url", server.url.replace("127.0.0.1", "localhost"),
             "--model", "m", "--cache-dir", str(tmp_path / "other")]  # fmt: skip
    output.unlink()
    refused = subprocess.run(other, capture_output=True, text=True, env=clean_env(), timeout=120)
    assert refused.returncode == 2 and "holds batches of" in refused.stderr


def test_polling_rides_out_a_provider_answering_503(server: BatchServer, tmp_path: Path) -> None:
    server.unavailable = 2
    output = tmp_path / "out.jsonl"
    run = judge(server, tmp_path, "grade", str(EXAMPLES), "-o", str(output), "--batch",
                "--batch-poll", "0.05")  # fmt: skip
    assert run.returncode in (0, 1), run.stderr
    assert server.unavailable == 0 and server.batch_creations == 1
    assert all(r["judge"]["status"] != "judge_error" for r in rows(output))


def test_judge_run_batch_keeps_every_paid_reply_when_the_judge_refuses(
    candidates: BatchServer, tmp_path: Path
) -> None:
    """A judge that stops paying (402) while a batch's replies are read back: every reply is
    still recorded, once, without its verdicts, and the refusal is reported."""
    output = tmp_path / "runs.jsonl"
    with serving(lambda body: Reply(status=402, body={"error": {"message": "no credit"}})) as judge:
        refused = subprocess.run(
            run_models(candidates, output, "--batch", "--batch-poll", "0.05", "--judge",
                       "--judge-base-url", judge.url, "--judge-model", "m"),
            capture_output=True, text=True, env=clean_env(), timeout=300,
        )  # fmt: skip
    assert refused.returncode != 0 and "402" in refused.stderr, refused.stderr
    records = rows(output)
    assert len(records) == 18  # none lost, none twice
    assert len({(r["model"], r["case_id"], r["run"]) for r in records}) == 18
    assert all(r.get("batch") == "batch_1" and r.get("judge") is None for r in records)
    assert candidates.batch_creations == 1


def test_a_result_written_before_keeps_its_batch_ids() -> None:
    # Results written before the batch ids moved out of the provenance read them from there.
    from judge.checks._outcome import JudgeOutcome

    provenance = {"model": "m", "endpoint": "http://x/v1", "temperature": 0.0, "seed": 7,
                  "response_format": "json_schema", "batch": "batch_1,batch_2"}  # fmt: skip
    read = JudgeOutcome.model_validate({"status": "ok", "provenance": provenance})
    assert read.batch == "batch_1,batch_2"
    assert read.provenance is not None and "batch" not in read.provenance.model_dump()
    again = JudgeOutcome.model_validate_json(read.model_dump_json())
    assert again == read


def test_a_batch_without_an_endpoint_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    output = tmp_path / "out.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "judge", "grade", str(EXAMPLES), "-o", str(output), "--batch"],
        env=clean_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "a batch needs an endpoint with a Batch API: give --base-url" in done.stderr
    assert not output.exists() and not (tmp_path / "out.jsonl.batch.json").exists()
