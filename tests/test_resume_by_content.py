"""Resuming an output by content (issue 50): `grade -o`, `run -o` and `regrade -o` run again
after a case was fixed grade the fixed case again instead of serving its stale result, reuse
only what is unchanged, say so, and start over with `--fresh`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from judge.cli import main
from tests.batch_server import BatchServer
from tests.chat_server import ChatServer
from tests.openrouter_server import OpenRouterServer
from tests.run_helpers import judge_args, lines, run, write_cases
from tests.test_batch import candidate
from tests.test_grade_cli import PARIS, grade, no_call, write

ROME = PARIS | {"expected_calls": [{"name": "get_weather", "arguments": {"city": "Rome"}}]}
"""PARIS with its expected call changed: the same response now fails."""


def by_id(path: Path, key: str = "id") -> dict[str, dict[str, Any]]:
    """The lines of an output by id, none of them held twice."""
    rows = lines(path)
    ids = [row[key] for row in rows]
    assert len(ids) == len(set(ids)), f"an id held twice: {ids}"
    return {row[key]: row for row in rows}


def asked_about(server: ChatServer, since: int, text: str) -> int:
    """How many judge requests since `since` show the case holding `text`."""
    return sum(text in json.dumps(r.body) for r in server.chat_requests[since:])


def drop_hashes(path: Path) -> None:
    """The output as this package wrote it before results carried a case hash."""
    rows = [{k: v for k, v in row.items() if k != "case_hash"} for row in lines(path)]
    write(path, rows)


# --- judge grade -o ------------------------------------------------------------------------


def test_grade_again_after_fixing_a_case_grades_it_again_and_reuses_the_rest(
    server: ChatServer, tmp_path: Path
) -> None:
    # Regression (issue 50): the fixed case's stale verdict was served from the output.
    cases = write(tmp_path / "c.jsonl", [PARIS, no_call(1)])
    out = tmp_path / "r.jsonl"
    first = grade(server, tmp_path, str(cases), "-o", str(out), "--no-cache")
    assert first.exit_code == 0, first.output
    before = by_id(out)
    assert before["paris"]["passed"] is True
    sent = len(server.chat_requests)

    write(cases, [ROME, no_call(1)])  # the reference was wrong: fixed
    again = grade(server, tmp_path, str(cases), "-o", str(out), "--no-cache")
    assert again.exit_code == 0, again.output
    assert "resumed 1 of 2 results (1 changed, graded again)" in again.stderr
    results = by_id(out)
    assert results["paris"]["passed"] is False  # the new verdict, not the stale one
    assert results["n1"] == before["n1"]
    assert asked_about(server, sent, "hello 1") == 0  # the unchanged case was not judged again
    assert asked_about(server, sent, "Paris") > 0


def test_grade_with_other_match_settings_grades_again(server: ChatServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", [PARIS, no_call(1)])
    out = tmp_path / "r.jsonl"
    assert grade(server, tmp_path, str(cases), "-o", str(out), "--no-cache").exit_code == 0
    again = grade(server, tmp_path, str(cases), "-o", str(out), "--no-cache",
                  "--match", "superset")  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "resumed 0 of 2 results (2 changed, graded again)" in again.stderr
    same = grade(server, tmp_path, str(cases), "-o", str(out), "--no-cache",
                 "--match", "superset")  # fmt: skip
    assert "resumed 2 of 2 results (0 changed, graded again)" in same.stderr


def test_grade_fresh_judges_every_case_again(server: ChatServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", [PARIS, no_call(1)])
    out = tmp_path / "r.jsonl"
    assert grade(server, tmp_path, str(cases), "-o", str(out), "--no-cache").exit_code == 0
    sent = len(server.chat_requests)
    again = grade(server, tmp_path, str(cases), "-o", str(out), "--no-cache", "--fresh")
    assert again.exit_code == 0, again.output
    assert "resumed" not in again.stderr
    assert len(server.chat_requests) - sent == sent  # every case asked again
    assert set(by_id(out)) == {"paris", "n1"}


def test_grade_fresh_still_refuses_to_write_over_an_input(
    server: ChatServer, tmp_path: Path
) -> None:
    cases = write(tmp_path / "c.jsonl", [PARIS])
    before = cases.read_bytes()
    done = grade(server, tmp_path, str(cases), "-o", str(cases), "--fresh")
    assert done.exit_code == 2
    assert "is the input" in done.stderr
    assert cases.read_bytes() == before


def test_grade_treats_results_without_a_hash_as_changed(server: ChatServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", [PARIS, no_call(1)])
    out = tmp_path / "r.jsonl"
    assert grade(server, tmp_path, str(cases), "-o", str(out), "--no-cache").exit_code == 0
    drop_hashes(out)  # a results file written before this change
    write(cases, [ROME, no_call(1)])
    sent = len(server.chat_requests)
    again = grade(server, tmp_path, str(cases), "-o", str(out), "--no-cache")
    assert again.exit_code == 0, again.output
    assert "resumed 0 of 2 results (2 changed, graded again)" in again.stderr
    assert asked_about(server, sent, "hello 1") > 0  # never trusted blindly
    results = by_id(out)
    assert results["paris"]["passed"] is False
    assert all(row.get("case_hash") for row in results.values())


def test_grade_keeps_the_later_of_two_lines_of_one_case(server: ChatServer, tmp_path: Path) -> None:
    # What a run killed after grading a changed case again leaves: its old and its new line.
    cases = write(tmp_path / "c.jsonl", [PARIS, no_call(1)])
    out = tmp_path / "r.jsonl"
    assert grade(server, tmp_path, str(cases), "-o", str(out)).exit_code == 0
    write(cases, [ROME, no_call(1)])
    newer = tmp_path / "newer.jsonl"
    assert grade(server, tmp_path, str(cases), "-o", str(newer)).exit_code == 0
    rows = lines(out)
    write(out, [*rows, by_id(newer)["paris"]])
    again = grade(server, tmp_path, str(cases), "-o", str(out))
    assert again.exit_code == 0, again.output
    assert "resumed 2 of 2 results (0 changed, graded again)" in again.stderr
    assert by_id(out)["paris"]["passed"] is False


# --- judge run -o --------------------------------------------------------------------------


def asked_cities(fake: OpenRouterServer, since: int) -> list[str]:
    return sorted(body["messages"][0]["content"].split()[-1] for body in fake.chats[since:])


def test_run_again_after_changing_a_case_asks_it_again_and_reuses_the_rest(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m", "-o", str(out)).exit_code == 0
    assert by_id(out, "case_id")["oslo"]["passed"] is True
    asked = len(fake.chats)

    write_cases(cases, ("Paris", "Oslo"), Oslo="Bergen")  # the case changed
    again = run(fake, cases, "--models", "good/m", "-o", str(out))
    assert again.exit_code == 0, again.stderr
    assert "resumed 1 of 2 records (1 changed, graded again)" in again.stderr
    assert asked_cities(fake, asked) == ["Oslo"]  # the unchanged case was not asked again
    records = by_id(out, "case_id")
    assert records["oslo"]["passed"] is False  # its new record, not the stale one
    assert records["paris"]["passed"] is True


@pytest.mark.parametrize(
    ("flag", "says"),
    [
        pytest.param("--fresh", None, id="fresh-asks-everything-again"),
        pytest.param(None, "resumed 0 of 2 records (2 changed", id="records-without-a-hash"),
    ],
)
def test_run_asks_every_case_again(
    fake: OpenRouterServer, tmp_path: Path, flag: str | None, says: str | None
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    out = tmp_path / "runs.jsonl"
    assert run(fake, cases, "--models", "good/m", "-o", str(out)).exit_code == 0
    if flag is None:
        drop_hashes(out)  # a runs file written before this change
    asked = len(fake.chats)
    again = run(fake, cases, "--models", "good/m", "-o", str(out), *([flag] if flag else []))
    assert again.exit_code == 0, again.stderr
    assert asked_cities(fake, asked) == ["Oslo", "Paris"]
    assert (says in again.stderr) if says else ("resumed" not in again.stderr)
    assert set(by_id(out, "case_id")) == {"paris", "oslo"}


def test_run_fresh_still_refuses_to_write_over_the_cases(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris",))
    before = cases.read_bytes()
    done = run(fake, cases, "--models", "good/m", "-o", str(cases), "--fresh")
    assert done.exit_code == 2
    assert "is the input" in done.stderr
    assert cases.read_bytes() == before
    assert fake.chats == []


def test_run_batch_asks_a_changed_case_again_not_the_old_batch(tmp_path: Path) -> None:
    # The batches' state keys each request: a changed case's old reply must not answer it.
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    out = tmp_path / "runs.jsonl"
    server = BatchServer(candidate).start()
    try:
        args = ["run", str(cases), "--models", "a/one", "--base-url", server.url,
                "--no-preflight", "--reasoning-effort", "off", "-o", str(out), "--batch",
                "--batch-poll", "0.05"]  # fmt: skip
        first = CliRunner().invoke(main, args)
        assert first.exit_code == 0, first.output
        assert by_id(out, "case_id")["oslo"]["passed"] is False  # it answers Paris
        write_cases(cases, ("Paris", "Oslo"), Oslo="Paris")
        again = CliRunner().invoke(main, args)
        assert again.exit_code == 0, again.output
        assert server.batch_creations == 2
        second = server.input_lines(list(server.batches)[-1])
        assert [line["body"]["messages"][0]["content"] for line in second] == ["weather in Oslo"]
    finally:
        server.stop()
    assert "resumed 1 of 2 records (1 changed, graded again)" in again.stderr
    assert by_id(out, "case_id")["oslo"]["passed"] is True


# --- judge regrade -o ----------------------------------------------------------------------


def regrade(runs: Path, cases: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["regrade", str(runs), str(cases), *args])


@pytest.fixture
def regraded(fake: OpenRouterServer, tmp_path: Path) -> tuple[Path, Path, Path]:
    """A runs file of two cases, regraded once into an output of its own."""
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    runs, out = tmp_path / "runs.jsonl", tmp_path / "regraded.jsonl"
    assert run(fake, cases, "--models", "good/m", "-o", str(runs)).exit_code == 0
    done = regrade(runs, cases, "-o", str(out))
    assert done.exit_code == 0, done.stderr
    assert "resumed" not in done.stderr  # a new output: nothing to resume
    return cases, runs, out


def test_regrade_again_after_fixing_a_case_grades_it_again_and_reuses_the_rest(
    regraded: tuple[Path, Path, Path],
) -> None:
    cases, runs, out = regraded
    before = by_id(out, "case_id")
    write_cases(cases, ("Paris", "Oslo"), Oslo="Bergen")
    again = regrade(runs, cases, "-o", str(out))
    assert again.exit_code == 0, again.stderr
    assert "resumed 1 of 2 records (1 changed, graded again)" in again.stderr
    records = by_id(out, "case_id")
    assert records["oslo"]["passed"] is False and before["oslo"]["passed"] is True
    assert records["paris"] == before["paris"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        pytest.param(["--fresh"], None, id="fresh"),
        pytest.param(
            ["--match", "superset"], "resumed 0 of 2 records (0 changed", id="other-match"
        ),
    ],
)
def test_regrade_grades_every_record_again(
    regraded: tuple[Path, Path, Path], args: list[str], says: str | None
) -> None:
    cases, runs, out = regraded
    again = regrade(runs, cases, "-o", str(out), *args)
    assert again.exit_code == 0, again.stderr
    assert (says in again.stderr) if says else ("resumed" not in again.stderr)
    assert set(by_id(out, "case_id")) == {"paris", "oslo"}


def test_regrade_treats_records_without_a_hash_as_changed(
    regraded: tuple[Path, Path, Path],
) -> None:
    cases, runs, out = regraded
    drop_hashes(out)
    again = regrade(runs, cases, "-o", str(out))
    assert again.exit_code == 0, again.stderr
    assert "resumed 0 of 2 records (2 changed, graded again)" in again.stderr
    assert all(row.get("case_hash") for row in by_id(out, "case_id").values())


def test_regrade_grades_again_a_response_asked_again_since(
    regraded: tuple[Path, Path, Path],
) -> None:
    # The runs file's Oslo was answered again after the output was written: the output's
    # record is of another response, stale though its case is unchanged.
    cases, runs, out = regraded
    records = lines(runs)
    for record in records:
        if record["case_id"] == "oslo":
            call = record["response"]["choices"][0]["message"]["tool_calls"][0]
            call["function"]["arguments"] = json.dumps({"city": "Bergen"})
    write(runs, records)
    again = regrade(runs, cases, "-o", str(out))
    assert again.exit_code == 0, again.stderr
    assert "resumed 1 of 2 records (0 changed, graded again)" in again.stderr
    oslo = by_id(out, "case_id")["oslo"]
    assert oslo["response"] == by_id(runs, "case_id")["oslo"]["response"]
    assert oslo["passed"] is False


def test_regrade_with_a_judge_reuses_only_what_it_judged(
    regraded: tuple[Path, Path, Path],
    server: ChatServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    cases, runs, out = regraded
    judged = regrade(runs, cases, "-o", str(out), *judge_args(server))
    assert judged.exit_code == 0, judged.stderr
    assert "resumed 0 of 2 records (0 changed" in judged.stderr  # checked only: judged now
    assert all(r["judge"]["status"] == "ok" for r in by_id(out, "case_id").values())
    again = regrade(runs, cases, "-o", str(out), *judge_args(server))
    assert "resumed 2 of 2 records (0 changed, graded again)" in again.stderr
