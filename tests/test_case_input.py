"""Case files under bad input, a seeded fuzz of the JSON Lines reader as `judge check` and
`judge serve` read it: bytes flipped or cut, lines dropped, doubled or garbage, values of
every JSON kind (and what JSON cannot hold) at random pointers. No traceback, no 500, memory
under a bound, and every line that holds something is a result: graded, or `InvalidCase`
naming its line."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from judge._errors import CaseError
from judge.cases._case import Case
from judge.cases._loading import iter_stream
from judge.cli import main
from judge.service._app import create_app
from tests.fuzz import Budget, mutated_lines

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "cases.jsonl"


def _lines(data: bytes) -> list[int]:
    """The numbers of the lines that hold something (as `splitlines` on a file reads them)."""
    return [n for n, line in enumerate(io.BytesIO(data), start=1) if line.strip()]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fuzzed_case_lines_are_each_a_case_or_an_error(seed: int) -> None:
    rng = random.Random(seed)
    valid = EXAMPLES.read_bytes()
    with Budget(seconds=3.0, peak_bytes=32 << 20).running() as budget:
        while budget.more():
            data = mutated_lines(valid, rng)
            items = list(iter_stream(io.BytesIO(data), "f.jsonl", warn=lambda message: None))
            assert len(items) == len(_lines(data))
            for number, item in zip(_lines(data), items, strict=True):
                assert isinstance(item, Case | CaseError)
                if isinstance(item, CaseError):
                    assert f"f.jsonl:{number}" in str(item), item


def test_fuzzed_case_files_through_judge_check(tmp_path: Path) -> None:
    """The command's own path (the lean reader, the results written): one result per line
    that holds something, exit 0 or 1, never a traceback; or, where the mutation made the
    file's start another encoding (random bytes with no UTF-8 in them) or a JSON document that
    cannot be read, the file refused once, naming it, exit 2."""
    rng = random.Random(4)
    valid = EXAMPLES.read_bytes()
    path, out = tmp_path / "cases.jsonl", tmp_path / "results.jsonl"
    with Budget(seconds=4.0, peak_bytes=64 << 20).running() as budget:
        while budget.more():
            data = mutated_lines(valid, rng)
            path.write_bytes(data)
            done = CliRunner().invoke(main, ["check", str(path), "-o", str(out), "--jobs", "1"])
            if not _lines(data):
                assert done.exit_code == 2 and "no case in" in done.stderr, done.output
                continue
            if done.exit_code == 2:
                assert f"judge check: {path} is " in done.stderr, done.output
                continue
            assert done.exit_code in (0, 1), (done.output, data)
            results = [json.loads(line) for line in out.read_bytes().splitlines()]
            assert len(results) == len(_lines(data))


def test_fuzzed_ndjson_bodies_are_never_a_500() -> None:
    rng = random.Random(5)
    valid = EXAMPLES.read_bytes()
    headers = {"content-type": "application/x-ndjson"}
    app = create_app(token="")
    with (
        TestClient(app, "http://127.0.0.1", raise_server_exceptions=False) as client,
        Budget(seconds=3.0, peak_bytes=64 << 20).running() as budget,
    ):
        while budget.more():
            data = mutated_lines(valid, rng)
            reply = client.post("/v1/check", content=data, headers=headers)
            assert reply.status_code in (200, 400, 422), reply.text
            if reply.status_code == 200:
                assert len(reply.text.splitlines()) == len(_lines(data))
