"""A check never passes what it cannot read: each silent pass of the strictness issue, with the
input that showed it (MCP tools, misspelt keys, unknown fields, dishonest gates, structural
failures without a reference, a text reply where the user must be asked, duplicate ids)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge import UnknownFieldWarning, check, check_case, load_cases, summarize
from judge.cli import main
from tests.helpers import call

UNIT = {"type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}}}
MCP_TOOL = {"name": "get_weather", "description": "The weather", "inputSchema": UNIT}
KELVIN = {"content": None, "tool_calls": [call("get_weather", {"unit": "kelvin"})]}


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def run(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize(
    "tools",
    [
        pytest.param([MCP_TOOL], id="mcp-tool"),
        pytest.param({"tools": [MCP_TOOL], "nextCursor": None}, id="tools-list-result"),
        pytest.param([{**MCP_TOOL, "title": "Weather", "annotations": {}}], id="mcp-extras"),
        pytest.param(
            [{"type": "function", "function": {"name": "get_weather", "parameters": UNIT}}],
            id="openai-form-for-comparison",
        ),  # fmt: skip
    ],
)
def test_an_mcp_tool_keeps_its_schema(tools: Any) -> None:
    result = check_case({"id": "k", "tools": tools, "response": KELVIN})
    assert result.schema_valid is False
    assert [(f.kind.value, f.path) for f in result.failures] == [("SchemaMismatch", "/unit")]
    assert result.passed is False  # broken against its schema: fails without a reference


@pytest.mark.parametrize(
    "tool, pointer, hint",
    [
        pytest.param({"type": "function", "function": {"name": "get_weather", "paramters": UNIT}},
                     "/tools/0/function/paramters", "'parameters'", id="openai-paramters"),
        pytest.param({"name": "get_weather", "paramters": UNIT}, "/tools/0/paramters",
                     "'parameters'", id="responses-paramters"),
        pytest.param({"name": "get_weather", "title": "W", "input_schema": UNIT},
                     "/tools/0/input_schema", "'inputSchema'", id="input_schema-in-mcp-form"),
        pytest.param({"name": "get_weather", "inputschema": UNIT}, "/tools/0/inputschema",
                     "'inputSchema'", id="mcp-letter-case"),
        pytest.param({"name": "get_weather", "title": "W"}, "/tools/0", "inputSchema",
                     id="mcp-without-schema"),
    ],
)  # fmt: skip
def test_a_tool_whose_schema_cannot_be_found_makes_the_case_invalid(
    tool: dict[str, Any], pointer: str, hint: str
) -> None:
    result = check_case({"id": "k", "tools": [tool], "response": KELVIN})
    (failure,) = result.failures
    assert (failure.kind.value, failure.path) == ("InvalidCase", pointer)
    assert hint in failure.message
    assert result.passed is None and result.schema_valid is None


def test_a_function_without_parameters_takes_no_arguments() -> None:
    tool = {"type": "function", "function": {"name": "ping"}}
    made = check_case(
        {"id": "p", "tools": [tool], "response": [{"name": "ping", "arguments": {"x": 1}}]}
    )
    assert made.schema_valid is False and made.failures[0].kind.value == "SchemaMismatch"
    none = check_case({"id": "p", "tools": [tool], "response": [{"name": "ping", "arguments": {}}]})
    assert none.schema_valid is True


TYPO_LINES = [
    {"id": "typo1", "messages": [{"role": "user", "content": "hi"}], "response": {"content": "hi"}},
    {"id": "typo2", "mesages": [{"role": "user", "content": "hi"}], "response": {"content": "hi"}},
    {"id": "typo3", "expected_call": [{"name": "x"}], "response": {"content": "hi"}},
    {
        "id": "typo4",
        "expected_calls": [{"name": "x", "argument": {}}],
        "response": {"content": "hi"},
        "labels": {"selecton": "correct"},
    },
]


def test_unknown_fields_are_warned_about_with_the_nearest_known_key(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.jsonl", TYPO_LINES)
    result = run("check", str(path), "-o", str(tmp_path / "r.jsonl"), "--format", "json")
    assert result.exit_code == 0, result.output
    said = result.stderr
    assert f"{path}:2 case 'typo2': unknown field /mesages (did you mean /messages?)" in said
    assert (
        f"{path}:3 case 'typo3': unknown field /expected_call (did you mean /expected_calls?)"
        in said
    )
    assert (
        "case 'typo4': unknown field /expected_calls/0/argument"
        " (did you mean /expected_calls/0/arguments?)" in said
    )
    assert "case 'typo4': unknown field /labels/selecton (did you mean /labels/selection?)" in said
    assert "typo1" not in said
    assert json.loads(result.stdout)["unknown_fields"] == 3  # cases, not keys


def test_strict_makes_an_unknown_field_an_invalid_case(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.jsonl", TYPO_LINES[:2])
    out = tmp_path / "r.jsonl"
    result = run("check", str(path), "-o", str(out), "--strict", "--format", "json")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["failures"] == []
    assert [(f["kind"], f["path"]) for f in lines[1]["failures"]] == [("InvalidCase", "/mesages")]
    assert "did you mean /messages?" in lines[1]["failures"][0]["message"]
    assert json.loads(result.stdout)["invalid_cases"] == 1


def test_the_workers_warn_and_refuse_as_one_process_does(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.jsonl", TYPO_LINES * 3)
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"r{jobs}.jsonl"
        result = run("check", str(path), "-o", str(out), "--strict", "-j", jobs)
        outs.append((out.read_bytes(), result.stderr.count("unknown field")))
    assert outs[0] == outs[1]
    assert outs[0][1] == 9  # typo2, typo3 and typo4 each refused (first key), three times


def test_load_cases_warns_in_python() -> None:
    with pytest.warns(
        UnknownFieldWarning, match=r"unknown field /mesages \(did you mean /messages\?\)"
    ):
        loaded = load_cases([TYPO_LINES[1]])
    assert [c.id for c in loaded] == ["typo2"]
    strict = load_cases([TYPO_LINES[1]], strict=True)
    assert not strict and "/mesages" in str(strict.errors[0])


FOUR_LINES: list[Any] = [
    {
        "id": "good",
        "tools": [MCP_TOOL],
        "response": [{"name": "get_weather", "arguments": {"unit": "celsius"}}],
        "expected_calls": [{"name": "get_weather", "arguments": {"unit": "celsius"}}],
    },
    "this line is not JSON",
    {
        "id": "no-reference",
        "tools": [MCP_TOOL],
        "response": [{"name": "get_weather", "arguments": {}}],
    },
    {"id": "not-run", "tools": [MCP_TOOL]},
]


@pytest.mark.parametrize(
    "flags, rate, code",
    [
        pytest.param((), 0.5, 1, id="an-invalid-line-counts-as-failed"),
        pytest.param(("--strict",), 0.25, 1, id="strict-counts-not-gradable-too"),
    ],
)
def test_the_gate_counts_what_it_could_not_grade(
    tmp_path: Path, flags: tuple[str, ...], rate: float, code: int
) -> None:
    path = write(tmp_path / "cases.jsonl", FOUR_LINES)
    result = run("check", str(path), "--fail-under", "0.95", "--format", "json", "-o",
                 str(tmp_path / "r.jsonl"), *flags)  # fmt: skip
    assert result.exit_code == code
    summary = json.loads(result.stdout)
    assert summary["pass_rate"] == 0.5  # the summary's rate: unreadable lines count as failed
    assert f"pass rate {rate:.1%} is under --fail-under 95.0%" in result.stderr
    assert "2 not gradable" in result.stderr and "1 unreadable" in result.stderr


def test_the_json_summary_carries_every_count_zeros_included(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.jsonl", FOUR_LINES[:1])
    result = run("check", str(path), "--format", "json", "-o", str(tmp_path / "r.jsonl"))
    summary = json.loads(result.stdout)
    for key in (
        "failed",
        "not_gradable",
        "invalid_cases",
        "needs_judge",
        "unknown_fields",
        "duplicate_ids",
        "injection",
    ):
        assert summary[key] == 0
    assert (
        summary["failure_kinds"]["InvalidJson"] == 0 and summary["failure_kinds"]["EmptyReply"] == 0
    )
    assert summary["checks"]["tool_assertions"] == {"true": 0, "false": 0, "null": 1}


@pytest.mark.parametrize(
    "arguments, name, kind",
    [
        pytest.param('{"unit": "celsius"', "get_weather", "InvalidJson", id="invalid-json"),
        pytest.param('{"unit": "celsius"}', "get_wether", "UnknownName", id="unknown-tool"),
        pytest.param('{"unit": "kelvin"}', "get_weather", "SchemaMismatch", id="against-schema"),
    ],
)
def test_imported_traces_without_a_reference_gate_on_structure(
    arguments: str, name: str, kind: str
) -> None:
    # what `judge import` makes of production traces: no expected_calls
    reply = {
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}
        ]
    }
    for form in (
        [MCP_TOOL],
        [{"type": "function", "function": {"name": "get_weather", "parameters": UNIT}}],
    ):
        result = check_case({"id": "trace-1", "tools": form, "response": reply})
        assert result.passed is False and result.failures[0].kind.value == kind


ASK = {
    "id": "ask",
    "messages": [{"role": "user", "content": "Book me a table"}],
    "tools": [{"name": "book", "inputSchema": {"type": "object"}}],
    "expected_behavior": "ask",
}


@pytest.mark.parametrize(
    "response, expected_calls, passed, needs_judge, kinds",
    [
        pytest.param({"content": "Done! I booked it."}, None, None, True, [], id="claims-done"),
        pytest.param({"content": "For how many people?"}, [], None, True, [], id="asks"),
        pytest.param({"content": "  "}, None, False, False, ["EmptyReply"], id="says-nothing"),
        pytest.param({"content": None, "refusal": "I can't"}, None, None, True, [], id="refuses"),
        pytest.param(
            [{"name": "book", "arguments": {}}], None, False, False, ["UnexpectedCall"], id="calls"
        ),
    ],
)
def test_a_text_reply_where_the_user_must_be_asked_waits_for_the_judge(
    response: Any, expected_calls: Any, passed: bool | None, needs_judge: bool, kinds: list[str]
) -> None:
    data = {**ASK, "response": response}
    if expected_calls is not None:
        data["expected_calls"] = expected_calls
    for behavior in ("ask", "no_call"):
        result = check_case({**data, "expected_behavior": behavior})
        # a no_call reply with text passes by code; whether an ask reply asks is the judge's
        text_passes = behavior == "no_call" and needs_judge
        want = (True, False) if text_passes else (passed, needs_judge)
        assert (result.passed, result.needs_judge) == want
        assert [f.kind.value for f in result.failures] == kinds


def test_the_summary_counts_the_cases_that_need_the_judge(tmp_path: Path) -> None:
    rows = [
        {**ASK, "response": {"content": "Done! I booked it."}},
        {**ASK, "id": "b", "response": {"content": ""}},
    ]
    path = write(tmp_path / "cases.jsonl", rows)
    out = tmp_path / "r.jsonl"
    result = run("check", str(path), "--format", "json", "-o", str(out))
    summary = json.loads(result.stdout)
    assert (summary["needs_judge"], summary["passed"], summary["failed"]) == (1, 0, 1)
    assert json.loads(out.read_text().splitlines()[0])["needs_judge"] is True
    assert summarize(check(rows)).to_dict() == summary
    assert summarize(json.loads(line) for line in out.read_text().splitlines()).to_dict() == summary


def test_duplicate_ids_are_warned_about(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.jsonl", [FOUR_LINES[0], FOUR_LINES[2], FOUR_LINES[0]])
    other = write(tmp_path / "more.jsonl", [FOUR_LINES[2]])
    result = run(
        "check", str(path), str(other), "--format", "json", "-o", str(tmp_path / "r.jsonl")
    )
    assert f"{path}:3 case 'good': duplicate id (first at {path}:1)" in result.stderr
    assert f"{other}:1 case 'no-reference': duplicate id (first at {path}:2)" in result.stderr
    assert json.loads(result.stdout)["duplicate_ids"] == 2


@pytest.mark.parametrize(
    "given",
    [
        pytest.param(lambda d: d, id="dict"),
        pytest.param(json.dumps, id="json-text"),
        pytest.param(lambda d: json.dumps(d).encode(), id="json-bytes"),
    ],
)
def test_check_case_takes_what_check_takes(given: Any) -> None:
    data = FOUR_LINES[0]
    assert check_case(given(data)) == check([data])[0]


@pytest.mark.parametrize("bad", ["not json", "[1, 2]", {"id": "x", "tools": 3}])
def test_check_case_gives_an_invalid_case_for_what_it_cannot_read(bad: Any) -> None:
    result = check_case(bad)
    assert [f.kind.value for f in result.failures] == ["InvalidCase"]


def test_check_refuses_to_write_over_an_input(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.jsonl", FOUR_LINES[:1])
    before = path.read_bytes()
    result = run("check", str(path), "-o", str(path))
    assert result.exit_code == 2 and f"-o {path} is the input {path}" in result.stderr
    assert path.read_bytes() == before


def test_a_gate_that_passes_still_says_what_it_did_not_grade(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.jsonl", [FOUR_LINES[0], FOUR_LINES[2]])
    result = run("check", str(path), "--fail-under", "0.9", "-o", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 0
    assert "pass rate 100.0% meets --fail-under 90.0%" in result.stderr
    assert "1 not gradable" in result.stderr


@pytest.mark.parametrize(
    "tool, valid",
    [
        pytest.param(
            {"name": "get_weather", "input_schema": UNIT, "strict": True},
            False,
            id="anthropic-strict",
        ),
        pytest.param({"type": "bash_20250124", "name": "get_weather"}, True, id="provider-tool"),
    ],
)
def test_every_provider_form_is_read(tool: dict[str, Any], valid: bool) -> None:
    result = check_case({"id": "k", "tools": [tool], "response": KELVIN})
    assert result.schema_valid is valid  # kelvin is refused where the schema says so


def test_a_case_not_run_yet_is_not_passed_by_its_behavior() -> None:
    for behavior in ("ask", "no_call"):
        result = check_case({"id": "x", "tools": [], "expected_behavior": behavior})
        assert (result.passed, result.needs_judge) == (None, False)


@pytest.mark.parametrize(
    "extra, unknown, nearest",
    [
        pytest.param({"match": {"mdoe": "strict"}}, "/match/mdoe", "/match/mode", id="match"),
        pytest.param(
            {"assert_tools": {"caled": ["get_weather"]}},
            "/assert_tools/caled",
            "/assert_tools/called",
            id="assert-tools",
        ),
    ],
)
def test_unknown_keys_in_match_and_assertions_are_warned_about(
    extra: dict[str, Any], unknown: str, nearest: str
) -> None:
    data = {**FOUR_LINES[0], **extra}
    said = f"unknown field {unknown} (did you mean {nearest}?)"
    with pytest.warns(UnknownFieldWarning) as warned:
        result = check_case(data)
    assert [str(w.message).endswith(said) for w in warned] == [True]
    assert result.passed is True  # graded as if the key were absent
    assert [e.pointer for e in load_cases([data], strict=True).errors] == [unknown]


def test_summarize_reads_result_lines_as_written(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.jsonl", [FOUR_LINES[0], FOUR_LINES[0]])
    out = tmp_path / "r.jsonl"
    result = run("check", str(path), "--format", "json", "-o", str(out))
    with out.open() as lines:
        assert summarize(lines).to_dict() == json.loads(result.stdout)


@pytest.mark.parametrize("flag", [("--junit", "x.xml"), ("--format", "pretty"), ("--strict",)])
def test_ray_refuses_what_it_cannot_report(tmp_path: Path, flag: tuple[str, ...]) -> None:
    path = write(tmp_path / "cases.jsonl", FOUR_LINES[:1])
    result = run("check", str(path), "--ray", *flag)
    assert result.exit_code == 2 and "--ray does not take" in result.stderr
