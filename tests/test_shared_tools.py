"""`--tools FILE` (issue 50, part 5): tools given once for every case that has none of its own,
in every form a case's `tools` takes, by each command that grades cases (`judge check` on its
lean path, its whole path and in workers, `grade`, `run`, `regrade`, `serve`) and by `check`
and `grade` in Python; a case's own tools win; a file that cannot be read is exit 2 naming it
and the JSON pointer of the tool at fault."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from fastapi.testclient import TestClient

import judge
from judge import InputError, create_app
from judge.cases._shared_tools import SharedTools
from judge.cli import main
from judge.cli._batch import cases_of
from tests.chat_server import ChatServer
from tests.helpers import WEATHER, call, case, tool
from tests.openrouter_server import OpenRouterServer
from tests.run_helpers import lines, run

TIME: dict[str, Any] = {"type": "object"}
MCP = [{"name": "get_weather", "inputSchema": WEATHER}, {"name": "get_time", "inputSchema": TIME}]
FORMS: dict[str, Any] = {
    "openai-chat": [tool("get_weather", WEATHER), tool("get_time", TIME)],
    "responses": [
        {"type": "function", "name": "get_weather", "parameters": WEATHER},
        {"type": "function", "name": "get_time", "parameters": TIME},
    ],
    "anthropic": [
        {"name": "get_weather", "input_schema": WEATHER},
        {"name": "get_time", "input_schema": TIME},
    ],
    "mcp": MCP,
    "mcp-tools-list-result": {"tools": MCP, "nextCursor": None},
}
TOOLS = FORMS["openai-chat"]
PARIS = [{"name": "get_weather", "arguments": {"city": "Paris"}}]


def bare(data: dict[str, Any]) -> dict[str, Any]:
    """A case as a file with `--tools` holds it: no tools of its own."""
    return {key: value for key, value in data.items() if key != "tools"}


RIGHT = bare(case([call("get_weather", {"city": "Paris"})], PARIS)) | {"id": "right"}
OFF_SCHEMA = bare(case([call("get_weather", {"city": 7})])) | {"id": "off-schema"}
OWN = case(
    [call("get_weather", {"city": 7})],
    [{"name": "get_weather", "arguments": {"city": 7}}],
    tools=[tool("get_weather", {"type": "object", "properties": {"city": {"type": "integer"}}})],
) | {"id": "own-tools"}  # its own schema takes a number: it keeps it
CASES = [RIGHT, OFF_SCHEMA, OWN]
WITH_TOOLS = {
    "right": (True, []),
    "off-schema": (False, ["SchemaMismatch"]),
    "own-tools": (True, []),
}
WITHOUT = {
    "right": (False, ["UnknownName"]),
    "off-schema": (False, ["UnknownName"]),
    "own-tools": (True, []),
}


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def write_json(path: Path, value: Any) -> str:
    path.write_text(json.dumps(value))
    return str(path)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def outcomes(results: list[dict[str, Any]]) -> dict[str, tuple[Any, list[str]]]:
    return {r["id"]: (r["passed"], [f["kind"] for f in r["failures"]]) for r in results}


def check(cases: Path, *args: str) -> dict[str, tuple[Any, list[str]]]:
    out = cases.with_name("results.jsonl")
    done = invoke("check", str(cases), "-o", str(out), *args)
    assert done.exit_code == 0, done.output
    return outcomes(lines(out))


@pytest.mark.parametrize("form", list(FORMS))
def test_check_offers_the_files_tools_to_each_case_without_its_own(
    tmp_path: Path, form: str
) -> None:
    cases = write(tmp_path / "cases.jsonl", CASES)
    assert check(cases) == WITHOUT  # the bug: each call to a tool nobody offered
    assert check(cases, "--tools", write_json(tmp_path / "tools.json", FORMS[form])) == WITH_TOOLS


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="lean-path"),
        pytest.param(["--match", "unordered"], id="whole-path"),
        pytest.param(["--jobs", "2"], id="worker-processes"),
        pytest.param(["--strict"], id="read-strictly"),
    ],
)
def test_every_path_of_check_offers_them(tmp_path: Path, args: list[str]) -> None:
    cases = write(tmp_path / "cases.jsonl", CASES * 3)  # (with ids seen twice: warned, graded)
    tools = write_json(tmp_path / "tools.json", TOOLS)
    assert check(cases, "--tools", tools, *args) == WITH_TOOLS


def test_check_with_tools_keeps_its_lean_start(tmp_path: Path) -> None:
    # Lines in the common form never load pydantic, with the tools given once as without.
    probe = (
        "import sys, runpy; sys.argv = ['judge', 'check', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('judge', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('pydantic' in sys.modules)"
    )
    cases = write(tmp_path / "cases.jsonl", [RIGHT, OFF_SCHEMA])
    out = tmp_path / "out.jsonl"
    tools = write_json(tmp_path / "tools.json", TOOLS)
    args = [str(cases), "--tools", tools, "-o", str(out)]
    done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stderr
    assert outcomes(lines(out)) == {k: WITH_TOOLS[k] for k in ("right", "off-schema")}


BAD_FILES = [
    pytest.param(b"[{", "not valid JSON", id="not-json"),
    pytest.param(b"3", "expected a JSON array of tools", id="a-number"),
    pytest.param(b'{"name": "x"}', "at /: tools must be a list", id="one-tool-not-in-a-list"),
    pytest.param(
        json.dumps([TOOLS[0], {"type": "function", "function": {"name": "x", "paramters": {}}}]),
        "at /1/function/paramters: tool 'x' (OpenAI chat form): unknown key 'paramters' "
        "(did you mean 'parameters'?)",
        id="a-misspelt-key",
    ),
    pytest.param(
        json.dumps({"tools": [{"name": "x", "inputschema": {}}]}),
        "at /tools/0/inputschema:",
        id="in-a-tools-list-result",
    ),
    pytest.param(b"[]", "holds no tools", id="no-tools"),
    pytest.param(None, "cannot read tools", id="missing"),
]


@pytest.mark.parametrize(("content", "says"), BAD_FILES)
def test_a_tools_file_that_cannot_be_read_is_exit_2_naming_it(
    tmp_path: Path, content: str | bytes | None, says: str
) -> None:
    tools = tmp_path / "tools.json"
    if content is not None:
        tools.write_bytes(content if isinstance(content, bytes) else content.encode())
    cases = write(tmp_path / "cases.jsonl", CASES)
    out = tmp_path / "results.jsonl"
    done = invoke("check", str(cases), "--tools", str(tools), "-o", str(out))
    assert done.exit_code == 2, done.output
    assert f"judge check: --tools {tools}" in done.stderr and says in done.stderr, done.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["grade", "{cases}", "--model", "m"], id="grade"),
        pytest.param(["run", "{cases}", "--models", "m", "--no-preflight"], id="run"),
        pytest.param(["regrade", "{runs}", "{cases}"], id="regrade"),
        pytest.param(["serve", "--port", "0"], id="serve"),
        pytest.param(["check", "{cases}", "--ray"], id="check-on-ray"),
    ],
)
def test_each_command_refuses_a_bad_tools_file_before_it_starts(
    tmp_path: Path, command: list[str]
) -> None:
    paths = {
        "cases": str(write(tmp_path / "cases.jsonl", CASES)),
        "runs": str(write(tmp_path / "runs.jsonl", [])),
    }
    bad = write_json(tmp_path / "tools.json", [{"name": "x", "inputschema": {}}])
    done = invoke(*[arg.format(**paths) for arg in command], "--tools", bad)
    assert done.exit_code == 2, done.output
    if "--ray" in command:  # read there as the cases are, without the file
        assert "--ray does not take --tools" in done.stderr
    else:
        assert f"--tools {bad} at /0/inputschema" in done.stderr, done.stderr


def test_grade_offers_them_to_the_checks_and_the_judge(server: ChatServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "cases.jsonl", [RIGHT])
    tools = write_json(tmp_path / "tools.json", FORMS["mcp"])
    results = {}
    for given in ([], ["--tools", tools]):
        out = tmp_path / f"graded{len(given)}.jsonl"
        done = invoke("grade", str(cases), *given, "-o", str(out), "--base-url", server.url,
                      "--model", "m", "--cache-dir", str(tmp_path / "cache"))  # fmt: skip
        assert done.exit_code == 0, done.output
        [results[len(given)]] = lines(out)
    assert [f["kind"] for f in results[0]["failures"]] == ["UnknownName"]
    assert results[2]["schema_valid"] is True and results[2]["failures"] == []
    prompts = json.dumps([r.body for r in server.chat_requests])
    assert "get_time" in prompts  # the judge was shown the tools offered


def test_a_batch_reads_the_cases_with_them(tmp_path: Path) -> None:
    cases = write(tmp_path / "cases.jsonl", CASES)
    shared = SharedTools.of(TOOLS)
    read = cases_of([str(cases)], {"off-schema"}, tools=shared)
    assert {c.id: [t.name for t in c.tools] for c in read} == {
        "right": ["get_weather", "get_time"],
        "own-tools": ["get_weather"],
    }


def test_run_offers_them_to_the_candidates_and_regrade_grades_with_them(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    case_line = {"id": "paris", "messages": [{"role": "user", "content": "weather in Paris"}]}
    cases = write(tmp_path / "cases.jsonl", [case_line | {"expected_calls": PARIS}])
    tools = write_json(tmp_path / "tools.json", FORMS["anthropic"])
    out = tmp_path / "runs.jsonl"
    done = run(fake, cases, "--models", "good/m", "--tools", tools, "-o", str(out))
    assert done.exit_code == 0, done.output
    [asked] = fake.chats
    assert [t["function"]["name"] for t in asked["tools"]] == ["get_weather", "get_time"]
    assert [r["passed"] for r in lines(out)] == [True]
    for given, passed in (([], False), (["--tools", tools], True)):
        done = invoke("regrade", str(out), str(cases), *given)
        assert done.exit_code == 0, done.output
        assert [r["passed"] for r in lines(out)] == [passed], given
    assert len(fake.chats) == 1  # regrading asked nobody again


def test_the_service_offers_them_to_every_request(tmp_path: Path) -> None:
    with TestClient(create_app(tools=FORMS["responses"]), "http://127.0.0.1") as http:
        reply = http.post("/v1/check", json=CASES)
    assert reply.status_code == 200, reply.text
    assert outcomes(reply.json()["results"]) == WITH_TOOLS


@pytest.mark.parametrize("form", list(FORMS))
def test_check_in_python_takes_them_in_every_form(form: str) -> None:
    assert outcomes([r.to_json_dict() for r in judge.check(CASES, tools=FORMS[form])]) == (
        WITH_TOOLS
    )


def test_check_in_python_refuses_tools_it_cannot_read() -> None:
    with pytest.raises(InputError, match=r"^tools at /1/function/paramters: tool 'x'"):
        judge.check(CASES, tools=[TOOLS[0], {"function": {"name": "x", "paramters": {}}}])


def test_grade_in_python_takes_them(server: ChatServer, tmp_path: Path) -> None:
    [result] = judge.grade(
        [RIGHT], tools=MCP, base_url=server.url, model="m", cache_dir=tmp_path / "cache"
    )
    assert result.schema_valid is True and result.failures == ()
