"""`judge init`: the starter it writes is graded by `judge check` at once, each example case
giving what its `meta.shows` says; it never writes over a file without --force; its CI
workflow runs a `judge check` that exists; `--from-mcp` writes an MCP server's tools."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from judge import load_cases
from judge.cli import main

REFUNDS = Path(__file__).resolve().parents[1] / "examples" / "refunds"
SHOP = f"{sys.executable} {REFUNDS / 'mcp_server.py'}"
FILES = ("tools.json", "cases.jsonl", "calibration.jsonl", ".github/workflows/judge.yml",
         "README.md")  # fmt: skip


def judge(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def check(cases: Path, *args: str) -> tuple[Result, dict[str, dict[str, Any]]]:
    """`judge check CASES ARGS`, and its results by case id."""
    out = cases.with_name("results.jsonl")
    done = judge("check", str(cases), "-o", str(out), *args)
    rows = (json.loads(line) for line in out.read_text().splitlines())
    return done, {row["id"]: row for row in rows}


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("starter") / "new" / "evals"  # made, parents too
    done = judge("init", str(folder))
    assert done.exit_code == 0, done.output
    return folder


@pytest.mark.parametrize(
    ("case_id", "passed", "kinds", "needs_judge"),
    [
        pytest.param("right-call", True, [], None, id="right-call-passes"),
        pytest.param("wrong-value", False, ["WrongValue"], None, id="wrong-value-fails"),
        pytest.param("wrong-tool", False, ["WrongTool"], None, id="wrong-tool-fails"),
        pytest.param("no-call", None, [], True, id="no-call-text-needs-the-judge"),
        pytest.param("ask", None, [], True, id="ask-text-needs-the-judge"),
    ],
)
def test_each_example_case_checks_as_it_says(
    starter: Path, case_id: str, passed: bool | None, kinds: list[str], needs_judge: bool | None
) -> None:
    done, results = check(starter / "cases.jsonl")
    assert done.exit_code == 0, done.output  # whatever the verdicts, without --fail-under
    result = results[case_id]
    assert result["passed"] is passed
    assert [f["kind"] for f in result["failures"]] == kinds
    assert result.get("needs_judge") is needs_judge
    [case] = [c for c in load_cases(str(starter / "cases.jsonl")) if c.id == case_id]
    shows = case.meta["shows"]
    if passed is None:
        assert shows.startswith("no call, as expected") and "judge" in shows
        assert result["tool_selection"] is True  # no call was made: that much code can tell
    else:
        assert shows.startswith("passed" if passed else f"failed, {kinds[0]}")


def test_the_cases_carry_the_tools_of_tools_json(starter: Path) -> None:
    tools = json.loads((starter / "tools.json").read_text())
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    assert all(s["required"] for s in schemas.values())
    assert (
        schemas["issue_refund"]["properties"]["reason"]["default"]
        in (schemas["issue_refund"]["properties"]["reason"]["enum"])
    )
    loaded = load_cases(str(starter / "cases.jsonl"))
    assert not loaded.errors
    for case in loaded:
        assert [(t.name, t.parameters) for t in case.tools] == list(schemas.items())
        assert case.labels is None  # labels belong to the calibration stub


def test_the_printed_next_steps_name_the_command_and_what_it_gives(tmp_path: Path) -> None:
    done = judge("init", str(tmp_path / "s"))
    cases = tmp_path / "s" / "cases.jsonl"
    assert done.exit_code == 0, done.output
    assert all(f"  {name}" in done.output for name in FILES)
    assert (
        "next: edit tools.json and cases.jsonl with your agent's real tools and replies, "
        f"then run: judge check {cases}"
    ) in done.output
    assert "judge sample" in done.output and "judge review" in done.output
    summary = json.loads(check(cases, "--format", "json")[0].stdout)
    counts = (summary["passed"], summary["failed"], summary["needs_judge"])
    assert "{} passed, {} failed and {} for the judge".format(*counts) in done.output


def test_dir_defaults_to_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = judge("init")
    assert done.exit_code == 0, done.output
    assert "then run: judge check cases.jsonl\n" in done.output
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == (
        sorted(FILES)
    )


def test_the_calibration_stub_is_labelled_by_the_rule(starter: Path) -> None:
    loaded = load_cases(str(starter / "calibration.jsonl"))
    assert not loaded.errors and len(loaded) >= 3
    for case in loaded:
        assert case.labels is not None and case.labels.selection is not None
        # arguments labelled only where the right tool was called (the labelling rule)
        right_tool = [c.name for c in case.tool_calls] == [
            c.name for c in case.expected_calls or ()
        ]
        assert (case.labels.arguments is not None) == right_tool, case.id


@pytest.mark.parametrize("existing", ["tools.json", ".github/workflows/judge.yml"])
def test_an_existing_file_is_refused_and_kept_until_force(tmp_path: Path, existing: str) -> None:
    mine = tmp_path / existing
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text("mine\n")
    done = judge("init", str(tmp_path))
    assert done.exit_code == 2
    assert str(mine) in done.stderr and "--force" in done.stderr
    assert mine.read_text() == "mine\n"
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [mine]  # nothing else written
    forced = judge("init", str(tmp_path), "--force")
    assert forced.exit_code == 0, forced.output
    assert mine.read_text() != "mine\n"
    assert not list(tmp_path.rglob("*.partial"))


def test_the_ci_workflow_runs_a_judge_check_that_exists(starter: Path) -> None:
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load((starter / ".github/workflows/judge.yml").read_text())
    steps = workflow["jobs"]["check"]["steps"]
    [command] = [s["run"] for s in steps if s.get("run", "").startswith("judge check")]
    assert "--fail-under 0.8" in command and "--format github" in command
    assert workflow["env"]["CASES"] == "cases.jsonl"
    # The same command here: the examples' failures are annotations, under the gate (exit 1).
    args = command.split()[2:]
    junit = starter / args[args.index("--junit") + 1]
    args[args.index("--junit") + 1] = str(junit)
    args[args.index('"$CASES"')] = str(starter / workflow["env"]["CASES"])
    done = judge("check", *args)
    assert done.exit_code == 1, done.output
    assert "::error file=" in done.output and "title=WrongValue" in done.output
    assert junit.exists()


def test_from_mcp_writes_the_servers_tools(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    done = judge("init", str(tmp_path), "--from-mcp", SHOP)
    assert done.exit_code == 0, done.output
    tools = json.loads((tmp_path / "tools.json").read_text())
    assert [t["type"] for t in tools] == ["function"] * 3
    functions = {t["function"]["name"]: t["function"] for t in tools}
    assert set(functions) == {"lookup_order", "verify_refund_eligibility", "issue_refund"}
    refund = functions["issue_refund"]
    assert refund["description"] == "Refund an order, fully or partly."
    assert refund["parameters"]["required"] == ["order_id", "amount"]  # from its inputSchema
    assert "the example cases keep the sample shop's" in done.output
    assert "Listed from the MCP server" in (tmp_path / "README.md").read_text()
    results = check(tmp_path / "cases.jsonl")[1]  # the examples still check as documented
    assert [r["passed"] for r in results.values()] == [True, False, False, None, None]


@pytest.mark.parametrize(
    ("command", "says"),
    [
        pytest.param("/no/such/server", "could not be started", id="cannot-start"),
        pytest.param("", "--from-mcp '': an empty command", id="empty"),
        pytest.param("'shop", '--from-mcp "\'shop": No closing quotation', id="unquoted"),
    ],
)
def test_an_mcp_server_that_gives_no_tools_writes_nothing(
    tmp_path: Path, command: str, says: str
) -> None:
    pytest.importorskip("mcp")
    folder = tmp_path / "s"
    done = judge("init", str(folder), "--from-mcp", command)
    assert done.exit_code == 2
    assert says in done.stderr
    assert not folder.exists()
