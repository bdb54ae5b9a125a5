"""`judge check` / `judge grade` name the failing cases: `--format pretty`, `--format github`
and `--junit FILE`, read back by a real JUnit consumer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from junitparser import Failure, JUnitXml, Skipped

from judge.cli import main
from tests.chat_server import ChatServer
from tests.helpers import invoke
from tests.test_cli import FAILING, PASSING, UNGRADED, write


def check(*args: str) -> Any:
    return CliRunner().invoke(main, ["check", *args])


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    return write(tmp_path / "cases.jsonl", [PASSING, FAILING, "{not json", UNGRADED])


def test_pretty_names_each_failed_case_where_it_is(cases: Path, tmp_path: Path) -> None:
    result = check(str(cases), "-o", str(tmp_path / "r.jsonl"), "--format", "pretty")
    shown = result.stdout
    assert f"fail  {cases}:2" in shown
    assert 'WrongValue  call 0  /city  argument \'city\' is "Rome", expected "Paris"' in shown
    assert f"{cases}:3" in shown and "InvalidCase" in shown  # the unreadable line
    assert "pass  " not in shown and "ungraded  " not in shown
    assert "\x1b[" not in shown  # no colour off a terminal
    assert "summary" in shown  # then the table


def test_github_annotates_each_failure(cases: Path, tmp_path: Path) -> None:
    result = check(str(cases), "-o", str(tmp_path / "r.jsonl"), "--format", "github")
    lines = [line for line in result.stdout.splitlines() if line.startswith("::")]
    assert lines[0] == (
        f"::error file={cases},line=2,title=WrongValue::case 'fail' call 0 /city: "
        'argument \'city\' is "Rome", expected "Paris"'
    )
    assert lines[1].startswith(f"::error file={cases},line=3,title=InvalidCase::")
    assert len(lines) == 2


def test_junit_is_read_back_by_a_consumer(cases: Path, tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    result = check(str(cases), "-o", str(tmp_path / "r.jsonl"), "--junit", str(report))
    assert result.exit_code == 0, result.output
    xml = JUnitXml.fromfile(str(report))
    (suite,) = list(xml)
    assert (suite.tests, suite.failures, suite.skipped) == (4, 2, 1)
    by_name = {test.name: test for test in suite}
    assert set(by_name) == {"pass", "fail", "cases.jsonl:3", "ungraded"}
    assert by_name["pass"].is_passed
    (failure,) = by_name["fail"].result
    assert isinstance(failure, Failure) and failure.type == "WrongValue"
    assert "/city" in (failure.text or "")
    assert isinstance(by_name["ungraded"].result[0], Skipped)


def test_junit_never_writes_over_an_input(cases: Path, tmp_path: Path) -> None:
    before = cases.read_bytes()
    result = check(str(cases), "-o", str(tmp_path / "r.jsonl"), "--junit", str(cases))
    assert result.exit_code == 2
    assert cases.read_bytes() == before


def test_the_workers_give_the_same_views(tmp_path: Path) -> None:
    path = write(tmp_path / "cases.jsonl", [PASSING, FAILING, "{not json", UNGRADED] * 3)
    shown = []
    for jobs in ("1", "2"):
        report = tmp_path / f"j{jobs}.xml"
        result = check(str(path), "-o", str(tmp_path / "r.jsonl"), "--format", "github",
                       "--junit", str(report), "-j", jobs)  # fmt: skip
        shown.append((result.stdout, report.read_text()))
    assert shown[0] == shown[1]
    assert shown[0][0].count("::error") == 6 and shown[0][1].count("<failure") == 6


def test_grade_names_the_failed_cases_too(server: ChatServer, tmp_path: Path) -> None:
    path = write(tmp_path / "cases.jsonl", [FAILING, "{not json"])
    report = tmp_path / "junit.xml"
    result = invoke(server, tmp_path, "grade", str(path), "-o", str(tmp_path / "r.jsonl"),
                    "--format", "pretty", "--junit", str(report))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"fail  {path}:1" in result.stdout and "WrongValue" in result.stdout
    (suite,) = list(JUnitXml.fromfile(str(report)))
    assert (suite.tests, suite.failures) == (2, 2)
