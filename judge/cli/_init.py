"""`judge init`: a starter folder that `judge check` grades at once.

It writes sample tools, five cases that show what the checks decide (a right call, a wrong
value, a wrong tool, and two text replies left to the judge), a GitHub Actions workflow, a
hand-labelled calibration stub and a README. With `--from-mcp` the tools are an MCP server's
`tools/list`; the cases keep the sample tools, since cases about tools one does not know would
show nothing true. Nothing that exists is written over without `--force`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import click

from judge.cases._files import write_atomically
from judge.cli._common import refuser

_refuse = refuser("judge init")

_SYSTEM = (
    "You are the support agent of a small web shop. Use the tools to look up, refund and "
    "cancel orders; ask the customer for anything you need and do not know."
)
_ORDER_ID = {"type": "string", "pattern": "^ord_[0-9]+$", "description": "Like ord_1042."}


def _tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    parameters = {
        "type": "object",
        "properties": properties,
        "required": ["order_id"],
        "additionalProperties": False,
    }
    function = {"name": name, "description": description, "parameters": parameters}
    return {"type": "function", "function": function}


SAMPLE_TOOLS: tuple[dict[str, Any], ...] = (
    _tool("lookup_order", "Look up an order: items, status, amount paid.", {"order_id": _ORDER_ID}),
    _tool(
        "issue_refund",
        "Refund a delivered order, fully or partly.",
        {
            "order_id": _ORDER_ID,
            "amount": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "In the order's currency; leave out for a full refund.",
            },
            "reason": {
                "type": "string",
                "enum": ["damaged", "late", "wrong_item", "other"],
                "default": "other",
            },
        },
    ),
    _tool(
        "cancel_order",
        "Cancel an order that has not shipped yet.",
        {"order_id": _ORDER_ID, "notify_customer": {"type": "boolean", "default": True}},
    ),
)


Call = tuple[str, dict[str, Any]]
"""A tool call: its name and arguments."""


def _case(
    case_id: str, user: str, reply: str | Call, expected: Call | None, **extra: Any
) -> dict[str, Any]:
    """A case of the sample shop: `reply` is the candidate's text or its one call;
    `expected` the one call it should make, or None for no call at all."""
    if isinstance(reply, str):
        response: dict[str, Any] = {"content": reply, "tool_calls": []}
    else:
        function = {"name": reply[0], "arguments": json.dumps(reply[1])}
        response = {
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": function}],
        }
    calls = [] if expected is None else [{"name": expected[0], "arguments": expected[1]}]
    return {
        "id": case_id,
        "messages": [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}],
        "tools": list(SAMPLE_TOOLS),
        "response": response,
        "expected_calls": calls,
        **extra,
    }


def _order(order: int, **arguments: Any) -> dict[str, Any]:
    return {"order_id": f"ord_{order}", **arguments}


def starter_cases() -> list[dict[str, Any]]:
    """The five cases, each with `meta.shows`: what `judge check` says of it, and why."""
    refund = ("issue_refund", _order(1042, reason="damaged"))
    partial = _order(2077, amount=15, reason="late")
    judged = "no call, as expected; whether the reply {} needs the judge (judge grade)"
    return [
        _case(
            "right-call",
            "Please refund order ord_1042, it arrived damaged.",
            refund,
            refund,
            expected_behavior="call",
            meta={"shows": "passed: the expected tool with the expected values"},
        ),
        _case(
            "wrong-value",
            "Refund 15 euros on order ord_2077, it came a week late.",
            ("issue_refund", {**partial, "amount": 50}),
            ("issue_refund", partial),
            expected_behavior="call",
            meta={"shows": "failed, WrongValue at /amount: 50 where the user said 15"},
        ),
        _case(
            "wrong-tool",
            "Cancel order ord_3150 please, I ordered it by mistake.",
            ("issue_refund", _order(3150)),
            ("cancel_order", _order(3150)),
            expected_behavior="call",
            meta={"shows": "failed, WrongTool: a refund where a cancellation was asked"},
        ),
        _case(
            "no-call",
            "How long does a refund take to reach my card?",
            "Refunds reach your card within 5 to 10 business days.",
            None,
            expected_behavior="no_call",
            meta={"shows": judged.format("answers the question right")},
        ),
        _case(
            "ask",
            "I want my money back for the broken blender.",
            "Sorry about the blender! Which order is it? Its id looks like ord_1234.",
            None,
            expected_behavior="ask",
            meta={"shows": judged.format("asks for the missing order id")},
        ),
    ]


def calibration_cases() -> list[dict[str, Any]]:
    """A stub of a hand-labelled sample: the labels follow the labelling rule (arguments not
    labelled where there is nothing to judge)."""
    right = ("issue_refund", _order(5120, reason="wrong_item"))
    return [
        _case(
            "cal-refund-right",
            "Refund order ord_5120, you sent the wrong size.",
            right,
            right,
            labels={"selection": "correct", "arguments": "correct"},
        ),
        _case(
            "cal-refund-wrong-order",
            "Please refund order ord_5121.",
            ("issue_refund", _order(5112)),
            ("issue_refund", _order(5121)),
            labels={"selection": "correct", "arguments": "incorrect"},
        ),
        _case(
            "cal-refund-instead-of-cancel",
            "Cancel ord_5122, I don't need it any more.",
            ("issue_refund", _order(5122)),
            ("cancel_order", _order(5122)),
            labels={"selection": "incorrect"},
        ),
        _case(
            "cal-call-instead-of-ask",
            "I want a refund.",
            ("issue_refund", _order(1)),
            None,
            expected_behavior="ask",
            labels={"selection": "incorrect"},
        ),
    ]


_WORKFLOW = """\
# Grades the cases on every push and pull request: each failure is an annotation on its line
# of the cases file, the run fails below a pass rate of 80%, and the JUnit report is kept.
# GitHub reads workflows from .github/workflows/ at the root of the repository only: if
# `judge init` wrote this elsewhere, move it there and give CASES from the root.
name: judge
on: [push, pull_request]
env:
  CASES: cases.jsonl
