"""Invariance probes: each change, and a judge that flips on one of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from judge.cases._case import Case
from judge.checks._outcome import ArgumentVerdict, JudgeOutcome, SelectionVerdict
from judge.checks._result import CaseResult
from judge.cli import main
from judge.judging._probes import probed, verdicts
from tests.chat_server import answer, serving, with_logprobs
from tests.helpers import call, case, invoke

TWO_CALLS = case(
    [call("get_weather", {"city": "Paris", "units": "celsius"}), call("get_time", {})],
) | {"id": "two"}


def read(data: dict[str, Any]) -> Case:
    return Case.model_validate(data)


def test_each_probe_changes_only_what_it_says() -> None:
    original = read(TWO_CALLS)
    tools = probed(original, "tool_order")
    assert tools is not None
    assert [t.name for t in tools.tools] == ["get_time", "get_weather"]
    assert tools.tool_calls == original.tool_calls
    calls = probed(original, "call_order")
    assert calls is not None and calls.tools == original.tools
    assert [c.name for c in calls.tool_calls] == ["get_time", "get_weather"]
    ids = probed(original, "call_ids")
    assert ids is not None
    assert [c.id for c in ids.tool_calls] == ["probe_0", "probe_1"]
    assert [c.arguments for c in ids.tool_calls] == [c.arguments for c in original.tool_calls]
    keys = probed(original, "key_order")
    assert keys is not None
    assert json.loads(keys.tool_calls[0].arguments) == json.loads(original.tool_calls[0].arguments)
    assert list(json.loads(keys.tool_calls[0].arguments)) == ["units", "city"]
    assert keys.tool_calls[1] == original.tool_calls[1]  # {} has no order to change
    assert keys.id == original.id


def test_a_probe_that_changes_nothing_does_not_apply() -> None:
    one = read(case([call("get_weather", {"city": "Paris"})], tools=[]) | {"id": "one"})
    assert [probed(one, p) is None for p in ("tool_order", "call_order", "key_order")] == [
        True,
        True,
        True,
    ]
    no_ids = read(case([{"name": "get_weather", "arguments": {}}]))
    assert probed(no_ids, "call_ids") is None


def test_call_verdicts_are_compared_in_the_original_order() -> None:
    def result(args: list[str]) -> CaseResult:
        outcome = JudgeOutcome(
            status="ok",
            selection=SelectionVerdict(reasoning="", verdict="correct", category="right_call"),
            arguments=tuple(
                ArgumentVerdict(call=i, reasoning="", verdict=v)  # type: ignore[arg-type]
                for i, v in enumerate(args)
            ),
        )
        return CaseResult(
            id="x",
            tool_selection=None,
            schema_valid=None,
            argument_values=None,
            passed=None,
            judge=outcome,
        )

    before = verdicts(result(["correct", "incorrect"]), 2)
    assert verdicts(result(["incorrect", "correct"]), 2, "call_order") == before
    assert verdicts(result(["correct", "incorrect"]), 2, "call_order") != before


def order_sensitive(body: dict[str, Any]) -> Any:
    # A judge that says "incorrect" whenever get_time is listed before get_weather.
    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    flipped = prompt.index("get_time") < prompt.index("get_weather")
    return answer(body, "incorrect" if flipped else "correct")


def test_a_judge_that_flips_on_tool_order_is_reported(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(TWO_CALLS) + "\n")
    with serving(order_sensitive) as server:
        done = CliRunner().invoke(
            main,
            [
                "probe",
                str(cases),
                "--probes",
                "tool_order,call_ids,key_order",
                "--format",
                "json",
                "--base-url",
                server.url,
                "--model",
                "m",
                "--cache-dir",
                str(tmp_path / "cache"),
            ],
        )
    assert done.exit_code == 0, done.output
    report = {p["probe"]: p for p in json.loads(done.stdout)["probes"]}
    assert report["tool_order"]["flipped_cases"] == ["two"]
    assert report["tool_order"]["flip_rate"] == 1.0
    assert report["call_ids"]["applied"] == 1 and report["call_ids"]["flipped"] == 0
    assert report["key_order"]["flipped"] == 0


def test_an_unknown_probe_is_refused(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(TWO_CALLS) + "\n")
    done = CliRunner().invoke(main, ["probe", str(cases), "--probes", "tool_order,colour"])
    assert done.exit_code == 2
    assert "colour" in done.output


def test_calibrate_adds_the_probe_table_to_the_record_and_the_report(tmp_path: Path) -> None:
    sample = tmp_path / "sample.jsonl"
    labelled = []
    for i in range(12):
        label = "correct" if i % 2 else "incorrect"
        labelled.append(TWO_CALLS | {"id": f"s{i}", "labels": {"selection": label}})
    sample.write_text("".join(json.dumps(c) + "\n" for c in labelled))
    record, report = tmp_path / "calibration.json", tmp_path / "report.html"
    with serving(order_sensitive) as server:
        done = CliRunner().invoke(
            main,
            ["calibrate", str(sample), "-o", str(record), "--report", str(report),
             "--probes", "tool_order,call_ids", "--base-url", server.url, "--model", "m",
             "--cache-dir", str(tmp_path / "cache")],
        )  # fmt: skip
    assert done.exit_code == 1, done.output  # kappa 0: every verdict is "correct"
    probes = {p["probe"]: p for p in json.loads(record.read_text())["probes"]}
    assert probes["tool_order"]["flipped"] == 12 and probes["tool_order"]["flip_rate"] == 1.0
    assert probes["call_ids"]["flipped"] == 0
    assert "Invariance probes" in report.read_text() and "invariance probes" in done.output


def unsure_on_tool_order(body: dict[str, Any]) -> Any:
    # Always "correct", but only sure of it when get_weather is listed first.
    prompt = "\n".join(str(m.get("content")) for m in body["messages"])
    sure = prompt.index("get_weather") < prompt.index("get_time")
    at = {"correct": 0.95, "inc": 0.05} if sure else {"correct": 0.6, "inc": 0.4}
    return with_logprobs(answer(body), {"verdict": at})


def test_probe_takes_abstention_and_compares_the_label_leaned_to(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(TWO_CALLS) + "\n")
    with serving(unsure_on_tool_order) as server:
        probe = ("probe", str(cases), "--probes", "tool_order", "--format", "json")
        done = invoke(server, tmp_path, *probe, "--abstain-below", "0.9")
        graded = invoke(server, tmp_path, "grade", str(cases), "--abstain-below", "0.9")
    assert done.exit_code == 0, done.output
    [report] = json.loads(done.stdout)["probes"]
    # Reversed, the judge abstains where it was sure; it leans the same way: not a flip.
    assert report["applied"] == 1 and report["flipped"] == 0
    assert graded.exit_code == 0 and '"uncertain"' not in graded.stdout  # sure as listed
