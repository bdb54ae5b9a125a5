"""What the starter `judge init` writes holds: the sample shop's tools, its five cases and
calibration stub, the outlines written in their place for an MCP server's tools, the CI
workflow and the README.

The cases carry no tools: every command that grades them is given `--tools tools.json`. The
calibration stub keeps its own (the sample shop's), since `judge calibrate` reads it as it is,
whatever tools.json becomes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

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
    """A case of the sample shop, without tools (given once, by `--tools tools.json`):
    `reply` is the candidate's text or its one call; `expected` the one call it should make,
    or None for no call at all."""
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
        "response": response,
        "expected_calls": calls,
        **extra,
    }


def _order(order: int, **arguments: Any) -> dict[str, Any]:
    return {"order_id": f"ord_{order}", **arguments}


def starter_cases() -> list[dict[str, Any]]:
    """The five cases, each with `meta.shows`: what `judge check --tools tools.json` says of
    it, and why."""
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
            meta={"shows": "passed: no call, as expected, and an answer in text"},
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
    """A stub of a hand-labelled sample, with the sample shop's tools: the labels follow the
    labelling rule (arguments not labelled where there is nothing to judge)."""
    right = ("issue_refund", _order(5120, reason="wrong_item"))
    tools = list(SAMPLE_TOOLS)
    return [
        _case(
            "cal-refund-right",
            "Refund order ord_5120, you sent the wrong size.",
            right,
            right,
            tools=tools,
            labels={"selection": "correct", "arguments": "correct"},
        ),
        _case(
            "cal-refund-wrong-order",
            "Please refund order ord_5121.",
            ("issue_refund", _order(5112)),
            ("issue_refund", _order(5121)),
            tools=tools,
            labels={"selection": "correct", "arguments": "incorrect"},
        ),
        _case(
            "cal-refund-instead-of-cancel",
            "Cancel ord_5122, I don't need it any more.",
            ("issue_refund", _order(5122)),
            ("cancel_order", _order(5122)),
            tools=tools,
            labels={"selection": "incorrect"},
        ),
        _case(
            "cal-call-instead-of-ask",
            "I want a refund.",
            ("issue_refund", _order(1)),
            None,
            tools=tools,
            expected_behavior="ask",
            labels={"selection": "incorrect"},
        ),
    ]


OUTLINE_REQUEST = "TODO: a request that needs {}"
"""The placeholder user request of an outline."""


def outline_cases(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One outline per tool (in OpenAI form), marked `"draft": true`, which every command
    refuses as an `InvalidCase` until it is filled in: a placeholder request, and the tool
    expected with a placeholder for each argument its schema requires."""
    outlines = []
    for tool in tools:
        name = tool["function"]["name"]
        schema = tool["function"].get("parameters") or {}
        properties = schema.get("properties") or {}
        arguments = {
            key: _placeholder(properties.get(key))
            for key in schema.get("required") or ()
            if isinstance(key, str)
        }
        outlines.append(
            {
                "id": name,
                "draft": True,
                "messages": [{"role": "user", "content": OUTLINE_REQUEST.format(name)}],
                "expected_calls": [{"name": name, "arguments": arguments}],
                "expected_behavior": "call",
            }
        )
    return outlines


def _placeholder(schema: Any) -> str:
    """`TODO: number`: what an argument's value should be, to write in its place."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    return f"TODO: {kind}" if isinstance(kind, str) else "TODO"


_WORKFLOW = """\
# Grades the cases on every push and pull request: each failure is an annotation on its line
# of the cases file, the run fails below a pass rate of 80%, and the JUnit report is kept.
# GitHub reads workflows from .github/workflows/ at the root of the repository only: if
# `judge init` wrote this elsewhere, move it there and give CASES and TOOLS from the root.
name: judge
on: [push, pull_request]
env:
  CASES: cases.jsonl
  TOOLS: tools.json
  # TODO: where your copy of judge lives (it is not on PyPI): its git repository, pinned to a
  # tag or commit (git+https://github.com/OWNER/REPO@REF) so that CI keeps the verdicts you
  # tried{written_by}, or a folder of this repository ("./vendor/judge").
  JUDGE: "tool-call-judge @ git+https://github.com/OWNER/REPO"
