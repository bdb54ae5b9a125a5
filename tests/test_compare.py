"""The statistics of `judge compare`, and the command on runs made by `judge run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from judge.cli import main
from judge.runs._compare import compare_runs, paired_difference
from judge.runs._intervals import wilson
from judge.runs._records import RunRecord
from tests.openrouter_server import COMPLETION_PRICE, PROMPT_PRICE, OpenRouterServer
from tests.run_helpers import lines, run, write_cases


@pytest.mark.parametrize(
    ("rate", "n", "low", "high"),
    [
        pytest.param(1.0, 10, 0.7225, 1.0, id="all-pass-is-not-certain"),
        pytest.param(0.0, 10, 0.0, 0.2775, id="all-fail"),
        pytest.param(0.5, 100, 0.4038, 0.5962, id="half"),
    ],
)
def test_wilson(rate: float, n: int, low: float, high: float) -> None:
    interval = wilson(rate, n)
    assert (interval.low, interval.high) == pytest.approx((low, high), abs=1e-4)


def test_the_paired_bootstrap_is_seeded_and_paired() -> None:
    a = {f"c{i}": 1.0 for i in range(20)}
    b = {f"c{i}": 1.0 if i < 15 else 0.0 for i in range(20)} | {"only-b": 0.0}
    first = paired_difference("a", a, "b", b, samples=2000, seed=3)
    assert first == paired_difference("a", a, "b", b, samples=2000, seed=3)
    assert first.cases == 20  # the case only b has is left out
    assert first.difference is not None
    assert first.difference.value == pytest.approx(0.25)
    assert 0 < first.difference.low < 0.25 < first.difference.high <= 0.6
    assert first.significant
    same = paired_difference("a", a, "a2", dict(a), samples=500)
    assert same.difference is not None and (same.difference.low, same.difference.high) == (0, 0)
    assert not same.significant


def record(model: str, case: str, run: int, passed: bool | None, **extra: object) -> RunRecord:
    return RunRecord.model_validate(
        {"model": model, "case_id": case, "run": run, "passed": passed, **extra}
    )


def test_runs_are_averaged_per_case_and_errors_left_out() -> None:
    records = [
        record("m", "a", 1, True, latency_s=1.0, settings={"t": 0}),
        record("m", "a", 2, False, latency_s=3.0, settings={"t": 0}),
        record("m", "b", 1, True, latency_s=2.0, settings={"t": 0}),
        record("m", "b", 2, None, error="boom", settings={"t": 0}),
        record("n", "a", 1, True, settings={"t": 1}),
    ]
    found = compare_runs(records)
    m = next(s for s in found.models if s.model == "m")
    assert m.pass_rate is not None and m.pass_rate.value == pytest.approx(0.75)
    assert (m.cases, m.errors, m.varying) == (2, 1, ["a"])
    assert m.latency_p50 == 2.0 and m.latency_p95 == pytest.approx(2.9)
    assert any("not all asked with the same settings" in w for w in found.warnings)
    assert any("m: 1 of 4 requests failed" in w for w in found.warnings)


@pytest.mark.parametrize("n", [1, 10, 13, 25])
def test_the_interval_always_holds_the_rate(n: int) -> None:
    # regression: rounding put the upper bound of an all-pass interval at 0.9999999999999999,
    # and the HTML report's error bars refused the negative length
    for rate in (0.0, 1.0):
        interval = wilson(rate, n)
        assert interval.low <= rate <= interval.high


def test_settings_that_vary_by_case_alike_for_every_model_are_fair() -> None:
    # regression: settings were pooled over all models, so a file whose cases without tools
    # were sent without tool_choice warned that a fair comparison was not fair
    with_tools = {"tool_choice": "auto", "temperature": 0.0}
    without = {"temperature": 0.0}
    records = [
        record(model, case, 1, True, settings=settings)
        for model in ("m", "n")
        for case, settings in (("tools", with_tools), ("chat", without))
    ]
    assert not any("same settings" in w for w in compare_runs(records).warnings)
    changed = [*records[:-1], record("n", "chat", 1, True, settings={"temperature": 1.0})]
    assert any("not all asked with the same settings" in w for w in compare_runs(changed).warnings)


def verdict(selection: str, arguments: str | None) -> dict[str, object]:
    calls = [] if arguments is None else [{"call": 0, "reasoning": "", "verdict": arguments}]
    return {
        "status": "ok",
        "selection": {"reasoning": "", "verdict": selection, "category": "right_call"},
        "arguments": calls,
    }


def test_the_judge_breakdown_counts_what_the_judge_passed() -> None:
    records = [
        record("m", "a", 1, True, judge=verdict("correct", "correct")),
        record("m", "b", 1, True, judge=verdict("correct", None)),  # nothing to judge: passes
        record("m", "c", 1, True, judge=verdict("correct", "incorrect")),
        record("m", "d", 1, True, judge=verdict("incorrect", "correct")),
        record("m", "e", 1, True, judge={"status": "judge_error", "error": "no verdict"}),
    ]
    [stats] = compare_runs(records).models
    assert stats.breakdown["judge"] == pytest.approx(2 / 4)  # the judge_error is left out


def test_a_worse_model_ranks_lower_and_the_difference_is_sure(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl")
    out = tmp_path / "runs.jsonl"
    result = run(fake, cases, "--models", "bad/m,good/m", "-o", str(out), "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert [m["model"] for m in report["models"]] == ["good/m", "bad/m"]
    good, bad = report["models"]
    assert (good["pass_rate"]["value"], bad["pass_rate"]["value"]) == (1.0, 0.0)
    assert good["pass_rate"]["low"] == pytest.approx(0.5101, abs=1e-3)  # Wilson, n = 4 cases
    assert bad["breakdown"]["tool_selection"] == 0.0 and bad["breakdown"]["schema_valid"] == 1.0
    pair = report["pairs"][0]
    assert (pair["a"], pair["b"], pair["cases"]) == ("good/m", "bad/m", 4)
    assert pair["difference"] == {"value": 1.0, "low": 1.0, "high": 1.0}
    assert pair["significant"] is True
    # cost from the catalog's per-token prices: 4 responses of 50 + 10 tokens
    assert good["cost_usd"] == pytest.approx(4 * (50 * PROMPT_PRICE + 10 * COMPLETION_PRICE))
    record = lines(out)[0]
    assert list(record)[:11] == [
        "model", "case_id", "run", "response", "tool_selection", "schema_valid",
        "argument_values", "passed", "tool_assertions", "call_scores", "failures",
    ]  # fmt: skip
    assert (good["mean_f1"], bad["mean_f1"]) == (1.0, 0.0)
    assert {"usage", "latency_s"} <= record.keys() and "judge" not in record
    assert record["response"]["choices"][0]["message"]["tool_calls"]  # stored as returned


def test_pass_hat_k_and_varying_cases_over_runs(fake: OpenRouterServer, tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    out = tmp_path / "runs.jsonl"
    result = run(fake, cases, "--models", "flaky/m", "--runs", "3", "-o", str(out),
                 "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    flaky = json.loads(result.stdout)["models"][0]
    # every case passes 2 runs of 3 (right on the 1st and 3rd request)
    assert flaky["pass_hat_k"] == pytest.approx({"1": 2 / 3, "2": 1 / 3, "3": 0.0})
    assert flaky["pass_at_k"] == pytest.approx({"1": 2 / 3, "2": 1.0, "3": 1.0})
    assert sorted(flaky["varying"]) == ["oslo", "paris"]
    table = run(fake, cases, "--models", "flaky/m", "--runs", "3", "-o", str(out))
    assert "pass^3" in table.stdout and "outcome varies between runs" in table.stdout
    # a run left undecided drops its case out of pass^3, and the table says over how many
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    for row in rows:
        if row["case_id"] == "oslo" and row["run"] == 2:
            row["passed"] = None
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    shown = CliRunner().invoke(main, ["compare", str(out), "--format", "json"])
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["models"][0]["pass_k_cases"] == {"1": 2, "2": 2, "3": 1}
    table = CliRunner().invoke(main, ["compare", str(out)], terminal_width=200)
    assert "(1 of 2 cases)" in table.stdout


def test_compare_writes_an_html_report_with_a_plot_per_metric(
    fake: OpenRouterServer, tmp_path: Path
) -> None:
    cases = write_cases(tmp_path / "c.jsonl", ("Paris", "Oslo"))
    out = tmp_path / "runs.jsonl"
    assert (
        run(fake, cases, "--models", "good/m,flaky/m", "--runs", "2", "-o", str(out)).exit_code == 0
    )
    report = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["compare", str(out), "--html", str(report)])
    assert result.exit_code == 0, result.stderr
    assert "good/m" in result.stdout and "paired differences" in result.stdout
    page = report.read_text()
    assert page.count("<img") == 7
    assert "flaky/m" in page and "Wilson" in page


def test_a_reversed_pair_is_the_bootstrap_of_the_other_order() -> None:
    """The gate reads `b - a` off the comparison's `a - b` pair: the same figures as a
    bootstrap of `b - a` itself, not an approximation."""
    import random

    rng = random.Random(7)
    a = {f"c{i}": rng.choice([0.0, 0.5, 1.0]) for i in range(40)}
    b = {f"c{i}": rng.choice([0.0, 1.0]) for i in range(40)}
    mirrored = paired_difference("a", a, "b", b).reversed()
    direct = paired_difference("b", b, "a", a)
    assert (mirrored.a, mirrored.b, mirrored.cases) == (direct.a, direct.b, direct.cases)
    assert mirrored.difference is not None and direct.difference is not None
    for got, want in zip(
        (mirrored.difference.value, mirrored.difference.low, mirrored.difference.high),
        (direct.difference.value, direct.difference.low, direct.difference.high),
        strict=True,
    ):
        assert got == pytest.approx(want, abs=1e-12)