jobs:
  check:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: pip install "{package}"
      - run: judge check "$CASES" --fail-under 0.8 --format github --junit judge-junit.xml
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: judge-junit
          path: judge-junit.xml
"""

_README = """\
# Grading the tool calls of your agent

Written by `judge init`. Each file, and what to do with it:

- `tools.json`: the tools your agent is offered, in OpenAI form. {tools_note}
- `cases.jsonl`: one case per line: the conversation, the tools offered, the agent's reply
  (`response`) and what it should have done (`expected_calls`, `expected_behavior`: call,
  no_call or ask). The five examples show what `judge check` decides; `meta.shows` says what
  each one gives. Replace them with your agent's real conversations and replies.
  An expected value may be `{{"$any": [v1, v2]}}` (any of them), with `"$optional": true`
  (may be left out).
- `calibration.jsonl`: cases labelled by hand (`labels`: selection, arguments), the start of
  a sample to measure the LLM judge against people before trusting it: grow it to a hundred
  or so (step 3), then `judge calibrate` it.
- `.github/workflows/judge.yml`: CI that runs `judge check` and fails below a pass rate of
  80%. The examples fail on purpose: it passes once the cases are yours.

Next:

1. Edit `tools.json` and `cases.jsonl`, then run `judge check cases.jsonl`: a result per
   case, then a summary; exit 0 whatever the verdicts (with `--fail-under RATE`, exit 1 below
   that pass rate).
2. `judge grade cases.jsonl` asks the LLM judge about what code cannot decide (the `no-call`
   and `ask` cases).
3. Label more cases: `judge sample cases.jsonl -o sample.jsonl`, then `judge review
   sample.jsonl` (in the browser) or `judge label sample.jsonl` (in the terminal).
