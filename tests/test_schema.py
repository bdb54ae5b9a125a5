"""`judge schema`: the published schemas accept what the CLI reads and writes, and reject what
the loader rejects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from judge import load_cases
from judge.cli import main
from tests.chat_server import ChatServer
from tests.helpers import call, case

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "cases.jsonl"
SAMPLE = ROOT / "calibration" / "sample.jsonl"


def schema(name: str) -> Draft202012Validator:
    result = CliRunner().invoke(main, ["schema", name])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    Draft202012Validator.check_schema(document)
    return Draft202012Validator(document)


def problems(validator: Draft202012Validator, instance: Any) -> list[str]:
    return [f"{e.json_path}: {e.message[:200]}" for e in validator.iter_errors(instance)]


def test_every_example_case_fits_the_case_schema() -> None:
    validator = schema("case")
    for number, line in enumerate(EXAMPLES.read_text().splitlines(), start=1):
        assert problems(validator, json.loads(line)) == [], f"line {number}"


def test_every_calibration_sample_case_fits_the_case_schema() -> None:
    validator = schema("case")
    for number, line in enumerate(SAMPLE.read_text().splitlines(), start=1):
        assert problems(validator, json.loads(line)) == [], f"line {number}"


TOOL = {"type": "object", "properties": {"city": {"type": "string"}}}
OPENAI_CALL = call("get_weather", {"city": "Paris"})


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param(
            {"response": {"content": None, "tool_calls": [OPENAI_CALL]}}, id="openai-message"
        ),
        pytest.param(
            {"response": {"choices": [{"message": {"tool_calls": [OPENAI_CALL]}}]}}, id="completion"
        ),
        pytest.param(
            {"response": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}, id="plain-list"
        ),
        pytest.param(
            {"response": [{"name": "get_weather", "arguments": "{'city'"}]}, id="plain-raw-text"
        ),
        pytest.param({"response": "It is sunny."}, id="text"),
        pytest.param({"response": None}, id="not-run"),
        pytest.param(
            {
                "response": {
                    "output": [
                        {
                            "type": "function_call",
                            "name": "get_weather",
                            "arguments": "{}",
                            "call_id": "c",
                        },
                        {"type": "message", "content": [{"type": "output_text", "text": "ok"}]},
                    ]
                }
            },
            id="responses-api",
        ),
        pytest.param(
            {
                "response": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "on it"},
                        {
                            "type": "tool_use",
                            "id": "t",
                            "name": "get_weather",
                            "input": {"city": "Paris"},
                        },
                        {"type": "thinking", "thinking": "hm"},
                    ],
                }
            },
            id="anthropic-message",
        ),
        pytest.param(
            {"response": [{"type": "tool_use", "name": "get_weather", "input": {}}]},
            id="anthropic-blocks",
        ),
        pytest.param(
            {"tools": [{"name": "get_weather", "input_schema": TOOL}]}, id="anthropic-tool"
        ),
        pytest.param(
            {"tools": [{"name": "get_weather", "parameters": TOOL, "description": "d"}]},
            id="flat-tool",
        ),
        pytest.param({"tools": None}, id="null-tools"),
        pytest.param({"expected_calls": [OPENAI_CALL]}, id="expected-as-openai-call"),
        pytest.param(
            {"expected_calls": [{"name": "get_weather", "arguments": '{"city": "Paris"}'}]},
            id="expected-arguments-text",
        ),
        pytest.param(
            {
                "expected_calls": [
                    {
                        "name": "get_weather",
                        "arguments": {"city": {"$any": ["Paris", "paris"], "$optional": True}},
                    }
                ]
            },
            id="expected-matchers",
        ),
        pytest.param(
            {"expected_calls": [{"function": "str", "name": "get_weather"}]},
            id="expected-function-not-an-object-is-ignored",
        ),
        pytest.param(
            {"expected_calls": [{"name": "get_weather", "arguments": ' \n{"city": "Paris"}'}]},
            id="expected-arguments-text-with-whitespace",
        ),
        pytest.param({"response": {"type": "message", "output": []}}, id="typed-message-output"),
        pytest.param(
            {"tools": [{"function": {"name": "get_weather", "parameters": None}}]},
            id="parameters-null",
        ),
        pytest.param(
            {"tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}]},
            id="mcp-tool",
        ),
        pytest.param(
            {"tools": {"tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}]}},
            id="mcp-tools-list-result",
        ),
        pytest.param({"id": 7}, id="numeric-id"),
        pytest.param({"id": None, "name": "seed-style"}, id="name-for-id"),
        pytest.param({"id": None}, id="no-id"),
    ],
)
def test_every_shape_the_loader_accepts_fits_the_schema(fields: dict[str, Any]) -> None:
    data = {**case([OPENAI_CALL]), **fields}
    if data.get("id") is None and "name" not in fields:
        data.pop("id")
    loaded = load_cases([data])
    assert loaded.errors == []
    assert problems(schema("case"), data) == []


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"response": 5}, id="response-number"),
        pytest.param({"response": {"choices": []}}, id="no-choices"),
        pytest.param({"response": [{"type": "image", "url": "x"}]}, id="unknown-part"),
        pytest.param({"response": [{"function": {"arguments": "{}"}}]}, id="call-without-name"),
        pytest.param({"response": {"content": 3}}, id="content-number"),
        pytest.param(
            {"tools": [{"type": "function", "function": {"parameters": TOOL}}]},
            id="tool-without-name",
        ),
        pytest.param(
            {"tools": [{"name": "t", "parameters": "not a schema"}]}, id="parameters-text"
        ),
        pytest.param({"tools": {"name": "t"}}, id="tools-object"),
        pytest.param({"expected_calls": [{"arguments": {}}]}, id="expected-without-name"),
        pytest.param({"expected_calls": {"name": "t"}}, id="expected-object"),
        pytest.param(
            {"expected_calls": [{"name": "get_weather", "arguments": "[1]"}]},
            id="expected-arguments-text-not-an-object",
        ),
        pytest.param(
            {"expected_calls": [{"name": "get_weather", "arguments": "null"}]},
            id="expected-arguments-text-null",
        ),
        pytest.param(
            {"expected_calls": [{"name": "get_weather", "arguments": {"city": {"$any": "x"}}}]},
            id="matcher-any-not-a-list",
        ),
        pytest.param(
            {"expected_calls": [{"name": "get_weather", "arguments": {"city": {"$optional": 1}}}]},
            id="matcher-optional-not-a-boolean",
        ),
        pytest.param(
            {
                "expected_calls": [
                    {"name": "get_weather", "arguments": {"city": {"$any": ["x"], "case": 0}}}
                ]
            },
            id="matcher-unknown-key",
        ),
        pytest.param({"tools": [{"name": "t", "function": "x"}]}, id="tool-function-text"),
        pytest.param({"expected_behavior": "maybe"}, id="unknown-behavior"),
        pytest.param({"labels": {"selection": "fine"}}, id="unknown-label"),
        pytest.param({"id": True}, id="boolean-id"),
    ],
)
def test_shapes_the_loader_rejects_the_schema_rejects(fields: dict[str, Any]) -> None:
    data = {**case([OPENAI_CALL]), **fields}
    assert load_cases([data]).errors != []
    assert problems(schema("case"), data) != []


@pytest.mark.parametrize(
    ("value", "read"),
    [
        pytest.param({"$number": 3.5, "abs": 0.01, "rel": 0.001}, True, id="number"),
        pytest.param({"$int": 3, "$optional": True}, True, id="int-optional"),
        pytest.param(
            {"$string": "P", "case": False, "space": "ignore", "punct": "ignore"}, True, id="string"
        ),
        pytest.param({"$string": "P", "normalise": "bfcl"}, True, id="string-bfcl"),
        pytest.param({"$regex": "^ord_[0-9]+$"}, True, id="regex"),
        pytest.param({"$date": "2024-05-01", "order": "dmy"}, True, id="date"),
        pytest.param({"$unordered": [{"$regex": "^a"}, {"a": {"$int": 1}}]}, True, id="unordered"),
        pytest.param(
            {"$object": {"a": {"$any": [1, {"$number": 2, "rel": 0.1}]}}, "extra": "allow"},
            True,
            id="object-nesting-any",
        ),
        pytest.param({"$judge": "the city the user named"}, True, id="judge"),
        pytest.param({"$optional": True}, True, id="optional-alone"),
        pytest.param({"$absent": True}, True, id="absent"),
        pytest.param({"$any": [], "$optional": True}, True, id="left-out-the-old-way"),
        pytest.param([{"a": {"$date": "2024-05-01"}}], True, id="matcher-deep-in-a-literal"),
        pytest.param({"$any": [{"a": {"$optional": True}}]}, True, id="flag-in-a-literal-option"),
        pytest.param({"$anyy": ["x"]}, False, id="unknown-key"),
        pytest.param([{"a": {"$numbr": 1}}], False, id="unknown-key-deep"),
        pytest.param({"$int": 3, "abs": 1}, False, id="option-of-another-head"),
        pytest.param({"$int": 3, "$number": 3}, False, id="two-heads"),
        pytest.param({"$string": "a", "space": "yes"}, False, id="option-value"),
        pytest.param({"$number": 1, "abs": -1}, False, id="negative-tolerance"),
        pytest.param({"$date": "1 May 2024"}, False, id="date-not-iso"),
        pytest.param({"$absent": True, "$optional": True}, False, id="absent-not-alone"),
        pytest.param({"$any": [{"$judge": "x"}]}, False, id="judge-inside-any"),
        pytest.param({"$unordered": [{"$optional": True}]}, False, id="optional-inside-unordered"),
        pytest.param({"$judge": " "}, False, id="judge-blank"),
    ],
)
def test_matchers_fit_the_schema_as_the_reader_reads_them(value: Any, read: bool) -> None:
    data = case([OPENAI_CALL], [{"name": "get_weather", "arguments": {"city": value}}])
    assert (load_cases([data]).errors == []) is read
    assert (problems(schema("case"), data) == []) is read


def test_the_schema_knows_every_matcher_the_reader_knows() -> None:
    from judge.cases._matcher_form import MATCHER_KEYS, OPTIONS
    from judge.service._schema import json_schema

    matcher = json_schema("case")["$defs"]["Matcher"]
    options = {key for keys in OPTIONS.values() for key in keys}
    assert set(matcher["properties"]) == MATCHER_KEYS | options


def test_results_of_judge_check_fit_the_result_schema(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(EXAMPLES.read_text() + "{broken\n" + '{"id": "x", "tools": 3}\n')
    out = tmp_path / "results.jsonl"
    result = CliRunner().invoke(main, ["check", str(cases), "-o", str(out)])
    assert result.exit_code == 0, result.output
    validator = schema("result")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 11
    for row in rows:
        assert problems(validator, row) == [], row["id"]
    assert problems(validator, {**rows[0], "passed": "yes"}) != []
    assert problems(validator, {k: v for k, v in rows[0].items() if k != "failures"}) != []


def test_results_of_judge_grade_fit_the_result_schema(server: ChatServer, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    result = CliRunner().invoke(
        main,
        [
            "grade",
            str(EXAMPLES),
            "-o",
            str(out),
            "--base-url",
            server.url,
            "--model",
            "m",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--samples",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    validator = schema("result")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all("judge" in row for row in rows)
    for row in rows:
        assert problems(validator, row) == [], row["id"]
    broken = {**rows[0], "judge": {**rows[0]["judge"], "status": "fine"}}
    assert problems(validator, broken) != []


def test_the_record_of_judge_calibrate_fits_the_calibration_schema(
    server: ChatServer, tmp_path: Path
) -> None:
    sample = tmp_path / "sample.jsonl"
    sample.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:24]))
    record = tmp_path / "calibration.json"
    result = CliRunner().invoke(
        main,
        [
            "calibrate",
            str(sample),
            "-o",
            str(record),
            "--base-url",
            server.url,
            "--model",
            "m",
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
    )
    assert result.exit_code in (0, 1), result.output
    written = json.loads(record.read_text())
    validator = schema("calibration")
    assert problems(validator, written) == []
    assert problems(validator, {**written, "threshold": "high"}) != []


def test_an_unknown_schema_name_is_refused() -> None:
    result = CliRunner().invoke(main, ["schema", "verdict"])
    assert result.exit_code == 2
    assert "case" in result.output and "calibration" in result.output


def test_agent_run_records_fit_the_run_schema(tmp_path: Path) -> None:
    from tests.agent_server import agent_server
    from tests.test_agent_runs import ENV, REFUND, STATUS, run, write

    cases = write(tmp_path / "c.jsonl", REFUND, STATUS)
    out = tmp_path / "runs.jsonl"
    with agent_server() as shop:
        args = ("--models", "agent/good,agent/loop", "--env", ENV, "--max-steps", "3")
        assert run(shop, cases, *args, "-o", str(out)).exit_code == 0
    validator = schema("run")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["stop"] for r in rows} == {"answer", "step_limit"}
    for row in rows:
        assert problems(validator, row) == [], row["case_id"]
    assert problems(validator, {**rows[0], "stop": "bored"}) != []
    from judge.service._schema import json_schema

    properties = json_schema("run")["properties"]
    assert {"transcript", "final_state", "call_scores", "tool_assertions"} <= set(properties)
