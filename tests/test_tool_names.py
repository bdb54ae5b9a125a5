"""Tool names a case cannot be graded with (issue 52): two tools of one name (the last one was
kept, silently), a name holding control characters (escape codes, BEL and CR reached the
terminal raw) and one 10,000 characters long were all accepted. Each is an `InvalidCase` at
its pointer, read lean (`judge check`) or whole (`check`, `read_line`), and refused in a
`--tools` file; a called name's control characters are spelled out wherever it is shown."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from judge import CaseError, InputError, Match, check
from judge.cases._case import Case, Tool
from judge.cases._lean import read_lean
from judge.cases._loading import read_line
from judge.cases._shared_tools import SharedTools
from judge.cases._tools import MAX_NAME_LENGTH
from judge.cli import main
from tests.helpers import call, case, tool

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # a control character, but a line feed or tab


def mcp(name: str) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}}


def with_tools(tools: Any) -> dict[str, Any]:
    """A case that is read lean but for its tools."""
    return case([call("get_weather", {})], [{"name": "get_weather", "arguments": {}}], tools)


BAD = [
    pytest.param(
        [tool("get_weather"), tool("x"), tool("y"), tool("get_weather")],
        "/tools/3",
        "tools/0 and tools/3 are both named 'get_weather'",
        id="two-of-one-name",
    ),
    pytest.param(
        [mcp("get_weather"), mcp("get_weather")],
        "/tools/1",
        "tools/0 and tools/1 are both named 'get_weather'",
        id="two-of-one-name-mcp-form",
    ),
    pytest.param(
        {"tools": [mcp("get_weather"), mcp("get_weather")]},
        "/tools/tools/1",
        "tools/tools/0 and tools/tools/1 are both named 'get_weather'",
        id="two-of-one-name-in-a-tools-list-result",
    ),
    pytest.param(
        [tool("get_weather"), tool("get\x1b[2Jweather")],
        "/tools/1/function/name",
        "tool name 'get\\x1b[2Jweather' holds the control character U+001B",
        id="escape-code",
    ),
    pytest.param([tool("ring\x07")], "/tools/0/function/name", "U+0007", id="bell"),
    pytest.param([tool("over\rwrite")], "/tools/0/function/name", "U+000D", id="carriage-return"),
    pytest.param([tool("del\x7f")], "/tools/0/function/name", "U+007F", id="delete"),
    pytest.param([tool("csi\x9b31m")], "/tools/0/function/name", "U+009B", id="c1-control"),
    pytest.param([mcp("tab\tname")], "/tools/0/name", "U+0009", id="tab-mcp-form"),
    pytest.param(
        [{"type": "bash_20250124", "name": "bash\x07"}],
        "/tools/0/name",
        "U+0007",
        id="a-providers-own-tool",
    ),
    pytest.param(
        [tool("a" * 10_000)],
        "/tools/0/function/name",
        f"has 10000 characters; a tool name has at most {MAX_NAME_LENGTH}",
        id="ten-thousand-characters",
    ),
]


@pytest.mark.parametrize(("tools", "at", "reason"), BAD)
def test_judge_check_makes_the_case_invalid_at_the_pointer(
    tools: Any, at: str, reason: str, tmp_path: Path
) -> None:
    cases, out = tmp_path / "cases.jsonl", tmp_path / "out.jsonl"
    good = with_tools([tool("get_weather")]) | {"id": "good"}
    cases.write_text(json.dumps(good) + "\n" + json.dumps(with_tools(tools)) + "\n")
    done = CliRunner().invoke(main, ["check", str(cases), "-o", str(out)])
    assert done.exit_code == 0, done.output
    passed, refused = (json.loads(line) for line in out.read_text().splitlines())
    assert passed["passed"] is True
    [failure] = refused["failures"]
    assert (failure["kind"], failure["path"]) == ("InvalidCase", at)
    assert reason in failure["message"] and "cases.jsonl:2" in failure["message"]
    assert not RAW.search(done.stderr)  # said, with the name's control characters spelled out


@pytest.mark.parametrize(("tools", "at", "reason"), BAD)
def test_the_lean_reading_leaves_them_to_the_full_one(tools: Any, at: str, reason: str) -> None:
    line = json.dumps(with_tools(tools)).encode()
    assert read_lean(json.dumps(with_tools([tool("get_weather")])).encode()) is not None
    assert read_lean(line) is None
    error = read_line(line, source="cases.jsonl", line=7)
    assert isinstance(error, CaseError)
    assert (error.pointer, error.line) == (at, 7) and reason in str(error)


@pytest.mark.parametrize(("tools", "at", "reason"), BAD)
def test_check_in_python_makes_the_case_invalid(tools: Any, at: str, reason: str) -> None:
    [result] = check([with_tools(tools)])
    assert [(f.kind.value, f.path) for f in result.failures] == [("InvalidCase", at)]
    assert reason in result.failures[0].message


@pytest.mark.parametrize(("tools", "at", "reason"), BAD)
def test_a_tools_file_is_refused_naming_the_pointer(tools: Any, at: str, reason: str) -> None:
    with pytest.raises(InputError, match=re.escape(reason)) as raised:
        SharedTools.of(tools, "tools.json")
    assert f"tools.json at {at.removeprefix('/tools')}:" in str(raised.value)


def test_tools_made_in_python_are_held_to_the_same_rules() -> None:
    with pytest.raises(ValidationError, match="U\\+001B"):
        Tool(name="get\x1bweather")
    twice = (Tool(name="get_weather"), Tool(name="get_weather"))
    with pytest.raises(ValidationError, match="tools/0 and tools/1 are both named"):
        Case(id="a", tools=twice)


@pytest.mark.parametrize(
    ("name", "read"),
    [
        pytest.param("a" * MAX_NAME_LENGTH, True, id="at-the-bound"),
        pytest.param("a" * (MAX_NAME_LENGTH + 1), False, id="past-the-bound"),
        pytest.param("météo_aujourd'hui", True, id="letters-of-any-script"),
        pytest.param("name with spaces.and/slashes", True, id="no-provider-rule-but-controls"),
    ],
)
def test_the_bound_and_what_passes(name: str, read: bool) -> None:
    data = case([call(name, {})], [{"name": name, "arguments": {}}], [tool(name)])
    [result] = check([data])
    assert result.passed is (True if read else None)
    assert [f.kind.value for f in result.failures] == ([] if read else ["InvalidCase"])


@pytest.mark.skipif(not DATASETS.is_dir(), reason="the shared datasets are not here")
def test_no_shared_dataset_case_is_refused_for_its_tools() -> None:
    refused = []
    for path in sorted(DATASETS.glob("*.jsonl")):
        for number, line in enumerate(path.read_bytes().splitlines(), start=1):
            read = read_line(line, source=path.name, line=number) if line.strip() else None
            if isinstance(read, CaseError) and read.pointer.startswith("/tools"):
                refused.append(str(read))
    assert refused == []


HOSTILE = "get\x1b[31mweather\x07\r\x9b"


def hostile_call() -> dict[str, Any]:
    """A case whose one call, to a name with control characters, leaves its expected call
    unmade."""
    return case([call(HOSTILE, {})], [{"name": "get_weather", "arguments": {}}])


def test_a_called_name_is_spelled_out_in_the_calls_a_missing_call_lists() -> None:
    [result] = check([hostile_call()], match=Match(mode="superset"))
    [missing] = [f for f in result.failures if f.kind.value == "MissingCall"]
    assert missing.message.endswith("the calls made: 'get\\x1b[31mweather\\x07\\r\\x9b'")


@pytest.mark.parametrize("form", ["pretty", "github"])
def test_a_called_name_never_reaches_the_terminal_raw(form: str, tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(hostile_call()) + "\n")
    command = ["check", str(cases), "--match", "superset", "--format", form]
    done = CliRunner().invoke(main, [*command, "-o", str(tmp_path / "out.jsonl")])
    assert "UnknownName" in done.output and "MissingCall" in done.output
    assert not RAW.search(done.output)
    assert "get\\x1b[31mweather" in done.output
