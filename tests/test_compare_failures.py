"""Comparisons that name what failed: providers as candidates (`MODEL@PROVIDER`), structural
error rates per candidate, the failing cases in the table, the JSON and the HTML report (a
case's details opened in Chromium), and the regression gate `--fail-if-worse`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge.cli import main
from tests.openrouter_server import openrouter
from tests.review_helpers import chromium, keep_screenshot
from tests.run_helpers import lines, run, write_cases

PAIR = "acme/m@fast,acme/m@cheap"


@pytest.fixture(scope="module")
def providers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Any]]]:
    """The four weather cases run on one model through two pinned providers: the runs file,
    and the chat bodies the endpoint received."""
    folder = tmp_path_factory.mktemp("providers")
    cases = write_cases(folder / "cases.jsonl")
    out = folder / "runs.jsonl"
    with openrouter() as fake:
        done = run(fake, cases, "--models", PAIR, "-o", str(out), "--format", "json")
        assert done.exit_code == 0, done.output
        yield out, fake.chats


def compare(runs: Path, *args: str) -> Any:
    return CliRunner().invoke(main, ["compare", str(runs), *args])


def test_each_candidate_pins_its_provider_and_nothing_else_differs(
    providers: tuple[Path, list[Any]],
) -> None:
    runs, chats = providers
    by_provider: dict[str, list[dict[str, Any]]] = {}
    for body in chats:
        assert body["model"] == "acme/m"
        pin = body["provider"]
        assert pin["allow_fallbacks"] is False and pin["require_parameters"] is True
        by_provider.setdefault(pin["order"][0], []).append(body)
    assert sorted(by_provider) == ["cheap", "fast"]

    def key(body: dict[str, Any]) -> str:
        return json.dumps({k: v for k, v in body.items() if k != "provider"}, sort_keys=True)

    assert sorted(map(key, by_provider["fast"])) == sorted(map(key, by_provider["cheap"]))
    assert {r["model"] for r in lines(runs)} == {"acme/m@fast", "acme/m@cheap"}


def test_structural_rates_and_failing_cases_in_the_json(providers: tuple[Path, list[Any]]) -> None:
    runs, _ = providers
    done = compare(runs, "--format", "json")
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    models = {m["model"]: m for m in report["models"]}
    cheap, fast = models["acme/m@cheap"], models["acme/m@fast"]
    assert cheap["structural"]["calls"] == 4 and fast["structural"]["calls"] == 4
    for kind in ("InvalidJson", "UnknownName", "SchemaMismatch"):
        rate = cheap["structural"][kind]
        assert rate["count"] == 1 and rate["value"] == 0.25
        assert 0 < rate["low"] < 0.25 < rate["high"] < 1
        assert fast["structural"][kind]["count"] == 0 and fast["structural"][kind]["low"] == 0
    failing = {f["id"]: f for f in cheap["failing"]}
    assert sorted(failing) == ["oslo", "paris", "rome"] and fast["failing"] == []
    assert failing["paris"]["kinds"][0] == "InvalidJson" and failing["paris"]["run"] == 1
    assert failing["oslo"]["kinds"][0] == "UnknownName"
    assert failing["rome"]["kinds"][0] == "SchemaMismatch"
    assert all(f["message"] for f in failing.values())
    [pair] = report["structural_pairs"]
    signs = {pair["a"]: 1, pair["b"]: -1}
    assert pair["difference"]["value"] * signs["acme/m@cheap"] == pytest.approx(0.75)
    assert not [w for w in report["warnings"] if "settings" in w]  # one run, one set of settings


def test_the_table_lists_the_failing_cases(providers: tuple[Path, list[Any]]) -> None:
    runs, _ = providers
    done = compare(runs)
    assert done.exit_code == 0, done.output
    table = done.stdout
    assert "structural errors" in table and "failing cases" in table
    [cheap] = [line for line in table.splitlines() if "acme/m@cheap" in line and "│     4 │" in line
               and "[4.6%, 69.9%] (1)" in line]  # fmt: skip
    assert cheap.count("25.0% [4.6%, 69.9%] (1)") == 3  # each structural kind, one call of 4
    rows = {line.split("│")[2].strip(): line for line in table.splitlines()
            if line.count("│") == 6 and "acme/m@cheap" in line}  # fmt: skip
    assert "InvalidJson" in rows["paris"] and "UnknownName" in rows["oslo"]
    assert "SchemaMismatch" in rows["rome"] and "lima" not in rows  # lima passed


@pytest.mark.parametrize(
    ("baseline", "metric", "code"),
    [
        pytest.param("acme/m@fast", "pass_rate", 1, id="the-cheap-one-is-worse"),
        pytest.param("acme/m@fast", "mean_f1", 1, id="worse-in-f1-too"),
        pytest.param("acme/m@cheap", "pass_rate", 0, id="nothing-worse-than-the-worst"),
        pytest.param("acme/m", "pass_rate", 2, id="not-a-model-of-the-runs"),
    ],
)
def test_the_regression_gate(
    providers: tuple[Path, list[Any]], baseline: str, metric: str, code: int
) -> None:
    runs, _ = providers
    done = compare(runs, "--fail-if-worse", baseline, "--metric", metric, "--format", "json")
    assert done.exit_code == code, done.output
    if code == 1:
        assert f"acme/m@cheap is worse than {baseline} in {metric}: -0.75" in done.stderr
    elif code == 0:
        assert f"no model is worse than {baseline}" in done.stderr
    else:
        assert "not a model of these runs" in done.stderr


def test_judge_run_takes_the_gate_too(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl")
    with openrouter() as fake:
        done = run(fake, cases, "--models", "good/m,bad/m", "-o", str(tmp_path / "runs.jsonl"),
                   "--fail-if-worse", "good/m")  # fmt: skip
    assert done.exit_code == 1, done.output
    assert "bad/m is worse than good/m in pass_rate" in done.stderr


def test_a_provider_pinned_on_the_embedded_model_is_refused(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl")
    with openrouter() as fake:
        done = run(fake, cases, "--models", "local@fast,good/m@", "-o", str(tmp_path / "r.jsonl"))
        assert fake.chats == []  # refused before any request
    assert done.exit_code != 0
    assert "local@fast: a provider is pinned as MODEL@PROVIDER" in done.output
    assert "good/m@: a provider is pinned" in done.output


def test_the_html_report_opens_a_failing_case_in_chromium(
    providers: tuple[Path, list[Any]], tmp_path: Path
) -> None:
    executable = chromium()
    from playwright.sync_api import sync_playwright

    runs, _ = providers
    page_file = tmp_path / "report.html"
    done = compare(runs, "--html", str(page_file))
    assert done.exit_code == 0, done.output
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(page_file.as_uri())
            row = page.locator("table.failing[data-model='acme/m@cheap'] tr[data-case='rome']")
            assert row.locator("td").first.inner_text().startswith("rome")
            assert "passes for acme/m@fast" in row.locator("td").first.inner_text()
            opened = row.locator("details pre").first
            assert not opened.is_visible()  # closed until asked
            row.locator("summary").click()
            opened.wait_for(state="visible")
            assert "get_weather" in opened.inner_text()  # the reply with its call
            assert "SchemaMismatch" in row.locator("details").inner_text()
            assert page.locator("table.failing[data-model='acme/m@fast']").count() == 0
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
            keep_screenshot(shot, "report.png")
        finally:
            browser.close()
