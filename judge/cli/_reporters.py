"""Per-case failure reports for `judge check` and `judge grade`: a terminal listing, GitHub
Actions annotations, and a JUnit XML file.

Each reporter takes results as plain JSON data (`CaseResult.to_json_dict()`), one at a time,
with the file and line its case came from (`Located`), so a large run is reported in flat
memory (the JUnit file keeps a few strings per case until it is written).

A case is reported as failed when `is_failed` holds (`passed` is false, or the case could not
be read), or when the judge gave an incorrect verdict on it (`judge grade`: selection, a
call's arguments, or the answer). Those verdicts are listed beside the failures, under the
names `JudgeSelection`, `JudgeArguments` and `JudgeAnswer` (not `FailureKind`s).

Every piece of untrusted text (ids, messages, reasoning, file names) is shown with its control
characters spelled out (`\\x1b` for ESC), so no result can colour, move or clear a terminal,
forge a workflow command, or break the XML file.
"""

from __future__ import annotations

import os
import re
import secrets
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, Literal, Protocol

from judge._errors import InputError
from judge.cli._jobs import STDIN

_INVALID_CASE = "InvalidCase"
_NOT_GRADABLE = "not gradable: nothing to grade it against"
_NEEDS_JUDGE = "needs the judge: the reply rightly makes no call; its text is for the judge"

# C0 and C1 controls, DEL, lone surrogates, the two non-characters XML cannot hold, and the
# bidirectional overrides that can make a terminal show text in another order than it is.
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff\u202a-\u202e\u2066-\u2069]")


def visible(text: str, keep: str = "") -> str:
    """`text` with each unsafe character (controls, lone surrogates, bidirectional overrides)
    spelled as a Python escape: ESC as `\\x1b`, a newline as `\\n`, U+202E as `\\u202e`.
    Characters in `keep` stay as they are."""

    def spell(match: re.Match[str]) -> str:
        char = match.group()
        if char in keep:
            return char
        if char in _SHORT:
            return _SHORT[char]
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _UNSAFE.sub(spell, text)


@dataclass(frozen=True)
class Located:
    """A result with where its case came from."""

    source: str
    """The file as named on the command line; "<stdin>" for standard input."""
    line: int | None
    """The 1-based line of the case in that file (None when unknown)."""
    result: dict[str, Any]
    """The result as `CaseResult.to_json_dict()` gives it."""


class Reporter(Protocol):
    """Takes each result as it is graded; `close` when the run is over."""

    def add(self, item: Located) -> None: ...

    def close(self) -> None:
        """Flush what is held (and write the file, for a file report)."""


def is_failed(result: dict[str, Any]) -> bool:
    """`passed` is false, or the result has an `InvalidCase` failure (an unreadable line
    counts as failed)."""
    if result.get("passed") is False:
        return True
    return any(f.get("kind") == _INVALID_CASE for f in result.get("failures") or ())


@dataclass(frozen=True)
class _Problem:
    """One line of a failed case: a check's failure, or one of the judge's incorrect
    verdicts."""

    kind: str
    call: int | None
    path: str
    message: str


def _problems(result: dict[str, Any]) -> list[_Problem]:
    """The failures of a result, the judge's dispute of the checks' verdict, then the judge's
    incorrect verdicts on it."""
    found = [
        _Problem(str(f.get("kind")), f.get("call"), f.get("path") or "", str(f.get("message")))
        for f in result.get("failures") or ()
    ]
    if result.get("judge_dispute"):
        judged, proven = ("failed", "passed") if result.get("passed") else ("passed", "failed")
        why = (
            f"the judge {judged} this case, the checks {proven} it and their verdict stands "
            "(a calibration signal, or a wrong reference)"
        )
        found.append(_Problem("JudgeDispute", None, "", why))
    found.extend(_judge_problems(result.get("judge")))
    return found


def _judge_problems(judge: dict[str, Any] | None) -> Iterator[_Problem]:
    if not judge or judge.get("status") != "ok":
        return  # a judge error or a skip is no verdict, so never a failure
    selection = judge.get("selection")
    if selection and selection.get("verdict") == "incorrect":
        why = _because(selection.get("category"), selection.get("reasoning"))
        yield _Problem("JudgeSelection", None, "", why)
    for verdict in judge.get("arguments") or ():
        if verdict.get("verdict") == "incorrect":
            why = _because(", ".join(verdict.get("problems") or ()), verdict.get("reasoning"))
            yield _Problem("JudgeArguments", verdict.get("call"), "", why)
    answer = judge.get("answer")
    if answer and answer.get("verdict") == "incorrect":
        why = _because(answer.get("category"), answer.get("reasoning"))
        yield _Problem("JudgeAnswer", None, "", why)


