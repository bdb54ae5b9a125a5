"""The per-case failure reports: the terminal listing, GitHub annotations, the JUnit file."""

from __future__ import annotations

import io
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from junitparser import Failure as JUnitFailure
from junitparser import JUnitXml, Skipped, TestCase

from judge import InputError, check
from judge.checks._outcome import JudgeOutcome
from judge.checks._verdict import decide
from judge.cli._reporters import (
    GithubReporter,
    JUnitWriter,
    Located,
    PrettyReporter,
    is_failed,
    visible,
)
from tests.helpers import call, case

WRONG_ORDER_ID = 'argument \'order_id\' is "ord_7282", expected "ord_7281"'
HOSTILE = "\x1b[31m ]]> <script>alert(1)</script> & \x00 \udc80"


def failure(kind: str, message: str, call: int | None = None, path: str = "") -> dict[str, Any]:
    return {"call": call, "kind": kind, "path": path, "message": message}


def result(
    id: str,
    passed: bool | None,
    *failures: dict[str, Any],
    judge: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A result as `CaseResult.to_json_dict()` gives it (the checks themselves left null;
    `passed` the checks', made the one verdict by the product's rule when a judge is given)."""
    data: dict[str, Any] = {
        "id": id,
        "tool_selection": None,
        "schema_valid": None,
        "argument_values": None,
        "passed": passed,
        "tool_assertions": None,
        "call_scores": None,
        "failures": list(failures),
    }
    if judge is not None:
        verdict = decide(passed, JudgeOutcome.model_validate(judge))
        data |= {"judge": judge, "passed": verdict.passed, "decided_by": verdict.decided_by}
        if verdict.judge_dispute:
            data["judge_dispute"] = True
    return data


def judged(
    selection: str = "correct", arguments: tuple[str, ...] = (), answer: str | None = None
) -> dict[str, Any]:
    """A `judge grade` outcome with these verdicts, each with its own reasoning."""
    return {
        "status": "ok",
        "selection": {
            "reasoning": f"selection was {selection}",
            "verdict": selection,
            "category": "right_call" if selection == "correct" else "wrong_tool",
        },
        "arguments": [
            {
                "call": i,
                "reasoning": f"call {i} was {verdict}",
                "verdict": verdict,
                "problems": ["wrong_entity"] if verdict == "incorrect" else [],
            }
            for i, verdict in enumerate(arguments)
        ],
        "answer": None
        if answer is None
        else {
            "reasoning": "it claims a refund",
            "verdict": answer,
            "category": "fabricated_action",
        },
    }


REFUND = result("refund-1", False, failure("WrongValue", WRONG_ORDER_ID, 0, "/order_id"))
SEVERAL = result(
    "several",
    False,
    failure("WrongValue", 'argument \'city\' is "Lyon", expected "Paris"', 0, "/city"),
    failure("MissingCall", "expected call get_time was not made", None, "/expected_calls/1"),
    failure("WrongValue", "argument 'days' is 3, expected 2", 0, "/days"),
)
PASSED = result("fine", True)
NOT_GRADABLE = result("no-reference", None)
INVALID = result(
    "b.jsonl:2",
    None,
    failure(
        "InvalidCase", "b.jsonl:2 at /messages: Input should be a valid list", None, "/messages"
    ),
)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(REFUND, True, id="passed-false"),
        pytest.param(PASSED, False, id="passed"),
        pytest.param(NOT_GRADABLE, False, id="nothing-to-grade-against"),
        pytest.param(INVALID, True, id="an-unreadable-line-counts-as-failed"),
        pytest.param(
            check([{"id": "x", "messages": 5}])[0].to_json_dict(), True, id="invalid-from-check"
        ),
    ],
)
def test_is_failed(data: dict[str, Any], expected: bool) -> None:
    assert is_failed(data) is expected


# --- JUnit ---------------------------------------------------------------------------------


def write_junit(path: Path, items: list[Located], **options: Any) -> Path:
    writer = JUnitWriter(path, **options)
    for item in items:
        writer.add(item)
    writer.close()
    return path


def mixed_run(tmp_path: Path) -> Path:
    return write_junit(
        tmp_path / "report.xml",
        [
            Located("a.jsonl", 1, PASSED),
            Located("a.jsonl", 2, SEVERAL),
            Located("a.jsonl", 3, NOT_GRADABLE),
            Located("b.jsonl", 1, REFUND),
            Located("b.jsonl", 2, INVALID),
        ],
        name="judge check",
    )


def test_junit_counts(tmp_path: Path) -> None:
    report = JUnitXml.fromfile(str(mixed_run(tmp_path)))
    assert (report.name, report.tests, report.failures, report.errors, report.skipped) == (
        "judge check",
        5,
        3,
        0,
        1,
    )
    suites = {suite.name: (suite.tests, suite.failures, suite.skipped) for suite in report}
    assert suites == {"a.jsonl": (3, 1, 1), "b.jsonl": (2, 2, 0)}


SEVERAL_TEXT = (
    'WrongValue  call 0  /city  argument \'city\' is "Lyon", expected "Paris"\n'
    "MissingCall  /expected_calls/1  expected call get_time was not made\n"
    "WrongValue  call 0  /days  argument 'days' is 3, expected 2"
)


@pytest.mark.parametrize(
    ("suite", "name", "outcome", "kind", "message", "text"),
    [
        pytest.param("a.jsonl", "fine", "passed", None, None, None, id="passed"),
        pytest.param(
            "a.jsonl",
            "several",
            "failure",
            "WrongValue",
            "3 failures: WrongValue, MissingCall",
            SEVERAL_TEXT,
            id="several-failures-one-line-each",
        ),
        pytest.param(
            "a.jsonl",
            "no-reference",
            "skipped",
            None,
            "not gradable: nothing to grade it against",
            None,
            id="not-gradable",
        ),
        pytest.param(
            "b.jsonl",
            "refund-1",
            "failure",
            "WrongValue",
            "1 failure: WrongValue",
            f"WrongValue  call 0  /order_id  {WRONG_ORDER_ID}",
            id="one-failure",
        ),
        pytest.param(
            "b.jsonl",
            "b.jsonl:2",
            "failure",
            "InvalidCase",
            "1 failure: InvalidCase",
            "InvalidCase  /messages  b.jsonl:2 at /messages: Input should be a valid list",
            id="unreadable-line",
        ),
    ],
)
def test_junit_case_as_junitparser_reads_it(
    tmp_path: Path,
    suite: str,
    name: str,
    outcome: str,
    kind: str | None,
    message: str | None,
    text: str | None,
) -> None:
    report = JUnitXml.fromfile(str(mixed_run(tmp_path)))
    found = [c for s in report if s.name == suite for c in s if c.name == name]
    assert len(found) == 1
    testcase: TestCase = found[0]
    assert testcase.classname == suite
    assert testcase.time == 0
    if outcome == "passed":
        assert testcase.is_passed
        return
    (entry,) = testcase.result
    assert isinstance(entry, JUnitFailure if outcome == "failure" else Skipped)
    assert (entry.type, entry.message, entry.text) == (kind, message, text)


def test_junit_file_and_line_attributes(tmp_path: Path) -> None:
    root = ET.parse(mixed_run(tmp_path)).getroot()
    assert root.tag == "testsuites"
    found = [
        (suite.get("name"), c.get("name"), c.get("classname"), c.get("file"), c.get("line"))
        for suite in root.iter("testsuite")
        for c in suite.iter("testcase")
    ]
    assert found == [
        ("a.jsonl", "fine", "a.jsonl", "a.jsonl", "1"),
        ("a.jsonl", "several", "a.jsonl", "a.jsonl", "2"),
        ("a.jsonl", "no-reference", "a.jsonl", "a.jsonl", "3"),
        ("b.jsonl", "refund-1", "b.jsonl", "b.jsonl", "1"),
        ("b.jsonl", "b.jsonl:2", "b.jsonl", "b.jsonl", "2"),
    ]


def test_junit_unknown_line_has_no_line_attribute(tmp_path: Path) -> None:
    path = write_junit(tmp_path / "r.xml", [Located("<stdin>", None, REFUND)])
    (testcase,) = ET.parse(path).getroot().iter("testcase")
    assert "line" not in testcase.attrib
    assert testcase.get("file") == "<stdin>"


@pytest.mark.parametrize(
    ("hostile", "shown"),
    [
        pytest.param("\x1b[31m", "\\x1b[31m", id="terminal-escape"),
        pytest.param("]]>", "]]>", id="cdata-end"),
        pytest.param("<script>x</script>", "<script>x</script>", id="tags"),
        pytest.param("a & b", "a & b", id="ampersand"),
        pytest.param("nul\x00byte", "nul\\x00byte", id="nul-byte"),
        pytest.param("lone\udc80surrogate", "lone\\udc80surrogate", id="lone-surrogate"),
        pytest.param("bad\ufffe", "bad\\ufffe", id="xml-non-character"),
        pytest.param(HOSTILE, visible(HOSTILE), id="all-at-once"),
    ],
)
def test_junit_hostile_text_still_parses(tmp_path: Path, hostile: str, shown: str) -> None:
    data = result(f"id {hostile}", False, failure("WrongValue", f"message {hostile}", 0, "/x"))
    path = write_junit(tmp_path / "r.xml", [Located(f"src{hostile}.jsonl", 4, data)])
    (testcase,) = ET.parse(path).getroot().iter("testcase")
    assert testcase.get("name") == f"id {shown}"
    assert testcase.get("classname") == f"src{shown}.jsonl"
    (parsed,) = next(iter(JUnitXml.fromfile(str(path))))
    (entry,) = parsed.result
    assert entry.text == f"WrongValue  call 0  /x  message {shown}"


def test_junit_judge_verdicts(tmp_path: Path) -> None:
    rejected = result("judged-wrong", None, judge=judged("incorrect", ("correct", "incorrect")))
    items = [
        Located("a.jsonl", 1, rejected),
        Located("a.jsonl", 2, result("judged-right", None, judge=judged())),
        Located("a.jsonl", 3, result("abstained", None, judge=judged("uncertain"))),
    ]
    suite = next(iter(JUnitXml.fromfile(str(write_junit(tmp_path / "r.xml", items)))))
    outcomes = {c.name: c for c in suite}
    (entry,) = outcomes["judged-wrong"].result
    assert (entry.type, entry.message) == (
        "JudgeSelection",
        "2 failures: JudgeSelection, JudgeArguments",
    )
    assert entry.text == (
        "JudgeSelection  wrong_tool: selection was incorrect\n"
        "JudgeArguments  call 1  wrong_entity: call 1 was incorrect"
    )
    assert outcomes["judged-right"].is_passed
    (skipped,) = outcomes["abstained"].result
    assert isinstance(skipped, Skipped)
    assert (suite.tests, suite.failures, suite.skipped) == (3, 1, 1)


def test_junit_refuses_a_missing_folder_before_the_run(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no folder"):
        JUnitWriter(tmp_path / "nowhere" / "r.xml")


def test_junit_refuses_a_read_only_folder_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # os.access stands in for the permissions, which root (as in CI containers) bypasses
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(InputError, match="is not writable"):
        JUnitWriter(tmp_path / "r.xml")


def test_junit_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    target = tmp_path / "reports" / "junit.xml"
    target.parent.mkdir()
    target.write_text("old report")
    link = tmp_path / "latest.xml"
    link.symlink_to(target)
    write_junit(link, [Located("a.jsonl", 1, REFUND)])
    assert link.is_symlink()
    assert JUnitXml.fromfile(str(target)).failures == 1
    assert sorted(p.name for p in target.parent.iterdir()) == ["junit.xml"]


def test_junit_into_a_device_is_written_straight() -> None:
    write_junit(Path(os.devnull), [Located("a.jsonl", 1, REFUND)])
    assert not Path(os.devnull).is_file()


def test_junit_crash_while_writing_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.xml"
    path.write_text("old report")
    writer = JUnitWriter(path)
    writer.add(Located("a.jsonl", 1, REFUND))

    def explode(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(ET.ElementTree, "write", explode)
    with pytest.raises(OSError, match="disk full"):
        writer.close()
    assert path.read_text() == "old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.xml"]


def test_junit_replaces_an_earlier_report(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text("old report")
    write_junit(path, [Located("a.jsonl", 1, REFUND)])
    assert JUnitXml.fromfile(str(path)).failures == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.xml"]


# --- Pretty --------------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def pretty(items: list[dict[str, Any]], stream: io.StringIO | None = None, **options: Any) -> str:
    out = stream if stream is not None else io.StringIO()
    reporter = PrettyReporter(out, **options)
    for i, data in enumerate(items, start=1):
        reporter.add(Located("cases.jsonl", i, data))
    reporter.close()
    return out.getvalue()


def test_pretty_block() -> None:
    assert pretty([PASSED, REFUND, NOT_GRADABLE, SEVERAL]) == (
        "✗ refund-1  cases.jsonl:2\n"
        f"  WrongValue  call 0  /order_id  {WRONG_ORDER_ID}\n"
        "✗ several  cases.jsonl:4\n"
        '  WrongValue  call 0  /city  argument \'city\' is "Lyon", expected "Paris"\n'
        "  MissingCall  /expected_calls/1  expected call get_time was not made\n"
        "  WrongValue  call 0  /days  argument 'days' is 3, expected 2\n"
    )


@pytest.mark.parametrize(
    "items",
    [
        pytest.param([], id="no-case"),
        pytest.param([PASSED, NOT_GRADABLE], id="passed-and-not-gradable"),
        pytest.param([result("j", None, judge=judged(answer="uncertain"))], id="judge-uncertain"),
        pytest.param([result("j", None, judge={"status": "judge_error"})], id="judge-error"),
    ],
)
def test_pretty_prints_nothing_without_a_failed_case(items: list[dict[str, Any]]) -> None:
    assert pretty(items) == ""


def test_pretty_from_a_real_check() -> None:
    checked = check(
        [
            case(
                [call("get_weather", {"city": "Lyon"})],
                [{"name": "get_weather", "arguments": {"city": "Paris"}}],
            )
        ]
    )
    assert pretty([checked[0].to_json_dict()]) == (
        "✗ t  cases.jsonl:1\n"
        '  WrongValue  call 0  /city  argument \'city\' is "Lyon", expected "Paris"\n'
    )


def test_pretty_judge_verdicts() -> None:
    data = result(
        "graded",
        False,
        failure("WrongValue", WRONG_ORDER_ID, 0, "/order_id"),
        judge=judged("incorrect", ("incorrect", "correct"), answer="incorrect"),
    )
    assert pretty([data]) == (
        "✗ graded  cases.jsonl:1\n"
        f"  WrongValue  call 0  /order_id  {WRONG_ORDER_ID}\n"
        "  JudgeSelection  wrong_tool: selection was incorrect\n"
        "  JudgeArguments  call 0  wrong_entity: call 0 was incorrect\n"
        "  JudgeAnswer  fabricated_action: it claims a refund\n"
    )


def test_pretty_judge_alone_fails_a_case() -> None:
    data = result("no-reference", None, judge=judged(arguments=("incorrect",)))
    assert pretty([data]) == (
        "✗ no-reference  cases.jsonl:1\n"
        "  JudgeArguments  call 0  wrong_entity: call 0 was incorrect\n"
    )


@pytest.mark.parametrize(
    ("stream", "options", "environ", "coloured"),
    [
        pytest.param(io.StringIO(), {}, {}, False, id="not-a-terminal"),
        pytest.param(Terminal(), {}, {}, True, id="a-terminal"),
        pytest.param(Terminal(), {"color": False}, {}, False, id="a-terminal-color-false"),
        pytest.param(io.StringIO(), {"color": True}, {}, True, id="color-true"),
        pytest.param(Terminal(), {}, {"NO_COLOR": "1"}, False, id="no-color-set"),
    ],
)
def test_pretty_colour(
    monkeypatch: pytest.MonkeyPatch,
    stream: io.StringIO,
    options: dict[str, Any],
    environ: dict[str, str],
    coloured: bool,
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    shown = pretty([REFUND], stream, **options)
    assert ("\x1b[" in shown) is coloured
    assert "refund-1" in shown and WRONG_ORDER_ID in shown


@pytest.mark.parametrize(
    "color", [pytest.param(False, id="plain"), pytest.param(True, id="colour")]
)
@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param("[bold]x[/bold]", "[bold]x[/bold]", id="rich-markup-literal"),
        pytest.param("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m", id="ansi-escape"),
        pytest.param("\x9b31m", "\\x9b31m", id="c1-csi"),
        pytest.param("a\nb\rc", "a\\nb\\rc", id="newlines-stay-on-one-line"),
        pytest.param("\u202eevil", "\\u202eevil", id="bidi-override"),
        pytest.param(":smile: é 名", ":smile: é 名", id="printable-unicode-kept"),
        pytest.param("x" * 5000, "x" * 5000, id="long-message-not-cut"),
    ],
)
def test_pretty_untrusted_text(color: bool, text: str, shown: str) -> None:
    data = result(f"id{text}", False, failure("WrongValue", text, 0, f"/{text}"))
    out = pretty([data], color=color)
    plain = out
    for code in ("\x1b[1;31m", "\x1b[2m", "\x1b[33m", "\x1b[36m", "\x1b[0m"):
        plain = plain.replace(code, "")
    assert "\x1b" not in plain and "\x9b" not in plain
    assert plain == f"✗ id{shown}  cases.jsonl:1\n  WrongValue  call 0  /{shown}  {shown}\n"


def test_pretty_ascii_stream_gets_an_ascii_mark() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    PrettyReporter(stream).add(Located("cases.jsonl", 1, REFUND))
    stream.flush()
    assert raw.getvalue().decode().startswith("x refund-1  cases.jsonl:1\n")


# --- GitHub --------------------------------------------------------------------------------


def github(*items: Located) -> list[str]:
    out = io.StringIO()
    reporter = GithubReporter(out)
    for item in items:
        reporter.add(item)
    reporter.close()
    return out.getvalue().splitlines()


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        pytest.param(
            Located("cases.jsonl", 3, REFUND),
            [
                "::error file=cases.jsonl,line=3,title=WrongValue::case 'refund-1' call 0 "
                f"/order_id: {WRONG_ORDER_ID}"
            ],
            id="one-failure",
        ),
        pytest.param(
            Located("a.jsonl", 2, SEVERAL),
            [
                "::error file=a.jsonl,line=2,title=WrongValue::case 'several' call 0 /city: "
                'argument \'city\' is "Lyon", expected "Paris"',
                "::error file=a.jsonl,line=2,title=MissingCall::case 'several' "
                "/expected_calls/1: expected call get_time was not made",
                "::error file=a.jsonl,line=2,title=WrongValue::case 'several' call 0 /days: "
                "argument 'days' is 3, expected 2",
            ],
            id="one-line-per-failure",
        ),
        pytest.param(
            Located("<stdin>", 3, REFUND),
            [f"::error title=WrongValue::case 'refund-1' call 0 /order_id: {WRONG_ORDER_ID}"],
            id="stdin-has-no-file",
        ),
        pytest.param(
            Located("cases.jsonl", None, REFUND),
            [
                "::error file=cases.jsonl,title=WrongValue::case 'refund-1' call 0 "
                f"/order_id: {WRONG_ORDER_ID}"
            ],
            id="unknown-line",
        ),
        pytest.param(
            Located(
                "runs/a,b:c%.jsonl",
                7,
                result("x", False, failure("CallCount", "50% over\r\nlimit")),
            ),
            [
                "::error file=runs/a%2Cb%3Ac%25.jsonl,line=7,title=CallCount::"
                "case 'x': 50%25 over%0D%0Alimit"
            ],
            id="escaping",
        ),
        pytest.param(
            Located("a.jsonl", 1, result("x", False, failure("WrongValue", "a: b, c"))),
            ["::error file=a.jsonl,line=1,title=WrongValue::case 'x': a: b, c"],
            id="colon-and-comma-kept-in-the-message",
        ),
        pytest.param(
            Located(
                "a.jsonl",
                1,
                result(
                    "x\n::warning::y",
                    False,
                    failure("WrongValue", "\x1b[31mred\n::stop-commands::z"),
                ),
            ),
            [
                "::error file=a.jsonl,line=1,title=WrongValue::"
                "case 'x\\n::warning::y': \\x1b[31mred%0A::stop-commands::z"
            ],
            id="no-forged-command",
        ),
        pytest.param(
            Located("a.jsonl", 1, result("j", None, judge=judged("incorrect"))),
            [
                "::error file=a.jsonl,line=1,title=JudgeSelection::"
                "case 'j': wrong_tool: selection was incorrect"
            ],
            id="judge-verdict",
        ),
        pytest.param(Located("a.jsonl", 1, PASSED), [], id="passed"),
        pytest.param(Located("a.jsonl", 1, NOT_GRADABLE), [], id="not-gradable"),
        pytest.param(
            Located("b.jsonl", 2, INVALID),
            [
                "::error file=b.jsonl,line=2,title=InvalidCase::case 'b.jsonl:2' /messages: "
                "b.jsonl:2 at /messages: Input should be a valid list"
            ],
            id="unreadable-line",
        ),
    ],
)
def test_github(item: Located, expected: list[str]) -> None:
    assert github(item) == expected
