"""Batch output files read line by line, nothing lost and nothing changed in silence: a line
that cannot be read is said with file:line, the JSON pointer and why, reading goes on, and
the request it answered is that case's `judge_error` (never asked again online, never a
traceback); a file that answers nothing is refused whole (exit 2). Through `read_output`,
`judge grade --batch-results`, `judge grade --batch`, and a seeded fuzz of the reader."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from judge import load_cases
from judge.endpoints._batch_output import read_output
from judge.judging._batch import acceptor, requests_of
from judge.judging._grade import Judge
from tests.batch_server import BatchServer, batch_serving, judge_on, offline_output
from tests.chat_server import answer, completion
from tests.fuzz import Budget, mutated_lines

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "cases.jsonl"
Edit = Callable[[dict[str, Any]], Any]


def _line(key: str, body: Any = None) -> dict[str, Any]:
    body = completion('{"verdict": "correct"}') if body is None else body
    response = {"status_code": 200, "request_id": f"r-{key}", "body": body}
    return {"id": f"b-{key}", "custom_id": key, "response": response, "error": None}


def _set(path: str, value: Any) -> Edit:
    """An edit setting the value at `path` (dot-separated) of a line."""

    def edit(row: dict[str, Any]) -> Any:
        *parents, last = path.split(".")
        target = row
        for part in parents:
            target = target[part]
        target[last] = value
        return row

    return edit


async def _keep(key: str, body: dict[str, Any], origin: str) -> str | None:
    return None


UNREADABLE = [
    pytest.param(_set("response", "oops"), "/response", "not an object, got a string",
                 id="response-a-string"),
    pytest.param(_set("response", [1, 2]), "/response", "not an object, got an array",
                 id="response-a-list"),
    pytest.param(_set("response.body.usage.prompt_tokens", "12x"),
                 "/response/body/usage/prompt_tokens", "not a count of tokens, got a string",
                 id="prompt-tokens-a-string"),
    pytest.param(_set("response.body.usage.prompt_tokens", 1.5),
                 "/response/body/usage/prompt_tokens", "got a number (1.5)",
                 id="prompt-tokens-a-float"),
    pytest.param(_set("response.body.usage.completion_tokens", -3),
                 "/response/body/usage/completion_tokens", "got a number (-3)",
                 id="completion-tokens-negative"),
    pytest.param(_set("response.body.usage", [1]), "/response/body/usage",
                 "not an object, got an array", id="usage-a-list"),
    pytest.param(_set("response.status_code", "200"), "/response/status_code",
                 "not an integer, got a string", id="status-a-string"),
    pytest.param(_set("response.body", "ok"), "/response/body",
                 "not an object (a chat completion), got a string", id="body-a-string"),
    pytest.param(_set("response", None), "/response", "missing, and no error says why",
                 id="response-missing"),
    pytest.param(_set("error", [1]), "/error", "not an object, got an array",
                 id="error-a-list"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "pointer", "why"), UNREADABLE)
def test_an_unreadable_line_is_said_and_its_request_given_up(
    edit: Edit, pointer: str, why: str
) -> None:
    rows = [_line("k1"), edit(_line("k2")), _line("k3")]
    data = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
    found = asyncio.run(read_output(data, dict.fromkeys(["k1", "k2", "k3"]), _keep,
                                    "out.jsonl", "out.jsonl"))  # fmt: skip
    assert found.kept == {"k1", "k3"} and found.failed == {}
    [problem] = found.problems
    assert str(problem).startswith(f"out.jsonl:2 (request k2) at {pointer}: ")
    assert why in str(problem)
    assert list(found.unreadable) == ["k2"] and pointer in found.unreadable["k2"]
    assert found.prompt_tokens == 200  # only the lines read count


KEYLESS = [
    pytest.param(b"{not json", "", "not JSON", id="not-json"),
    pytest.param(b"[1, 2]", "", "a batch output line is a JSON object, got an array",
                 id="an-array"),
    pytest.param(b'{"custom_id": 7, "response": null}', "/custom_id",
                 "not a string, got a number (7)", id="custom-id-a-number"),
    pytest.param(b'{"response": {}}', "/custom_id", "missing", id="custom-id-missing"),
    pytest.param(b"\xff\xfe\x00binary", "", "not JSON", id="binary"),
]  # fmt: skip


@pytest.mark.parametrize(("line", "pointer", "why"), KEYLESS)
def test_a_line_that_names_no_request_is_said_and_the_rest_read(
    line: bytes, pointer: str, why: str
) -> None:
    data = json.dumps(_line("k1")).encode() + b"\n" + line + b"\n"
    found = asyncio.run(read_output(data, {"k1": None}, _keep, "out.jsonl", "out.jsonl"))
    assert found.kept == {"k1"} and found.unreadable == {}
    [problem] = found.problems
    assert problem.line == 2 and problem.pointer == pointer and why in problem.why
    assert str(problem).startswith("out.jsonl:2" + (f" at {pointer}" if pointer else "") + ": ")


def test_a_second_line_for_a_request_is_said_and_the_first_kept() -> None:
    second = _line("k1", completion('{"verdict": "incorrect"}'))
    data = b"".join(json.dumps(r).encode() + b"\n" for r in (_line("k1"), second))
    bodies: list[dict[str, Any]] = []

    async def keep(key: str, body: dict[str, Any], origin: str) -> str | None:
        bodies.append(body)
        return None

    found = asyncio.run(read_output(data, {"k1": None}, keep, "out.jsonl", "out.jsonl"))
    assert found.kept == {"k1"} and len(bodies) == 1 and found.unreadable == {}
    assert str(found.problems[0]) == (
        "out.jsonl:2 (request k1) at /custom_id: a second line for this request (the first "
        "is line 1): not read"
    )


# -- through the command line -------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[BatchServer]:  # overrides conftest's: this one serves batches too
    with batch_serving() as running:
        yield running


def judge(
    server: BatchServer, tmp_path: Path, *args: str, cache: str = "cache"
) -> subprocess.CompletedProcess[str]:
    """`judge grade` of the example cases, the judge and its batches on `server`."""
    return judge_on(server, tmp_path, "grade", str(EXAMPLES), *args, cache=cache)


def results(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def offline(server: BatchServer, tmp_path: Path) -> list[bytes]:
    """The lines an offline runner writes for the batch input of the examples."""
    written = tmp_path / "input.jsonl"
    made = judge(server, tmp_path, "--batch-file", str(written))
    assert made.returncode == 0, made.stderr
    return offline_output(server, written.read_bytes()).splitlines()


@pytest.mark.parametrize(
    ("edit", "pointer", "why"),
    [
        pytest.param(_set("response", "oops"), "/response", "not an object, got a string",
                     id="response-a-string"),
        pytest.param(_set("response", ["a"]), "/response", "not an object, got an array",
                     id="response-a-list"),
        pytest.param(_set("response.body.usage.prompt_tokens", "many"),
                     "/response/body/usage/prompt_tokens", "not a count of tokens",
                     id="prompt-tokens-a-string"),
    ],
)  # fmt: skip
def test_judge_grade_batch_results_says_the_line_and_makes_its_case_judge_error(
    server: BatchServer, tmp_path: Path, edit: Edit, pointer: str, why: str
) -> None:
    lines = offline(server, tmp_path)
    lines[2] = json.dumps(edit(json.loads(lines[2]))).encode()
    output_file = tmp_path / "output.jsonl"
    output_file.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out.jsonl"
    graded = judge(server, tmp_path, "-o", str(out), "--batch-results", str(output_file))
    assert graded.returncode in (0, 1), graded.stderr
    assert "Traceback" not in graded.stderr
    said = [x for x in graded.stderr.splitlines() if x.startswith("judge grade: skipped ")]
    assert len(said) == 1 and f"{output_file}:3 (case '" in said[0]
    assert f"at {pointer}: {why}" in said[0]
    assert "1 unreadable (judge_error, not asked again)" in graded.stderr
    assert server.chat_requests == []  # the paid reply is not paid again online
    broken = [r for r in results(out) if r["judge"]["status"] == "judge_error"]
    assert broken and all(pointer in r["judge"]["error"] for r in broken)
    assert all(f"{output_file}:3" in r["judge"]["error"] for r in broken)
    assert len(results(out)) == 9  # every case graded


@pytest.mark.parametrize(
    ("content", "says"),
    [
        pytest.param(b"", "no line in it: an empty file", id="empty"),
        pytest.param(bytes(random.Random(3).randrange(256) for _ in range(4096)),
                     "no line answers a request of these cases", id="binary-garbage"),
        pytest.param(b'[{"custom_id": "x"}]\n', "1 line that cannot be read", id="a-json-array"),
        pytest.param(json.dumps(_line("someone-else")).encode() + b"\n",
                     "1 line for other requests", id="other-requests"),
    ],
)  # fmt: skip
def test_judge_grade_refuses_a_batch_output_file_that_answers_nothing(
    server: BatchServer, tmp_path: Path, content: bytes, says: str
) -> None:
    output_file = tmp_path / "output.jsonl"
    output_file.write_bytes(content)
    out = tmp_path / "out.jsonl"
    graded = judge(server, tmp_path, "-o", str(out), "--batch-results", str(output_file))
    assert graded.returncode == 2, graded.stderr
    assert graded.stderr.startswith(f"judge grade: {output_file}: ") and says in graded.stderr
    assert "Traceback" not in graded.stderr
    assert server.chat_requests == [] and not out.exists()


class CorruptingServer(BatchServer):
    """Batches whose output file has its lines edited by `corrupt` (the first batch only)."""

    def __init__(self) -> None:
        super().__init__()
        self.corrupt: Callable[[list[bytes]], list[bytes]] | None = None
        self.original: dict[str, bytes] = {}

    def _finish(self, batch: dict[str, Any], lines: list[dict[str, Any]]) -> None:
        super()._finish(batch, lines)
        file_id = batch.get("output_file_id")
        if file_id and self.corrupt is not None:
            self.original[file_id] = self.files[file_id]
            self.files[file_id] = b"\n".join(self.corrupt(self.files[file_id].splitlines()))
            self.corrupt = None


@pytest.fixture
def corrupting() -> Iterator[CorruptingServer]:
    running = CorruptingServer().start()
    try:
        yield running
    finally:
        running.stop()


def test_judge_grade_batch_says_an_unreadable_line_and_pays_for_it_once(
    corrupting: CorruptingServer, tmp_path: Path
) -> None:
    def second_response_a_string(lines: list[bytes]) -> list[bytes]:
        lines[1] = json.dumps(_set("response", "oops")(json.loads(lines[1]))).encode()
        return lines

    corrupting.corrupt = second_response_a_string
    out = tmp_path / "out.jsonl"
    run = judge(corrupting, tmp_path, "-o", str(out), "--batch", "--batch-poll", "0.05")
    assert run.returncode in (0, 1), run.stderr
    assert "Traceback" not in run.stderr
    said = [x for x in run.stderr.splitlines() if x.startswith("judge grade: skipped ")]
    assert said == [
        f"judge grade: skipped batch batch_1 file {next(iter(corrupting.original))}:2 (request "
        f"{corrupting.input_lines('batch_1')[1]['custom_id']}) at /response: not an object, "
        "got a string ('oops')"
    ]
    assert corrupting.batch_creations == 1 and corrupting.chat_requests == []
    broken = [r for r in results(out) if r["judge"]["status"] == "judge_error"]
    assert broken and all("at /response" in r["judge"]["error"] for r in broken)


def test_judge_grade_batch_refuses_an_unreadable_output_file_and_reads_it_again_later(
    corrupting: CorruptingServer, tmp_path: Path
) -> None:
    corrupting.corrupt = lambda lines: [b"\x00\xff garbage"] * len(lines)
    out = tmp_path / "out.jsonl"
    run = judge(corrupting, tmp_path, "-o", str(out), "--batch", "--batch-poll", "0.05")
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    file_id = next(iter(corrupting.original))
    assert "batch batch_1: no line of its files answers one of its requests" in run.stderr
    assert f"batch batch_1 file {file_id}: 13 lines that cannot be read (the first: " in run.stderr
    assert corrupting.chat_requests == [] and not out.exists()
    corrupting.files[file_id] = corrupting.original[file_id]  # the download works this time
    corrupting.seen.clear()
    again = judge(corrupting, tmp_path, "-o", str(out), "--batch", "--batch-poll", "0.05")
    assert again.returncode in (0, 1), again.stderr
    assert corrupting.batch_creations == 0 and corrupting.chat_requests == []
    assert not [r for r in results(out) if r["judge"]["status"] == "judge_error"]


# -- fuzz ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [pytest.param(35, id="seed-35")])
def test_fuzzed_batch_output_files_are_read_or_said_never_raised(tmp_path: Path, seed: int) -> None:
    """Random mutations of a valid output file: every line is read, or said; every request
    it answers is kept, unusable or given up, exactly one of them; nothing escapes."""
    rng = random.Random(seed)

    async def fuzz(budget: Budget) -> None:
        async with Judge(model="m", base_url="http://127.0.0.1:9",
                         cache_dir=str(tmp_path / "cache")) as judged:  # fmt: skip
            port = judged.for_batches()
            assert port is not None
            asked, _ = await requests_of(port, load_cases(EXAMPLES))
            # the facade's own methods are the port's
            first = load_cases(EXAMPLES)[0]
            assert (
                [a.key for a in await judged.requests(first)]
                == [a.key for a in await port.of(first)]
                != []
            )
            accept = acceptor(port, asked)
            valid = b"".join(json.dumps(_line(k, answer(a.body).body)).encode() + b"\n"
                             for k, a in asked.items())  # fmt: skip
            while budget.more():
                data = mutated_lines(valid, rng)
                found = await read_output(data, asked, accept, "fuzz.jsonl", "fuzz.jsonl")
                lines = sum(1 for line in data.splitlines() if line.strip())
                keyless = sum(1 for p in found.problems if p.key is None)
                assert lines == keyless + found.others + found.answering, data
                outcomes = [set(found.kept), set(found.failed), set(found.unreadable)]
                seconds = sum(1 for p in found.problems if "a second line" in p.why)
                assert sum(map(len, outcomes)) == found.answering - seconds, data
                assert len(set().union(*outcomes)) == found.answering - seconds, data
                assert all(str(p).startswith(f"fuzz.jsonl:{p.line}") for p in found.problems)

    with Budget(seconds=4.0, peak_bytes=16 * 1024 * 1024).running() as budget:
        asyncio.run(fuzz(budget))