"""


@dataclass(frozen=True)
class StarterFile:
    """One file of the starter: where it goes, what it holds, and what it is for."""

    path: str
    text: str
    about: str


def starter_files(tools: list[dict[str, Any]], source: str | None) -> list[StarterFile]:
    """The starter's files; `tools` are the sample tools, or those of the MCP server
    `source`."""
    names = ", ".join(t["function"]["name"] for t in tools)
    cases = starter_cases()
    calibration = calibration_cases()
    ids = ", ".join(c["id"] for c in cases)
    if source is None:
        note = "The sample shop's tools: put your own here."
    else:
        note = (
            f"Listed from the MCP server `{source}`. The cases use the sample shop's tools: "
            "write cases for these."
        )
    try:
        package = f"tool-call-judge=={version('tool-call-judge')}"  # the verdicts of this one
    except PackageNotFoundError:
        package = "tool-call-judge"
    return [
        StarterFile("tools.json", _json(tools), f"{len(tools)} tools: {names}"),
        StarterFile("cases.jsonl", _lines(cases), f"{len(cases)} cases: {ids}"),
        StarterFile(
            "calibration.jsonl",
            _lines(calibration),
            f"{len(calibration)} hand-labelled cases, the start of a calibration sample",
        ),
        StarterFile(
            ".github/workflows/judge.yml",
            _WORKFLOW.format(package=package),
            "CI: judge check on every push, --fail-under 0.8",
        ),
        StarterFile("README.md", _README.format(tools_note=note), "what each file is, what next"),
    ]


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def mcp_tools(command: str, timeout: float, start_timeout: float = 60.0) -> list[dict[str, Any]]:
    """The tools of the stdio MCP server `command`, in OpenAI form (ValueError when it cannot
    be started or lists none)."""
    from judge.checks._mcp import McpServer, McpStartError

    server = McpServer.of(
        command, None, None, timeout, option="--from-mcp", start_timeout=start_timeout
    )
    try:
        listed = server.listed_tools()
    except McpStartError as exc:
        raise ValueError(str(exc)) from None
    if not listed:
        raise ValueError(f"the MCP server {server.described()} lists no tools")
    return [tool.to_openai() for tool in listed]


@click.command("init")
@click.argument("directory", default=".", metavar="[DIR]", type=click.Path(file_okay=False))
@click.option(
    "--from-mcp",
    metavar="COMMAND",
    help="Write the tools of this MCP server (started over stdio, asked for tools/list) to "
    "tools.json instead of the sample tools.",
)
@click.option(
    "--mcp-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds the MCP server may take to answer tools/list.",
)
@click.option(
    "--mcp-start-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds the MCP server may take to start and answer initialize.",
)
@click.option("--force", is_flag=True, help="Replace the starter's files where they exist.")
def init_command(
    directory: str,
    from_mcp: str | None,
    mcp_timeout: float,
    mcp_start_timeout: float,
    force: bool,
) -> None:
    """Write a starter to DIR (default: here, made if missing): tools.json, five
    example cases, a CI workflow, a calibration stub and a README. `judge check` grades the
    cases at once. Exit 2, writing nothing, when one of its files exists (without --force)."""
    paths = [Path(directory, f.path) for f in starter_files(list(SAMPLE_TOOLS), None)]
    existing = [str(p) for p in paths if p.exists() or p.is_symlink()]
    if existing and not force:
        verb = "exists" if len(existing) == 1 else "exist"
        _refuse(f"{', '.join(existing)} already {verb}: nothing written (--force replaces)")
    tools = list(SAMPLE_TOOLS)
    if from_mcp is not None:
        try:
            tools = mcp_tools(from_mcp, mcp_timeout, mcp_start_timeout)
        except ValueError as exc:
            _refuse(str(exc))
    files = starter_files(tools, from_mcp)
    try:
        for file in files:
            target = Path(directory, file.path)
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, file.text.encode())
    except OSError as exc:  # the files written before it stay: --force writes them again
        _refuse(f"cannot write {exc.filename or directory}: {exc.strerror or exc}")
    _say_done(directory, files, from_mcp)


def _say_done(directory: str, files: list[StarterFile], source: str | None) -> None:
    width = max(len(f.path) for f in files)
    click.echo(f"wrote {directory}:")
    for file in files:
        click.echo(f"  {file.path:<{width}}  {file.about}")
    cases = os.path.normpath(os.path.join(directory, "cases.jsonl"))
    if source is not None:
        click.echo(
            "tools.json holds the server's tools; the example cases keep the sample shop's, "
            "to show what the checks decide: write cases for yours."
        )
    click.echo(
        "next: edit tools.json and cases.jsonl with your agent's real tools and replies, "
        f"then run: judge check {cases}\n"
        "  (the examples give 1 passed, 2 failed and 2 for the judge, exit 0; "
        "judge grade asks the judge)\n"
        f"calibration: calibration.jsonl shows hand labels; label more with judge sample "
        f"{cases} -o sample.jsonl, then judge review sample.jsonl (or judge label), "
        "then judge calibrate sample.jsonl"
    )


COMMANDS = (init_command,)