jobs:
  check:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: pip install "$JUDGE"
      - run: >-
          judge check "$CASES" --tools "$TOOLS" --fail-under 0.8 --format github
          --junit judge-junit.xml
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: judge-junit
          path: judge-junit.xml
"""

_CASES_NOTE = """\
one case per line: the conversation, the agent's reply
  (`response`) and what it should have done (`expected_calls`, `expected_behavior`: call,
  no_call or ask). The five examples show what `judge check` decides; `meta.shows` says what
  each one gives. Replace them with your agent's real conversations and replies."""

_OUTLINES_NOTE = """\
an outline per tool of the server, marked `"draft": true`: a
  placeholder request (`TODO: ...`) and the tool expected, with a placeholder for each
  required argument. Every command reports an outline as unfinished (`InvalidCase`, never
  passed) until you write the user's request, the values the call should have and the
  agent's reply (`response`), and remove `"draft"`."""

_README = """\
# Grading the tool calls of your agent

Written by `judge init`. Each file, and what to do with it:

- `tools.json`: the tools your agent is offered, in OpenAI form, given once for every case
  (`--tools tools.json`; a case with its own `tools` keeps them). {tools_note}
- `cases.jsonl`: {cases_note}
  An expected value may be `{{"$any": [v1, v2]}}` (any of them), with `"$optional": true`
  (may be left out), or another matcher, at any depth: `$number` (with `abs`/`rel`), `$int`,
  `$string` (with `case`, `space`, `punct`), `$regex`, `$date`, `$unordered`, `$object`,
  `$absent`, `$judge` (the judge decides); `judge schema case` lists them all.
- `calibration.jsonl`: cases labelled by hand (`labels`: selection, arguments), with the
  sample shop's tools: the start of a sample to measure the LLM judge against people before
  trusting it: grow it to a hundred or so (step 3), then `judge calibrate` it.
- `.github/workflows/judge.yml`: CI that runs `judge check` and fails below a pass rate of
  80%. First say where it installs judge from (`JUDGE`, at the top). The examples fail on
  purpose: it passes once the cases are yours.

Next:

1. Edit `tools.json` and `cases.jsonl`, then run `judge check cases.jsonl --tools
   tools.json`: a result per case, then a summary; exit 0 whatever the verdicts (with
   `--fail-under RATE`, exit 1 below that pass rate).
2. `judge grade cases.jsonl --tools tools.json` asks the LLM judge about what code cannot
   decide (the `no-call` and `ask` cases).
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
    `source` (then the cases are outlines, one per tool)."""
    names = ", ".join(t["function"]["name"] for t in tools)
    calibration = calibration_cases()
    if source is None:
        cases = starter_cases()
        about = f"{len(cases)} cases: {', '.join(c['id'] for c in cases)}"
        note, cases_note = "The sample shop's tools: put your own here.", _CASES_NOTE
    else:
        cases = outline_cases(tools)
        about = f"{len(cases)} outlines to fill in, one per tool"
        note, cases_note = f"Listed from the MCP server `{source}`.", _OUTLINES_NOTE
    try:  # the verdicts of this version, to pin
        written_by = f" (judge {version('tool-call-judge')} wrote this file)"
    except PackageNotFoundError:
        written_by = ""
    readme = _README.format(tools_note=note, cases_note=cases_note)
    return [
        StarterFile("tools.json", _json(tools), f"{len(tools)} tools: {names}"),
        StarterFile("cases.jsonl", _lines(cases), about),
        StarterFile(
            "calibration.jsonl",
            _lines(calibration),
            f"{len(calibration)} hand-labelled cases, the start of a calibration sample",
        ),
        StarterFile(
            ".github/workflows/judge.yml",
            _WORKFLOW.format(written_by=written_by),
            "CI: judge check on every push, --fail-under 0.8 (say where to install judge from)",
        ),
        StarterFile("README.md", readme, "what each file is, what next"),
    ]


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
