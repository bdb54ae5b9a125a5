"""`judge init`: the starter it writes is graded by `judge check --tools tools.json` at once,
each example case giving what its `meta.shows` says, the cases carrying no tools of their own;
it never writes over a file without --force; its CI workflow installs judge from where the user
says and runs a `judge check` that exists; `--from-mcp` writes an MCP server's tools and an
outline of a case per tool, which no command grades until it is filled in."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from judge import load_cases
from judge.cli import _init, main
from judge.cli._init import write_new
from tests.openrouter_server import OpenRouterServer
from tests.run_helpers import run

ROOT = Path(__file__).resolve().parents[1]
REFUNDS = ROOT / "examples" / "refunds"
SHOP = f"{sys.executable} {REFUNDS / 'mcp_server.py'}"
FILES = ("tools.json", "cases.jsonl", "calibration.jsonl", ".github/workflows/judge.yml",
         "README.md")  # fmt: skip


def judge(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def check(cases: Path, *args: str) -> tuple[Result, dict[str, dict[str, Any]]]:
    """`judge check CASES --tools tools.json ARGS` (the tools beside the cases), and its
    results by case id."""
    out = cases.with_name("results.jsonl")
    tools = cases.with_name("tools.json")
    done = judge("check", str(cases), "--tools", str(tools), "-o", str(out), *args)
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
        pytest.param("no-call", True, [], None, id="no-call-text-passes"),
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


def test_the_cases_leave_their_tools_to_tools_json(starter: Path) -> None:
    tools = json.loads((starter / "tools.json").read_text())
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    assert all(s["required"] for s in schemas.values())
    assert (
        schemas["issue_refund"]["properties"]["reason"]["default"]
        in (schemas["issue_refund"]["properties"]["reason"]["enum"])
    )
    lines = [json.loads(line) for line in (starter / "cases.jsonl").read_text().splitlines()]
    assert [line.get("tools") for line in lines] == [None] * 5  # given once, by --tools
    loaded = load_cases(str(starter / "cases.jsonl"))
    assert not loaded.errors and all(case.labels is None for case in loaded)  # in the stub
    # Without the tools every call is to a tool nobody offered; with them, as meta.shows says.
    bare = judge("check", str(starter / "cases.jsonl"), "-o", os.devnull, "--format", "json")
    assert json.loads(bare.stdout)["failure_kinds"]["UnknownName"] == 3
    # The calibration stub keeps its own: `judge calibrate` reads it as it is.
    for case in load_cases(str(starter / "calibration.jsonl")):
        assert [(t.name, t.parameters) for t in case.tools] == list(schemas.items())


def test_the_printed_next_steps_name_the_command_and_what_it_gives(tmp_path: Path) -> None:
    done = judge("init", str(tmp_path / "s"))
    cases = tmp_path / "s" / "cases.jsonl"
    assert done.exit_code == 0, done.output
    assert all(f"  {name}" in done.output for name in FILES)
    assert (
        "next: edit tools.json and cases.jsonl with your agent's real tools and replies, "
        f"then run: judge check {cases} --tools {cases.with_name('tools.json')}\n"
    ) in done.output
    assert "judge sample" in done.output and "judge review" in done.output
    summary = json.loads(check(cases, "--format", "json")[0].stdout)
    counts = (summary["passed"], summary["failed"], summary["needs_judge"])
    assert "{} passed, {} failed and {} for the judge".format(*counts) in done.output


def test_dir_defaults_to_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = judge("init")
    assert done.exit_code == 0, done.output
    assert "then run: judge check cases.jsonl --tools tools.json\n" in done.output
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


def test_a_file_made_while_the_server_was_asked_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression (issue 52): `init --from-mcp` replaced a file made while it waited for the
    # server, past the check made when it started.
    mine = tmp_path / "cases.jsonl"
    lookup = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}

    def listed(*args: object) -> list[dict[str, Any]]:
        mine.write_text("mine\n")  # made while the server starts
        return [lookup]

    monkeypatch.setattr(_init, "mcp_tools", listed)
    done = judge("init", str(tmp_path), "--from-mcp", "shop")
    assert done.exit_code == 2
    assert f"{mine} exists now" in done.stderr and "--force" in done.stderr
    assert mine.read_text() == "mine\n"
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [mine]  # what it wrote, taken back


@pytest.mark.parametrize("there", ["a-file", "a-link-to-nothing"])
def test_the_final_write_never_replaces_what_is_there(tmp_path: Path, there: str) -> None:
    target = tmp_path / "tools.json"
    if there == "a-file":
        target.write_text("mine\n")
    else:
        target.symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileExistsError):
        write_new(target, b"starter\n")
    if there == "a-file":
        assert target.read_text() == "mine\n"
    else:
        assert os.readlink(target) == str(tmp_path / "nowhere")
        assert not (tmp_path / "nowhere").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["tools.json"]  # no partial left
    write_new(tmp_path / "new.json", b"starter\n")
    assert (tmp_path / "new.json").read_bytes() == b"starter\n"


def workflow_of(folder: Path) -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    found: dict[str, Any] = yaml.safe_load((folder / ".github/workflows/judge.yml").read_text())
    return found


def test_the_ci_workflow_runs_a_judge_check_that_exists(starter: Path) -> None:
    workflow = workflow_of(starter)
    steps = workflow["jobs"]["check"]["steps"]
    [command] = [s["run"] for s in steps if s.get("run", "").startswith("judge check")]
    assert "--fail-under 0.8" in command and "--format github" in command
    assert {k: workflow["env"][k] for k in ("CASES", "TOOLS")} == {
        "CASES": "cases.jsonl",
        "TOOLS": "tools.json",
    }
    # The same command here: the examples' failures are annotations, under the gate (exit 1).
    args = [
        str(starter / workflow["env"][arg[1:]]) if arg.startswith("$") else arg
        for arg in shlex.split(command)[2:]
    ]
    junit = starter / args[args.index("--junit") + 1]
    args[args.index("--junit") + 1] = str(junit)
    done = judge("check", *args)
    assert done.exit_code == 1, done.output
    assert "::error file=" in done.output and "title=WrongValue" in done.output
    assert "UnknownName" not in done.output  # the cases were given tools.json
    assert junit.exists()


def test_the_ci_workflow_installs_judge_from_where_the_user_says(starter: Path) -> None:
    # Regression: it installed tool-call-judge==0.1.0 from PyPI, where no such release exists.
    text = (starter / ".github/workflows/judge.yml").read_text()
    assert "tool-call-judge==" not in text
    workflow = workflow_of(starter)
    assert workflow["env"]["JUDGE"] == "tool-call-judge @ git+https://github.com/OWNER/REPO"
    before = text.split("  JUDGE:")[0].splitlines()
    assert before[-3].startswith("  # TODO: where your copy of judge lives")
    runs = [s["run"] for s in workflow["jobs"]["check"]["steps"] if "run" in s]
    assert runs[0] == 'pip install "$JUDGE"'


def test_the_ci_workflow_runs_as_written_in_a_fresh_environment(tmp_path: Path) -> None:
    """Every `run` step, in order, as GitHub runs it (bash, the workflow's env), in a fresh
    venv: the install, with JUDGE naming this checkout, then the check of the starter's cases.
    Offline: the dependencies are this venv's, seen through a .pth file."""
    folder = tmp_path / "repo"
    assert judge("init", str(folder)).exit_code == 0
    workflow = workflow_of(folder)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    (site / "dev-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {
        **os.environ,
        **workflow["env"],
        "JUDGE": f"tool-call-judge @ {ROOT.as_uri()}",
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "PIP_NO_INDEX": "1",
        "PIP_NO_DEPS": "1",
        "PIP_NO_BUILD_ISOLATION": "0",  # (pip reads 0 here as --no-build-isolation)
        "JUDGE_PURE_PYTHON": "1",  # no mypyc compile: seconds, not minutes
    }
    done = []
    for step in workflow["jobs"]["check"]["steps"]:
        if "run" in step:
            done.append(subprocess.run(["bash", "-e", "-c", step["run"]], cwd=folder, env=env,
                                       capture_output=True, text=True, timeout=300))  # fmt: skip
    install, check = done
    assert install.returncode == 0, install.stdout + install.stderr
    assert (venv / "bin" / "judge").exists()  # the judge that ran next is the one installed
    assert check.returncode == 1, check.stdout + check.stderr  # the examples fail on purpose
    said = check.stdout + check.stderr  # (the results on standard output, the rest beside)
    assert "::error file=cases.jsonl,line=2,title=WrongValue" in said, said
    assert "UnknownName" not in said
    assert (folder / "judge-junit.xml").exists()


def test_from_mcp_writes_the_servers_tools_and_an_outline_per_tool(tmp_path: Path) -> None:
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
    assert "Listed from the MCP server" in (tmp_path / "README.md").read_text()
    # Regression: the cases were the sample shop's, about tools the server does not have.
    cases = tmp_path / "cases.jsonl"
    outlines = {o["id"]: o for o in map(json.loads, cases.read_text().splitlines())}
    assert list(outlines) == [t["function"]["name"] for t in tools]
    assert outlines["issue_refund"] == {
        "id": "issue_refund",
        "draft": True,
        "messages": [{"role": "user", "content": "TODO: a request that needs issue_refund"}],
        "expected_calls": [
            {
                "name": "issue_refund",
                "arguments": {"order_id": "TODO: string", "amount": "TODO: number"},
            }
        ],
        "expected_behavior": "call",
    }
    assert "an outline per tool" in done.output and "sample shop" not in done.output
    # Unfinished, each is InvalidCase, never passed: under any gate.
    checked, results = check(cases, "--fail-under", "0.1")
    assert checked.exit_code == 1, checked.output
    for result in results.values():
        assert result["passed"] is not True
        [failure] = result["failures"]
        assert (failure["kind"], failure["path"]) == ("InvalidCase", "/draft")
        assert "an unfinished outline: fill in the request" in failure["message"]
    # Filled in (the mark removed), an outline is a case like any other.
    filled = {k: v for k, v in outlines["issue_refund"].items() if k != "draft"}
    filled["messages"] = [{"role": "user", "content": "Refund 20 on order A-1, please."}]
    filled["expected_calls"] = [{"name": "issue_refund", "arguments": {"order_id": "A-1",
                                                                        "amount": 20}}]  # fmt: skip
    reply = {"name": "issue_refund", "arguments": json.dumps({"order_id": "A-1", "amount": 20})}
    filled["response"] = {"tool_calls": [{"id": "c", "type": "function", "function": reply}]}
    cases.write_text(json.dumps(filled) + "\n")
    assert [r["passed"] for r in check(cases)[1].values()] == [True]


@pytest.mark.parametrize(
    ("draft", "refused"),
    [
        pytest.param(True, "an unfinished outline: fill in the request", id="an-outline"),
        pytest.param(False, None, id="marked-finished"),
        pytest.param("yes", "draft must be true (an unfinished outline) or false", id="not-a-bool"),
    ],
)
def test_a_case_marked_draft_is_refused_until_the_mark_goes(
    draft: object, refused: str | None
) -> None:
    loaded = load_cases([{"id": "x", "draft": draft, "expected_calls": []}])
    if refused is None:
        assert [c.id for c in loaded] == ["x"] and not loaded.errors
    else:
        [error] = loaded.errors
        assert error.pointer == "/draft" and refused in error.reason
        assert not loaded


def test_run_never_asks_a_model_about_an_outline(fake: OpenRouterServer, tmp_path: Path) -> None:
    outline = {"id": "o", "draft": True, "messages": [{"role": "user", "content": "TODO"}]}
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(outline) + "\n")
    done = run(fake, cases, "--models", "good/m")
    assert done.exit_code == 2, done.output
    assert "unfinished outline" in done.stderr and "no case to run" in done.stderr
    assert fake.chats == []


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