def _because(label: str | None, reasoning: str | None) -> str:
    """`wrong_tool: the user asked for ...` (just the reasoning, or the label, when one is
    missing)."""
    return ": ".join(part for part in (label, reasoning) if part) or "incorrect"


def _plain_line(problem: _Problem) -> str:
    """`WrongValue  call 0  /order_id  argument ...`: kind, call, pointer, message."""
    return "  ".join(_fields(problem))


def _fields(problem: _Problem) -> list[str]:
    fields = [visible(problem.kind)]
    if problem.call is not None:
        fields.append(f"call {problem.call}")
    if problem.path:
        fields.append(visible(problem.path))
    fields.append(visible(problem.message))
    return fields


def _where(source: str, line: int | None) -> str:
    return visible(source if line is None else f"{source}:{line}")


class PrettyReporter:
    """Failed cases for a person to read, one block each, written as they come:

        ✗ refund-1  cases.jsonl:3
          WrongValue  call 0  /order_id  argument 'order_id' is "ord_7282", expected ...
          JudgeSelection  wrong_tool: the user asked to refund, not to cancel

    A case the checks passed and the judge disputes is shown too, marked `!`. Other passed
    and undecided cases print nothing, and so does `close` (the summary already counts the
    cases): a run with no failed or disputed case leaves the stream untouched. Colour with
    `color=True`, or with None when the stream is a terminal and `NO_COLOR` is not set.
    """

    def __init__(self, stream: IO[str], *, color: bool | None = None) -> None:
        self._stream = stream
        self._color = _wants_color(stream) if color is None else color
        self._mark = _mark(stream)

    def add(self, item: Located) -> None:
        result = item.result
        failed = is_failed(result)
        if not failed and not result.get("judge_dispute"):
            return
        problems = _problems(result)
        paint = self._paint
        mark, style = (self._mark, _RED) if failed else ("!", _YELLOW)
        lines = [
            f"{paint(mark + ' ' + visible(str(result.get('id'))), style)}  "
            f"{paint(_where(item.source, item.line), _DIM)}"
        ]
        for problem in problems:
            kind, *rest = _fields(problem)
            details = [paint(field, _CYAN) for field in rest[:-1]]
            lines.append("  " + "  ".join([paint(kind, _YELLOW), *details, rest[-1]]))
        self._stream.write("\n".join(lines) + "\n")

    def close(self) -> None:
        self._stream.flush()

    def _paint(self, text: str, style: str) -> str:
        return f"{style}{text}{_RESET}" if self._color else text


_RED, _DIM, _YELLOW, _CYAN, _RESET = "\x1b[1;31m", "\x1b[2m", "\x1b[33m", "\x1b[36m", "\x1b[0m"


def _wants_color(stream: IO[str]) -> bool:
    if os.environ.get("NO_COLOR"):  # https://no-color.org
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _mark(stream: IO[str]) -> str:
    """✗, or x where the stream's encoding has no ✗."""
    try:
        "✗".encode(getattr(stream, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return "x"
    return "✗"


class GithubReporter:
    """GitHub Actions workflow commands, one `::error` per failure of each failed case:

        ::error file=cases.jsonl,line=3,title=WrongValue::case 'refund-1' call 0 /order_id: ...

    No `file=` (nor `line=`) for standard input, no `line=` when the line is unknown. Passed
    and not-gradable cases give nothing. The message's newlines are kept (escaped as the
    workflow-command rules say); its other control characters are spelled out.
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def add(self, item: Located) -> None:
        result = item.result
        if not is_failed(result):
            return
        problems = _problems(result)
        where: list[tuple[str, str]] = []
        if item.source != STDIN:
            where.append(("file", item.source))
            if item.line is not None:
                where.append(("line", str(item.line)))
        case = f"case '{visible(str(result.get('id')))}'"
        for problem in problems:
            properties = [*where, ("title", problem.kind)]
            self._stream.write(_workflow_error(properties, _annotation(case, problem)) + "\n")

    def close(self) -> None:
        self._stream.flush()


def _annotation(case: str, problem: _Problem) -> str:
    head = case
    if problem.call is not None:
        head += f" call {problem.call}"
    if problem.path:
        head += f" {visible(problem.path)}"
    return f"{head}: {visible(problem.message, keep=chr(13) + chr(10))}"


def _workflow_error(properties: list[tuple[str, str]], message: str) -> str:
    shown = ",".join(f"{name}={_escape_property(visible(value))}" for name, value in properties)
    return f"::error {shown}::{_escape_data(message)}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


_Status = Literal["passed", "failed", "skipped"]


@dataclass(frozen=True)
class _JUnitCase:
    """What the JUnit file needs of one case."""

    id: str
    line: int | None
    status: _Status
    lines: tuple[str, ...]
    """The failed case's failures, one line each; for a skipped case, why."""
    kinds: tuple[str, ...]


class JUnitWriter:
    """A JUnit XML file, written on `close`: one `<testsuite>` per input file, one
    `<testcase>` per case; a failed case holds a `<failure>` that lists every failure, a
    case with nothing to grade it against a `<skipped>`.

    The file is written beside its final path and moved there, so a crash never leaves half
    a file. (The command line refuses a path that is an input before it makes one.)
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        name: str = "judge check",
    ) -> None:
        self._path = os.fspath(path)
        self._name = name
        self._suites: dict[str, list[_JUnitCase]] = {}
        _require_folder(self._path)

    def add(self, item: Located) -> None:
        result = item.result
        problems = _problems(result)
        status = _junit_status(result)
        if status == "failed":
            lines = tuple(_plain_line(p) for p in problems)
            kinds = tuple(dict.fromkeys(visible(p.kind) for p in problems))
        else:
            lines = (_skip_reason(result),) if status == "skipped" else ()
            kinds = ()
        case = _JUnitCase(visible(str(result.get("id"))), item.line, status, lines, kinds)
        self._suites.setdefault(item.source, []).append(case)

    def close(self) -> None:
        """Write the file (over an earlier report, never over an input)."""
        _write_atomically(self._path, ET.ElementTree(self._tree()))

    def _tree(self) -> ET.Element:
        root = ET.Element("testsuites", name=visible(self._name))
        totals = dict.fromkeys(("tests", "failures", "skipped"), 0)
        for source, cases in self._suites.items():
            suite = ET.SubElement(root, "testsuite", name=visible(source))
            counts = _counts(cases)
            for key, value in counts.items():
                totals[key] += value
            _set_counts(suite, counts)
            for case in cases:
                _add_case(suite, visible(source), case)
        _set_counts(root, totals)
        return root


def _junit_status(result: dict[str, Any]) -> _Status:
    """The one verdict, `passed` (the checks' where they decide, else the judge's)."""
    if is_failed(result):
        return "failed"
    return "passed" if result.get("passed") is True else "skipped"


def _skip_reason(result: dict[str, Any]) -> str:
    judge = result.get("judge")
    if result.get("needs_judge") and not judge:
        return _NEEDS_JUDGE
    if not judge or judge.get("status") == "skipped":
        return _NOT_GRADABLE
    if judge.get("status") == "ok":
        return "not graded: the judge was uncertain and there is no reference to grade against"
    return "not graded: the judge gave no usable verdict and there is no reference"


def _counts(cases: list[_JUnitCase]) -> dict[str, int]:
    return {
        "tests": len(cases),
        "failures": sum(c.status == "failed" for c in cases),
        "skipped": sum(c.status == "skipped" for c in cases),
    }


def _set_counts(element: ET.Element, counts: dict[str, int]) -> None:
    element.set("tests", str(counts["tests"]))
    element.set("failures", str(counts["failures"]))
    element.set("errors", "0")
    element.set("skipped", str(counts["skipped"]))


def _add_case(suite: ET.Element, source: str, case: _JUnitCase) -> None:
    attributes = {"name": case.id, "classname": source, "file": source}
    if case.line is not None:
        attributes["line"] = str(case.line)
    element = ET.SubElement(suite, "testcase", attributes, time="0")
    if case.status == "failed":
        count = len(case.lines)
        message = f"{count} failure{'' if count == 1 else 's'}: {', '.join(case.kinds)}"
        failure = ET.SubElement(element, "failure", type=case.kinds[0], message=message)
        failure.text = "\n".join(case.lines)
    elif case.status == "skipped":
        ET.SubElement(element, "skipped", message=case.lines[0])


def _require_folder(path: str) -> None:
    """Say now, not after a long run, that the report cannot be written."""
    folder = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(folder):
        raise InputError(f"{path}: cannot write the JUnit report: no folder {folder}")
    if not _is_special(path) and not os.access(folder, os.W_OK):
        raise InputError(f"{path}: cannot write the JUnit report: {folder} is not writable")


def _is_special(path: str) -> bool:
    """A path that exists and is no regular file: a pipe, a terminal, /dev/stdout."""
    return os.path.exists(path) and not os.path.isfile(path)


def _write_atomically(path: str, tree: ET.ElementTree[ET.Element]) -> None:
    if _is_special(path):  # nothing to replace: written straight into it
        with open(path, "wb") as stream:
            tree.write(stream, encoding="utf-8", xml_declaration=True)
        return
    # through a symlink, the file it names is replaced (the link is kept)
    target = os.path.realpath(path)
    folder, name = os.path.split(target)
    temporary = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
    # os.open with the usual mode, so the report gets the umask's permissions
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            tree.write(handle, encoding="utf-8", xml_declaration=True)
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
