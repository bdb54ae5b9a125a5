"""Input mistakes named (issue 50): each input here was misread before. A case file that is one
JSON array, or cases pretty-printed over several lines, was hundreds of `InvalidCase` lines
(one a physical line) and exit 0: it is read as its cases, with a warning saying so. A UTF-8
byte-order mark failed line 1; UTF-16 failed every line: the mark is skipped, and a file in
another encoding is refused once, naming the file and the encoding (exit 2). A misspelt matcher
(`$anyy`) was compared as a literal: it is an `InvalidCase` at its pointer, naming the nearest
matcher. Through `judge check` (its lean reader), `judge grade` and `load_cases` alike."""

from __future__ import annotations

import codecs
import io
import json
import pickle
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from judge import CaseError, CaseFileWarning, InputError, check, load_cases
from judge.cases import _file_form
from judge.cases._file_form import CaseDocument, CaseText, case_input
from judge.cases._lean import read_lean
from judge.cases._loading import read_line
from judge.checks._check import invalid_case_result
from judge.cli import main
from tests.chat_server import ChatServer
from tests.helpers import call, case


def weather(case_id: str, arguments: Any = None) -> dict[str, Any]:
    expected = [{"name": "get_weather", "arguments": arguments or {"city": "Paris"}}]
    return case([call("get_weather", {"city": "Paris"})], expected) | {"id": case_id}


CASES = [
    weather("a"),
    weather("b", {"city": {"$any": ["Paris", "Lyon"]}}),
    case([], []) | {"id": "c"},
]
JSONL = "".join(json.dumps(c) + "\n" for c in CASES).encode()
ARRAY = "one JSON array: read as its 3 cases (JSON Lines, one case per line, is the format)"


def run(*args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=stdin)


def results(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


# -- files that are not JSON Lines, read as their cases ---------------------------------------

FORMS = [
    pytest.param(json.dumps(CASES, indent=2).encode(), 3, ARRAY, id="json-array-pretty"),
    pytest.param(json.dumps(CASES).encode(), 3, ARRAY, id="json-array-on-one-line"),
    pytest.param(
        codecs.BOM_UTF8 + json.dumps(CASES, indent=2).encode(), 3, ARRAY, id="bom-and-array"
    ),
    pytest.param(
        json.dumps(CASES[0], indent=2).encode(),
        1,
        "one JSON object spread over several lines: read as one case",
        id="one-pretty-printed-object",
    ),
    pytest.param(
        b"\n".join(json.dumps(c, indent=2).encode() for c in CASES),  # as `jq .` writes
        3,
        "JSON values one after another over lines: read as its 3 cases",
        id="pretty-printed-objects-one-after-another",
    ),
    pytest.param(codecs.BOM_UTF8 + JSONL, 3, None, id="utf8-byte-order-mark"),
]


@pytest.mark.parametrize(("data", "count", "notice"), FORMS)
def test_judge_check_reads_the_cases_of_a_file_as_json_lines_would_give_them(
    tmp_path: Path, data: bytes, count: int, notice: str | None
) -> None:
    given, same = tmp_path / "cases.json", tmp_path / "same.jsonl"
    given.write_bytes(data)
    same.write_bytes(b"".join(JSONL.splitlines(keepends=True)[:count]))
    done = run("check", str(given), "-o", str(tmp_path / "out.jsonl"))
    reference = run("check", str(same), "-o", str(tmp_path / "ref.jsonl"))
    assert done.exit_code == 0 == reference.exit_code, done.output
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "ref.jsonl").read_bytes()
    if notice is None:
        assert "warning" not in done.stderr
    else:
        assert f"judge: warning: {given} is {notice}" in done.stderr


@pytest.mark.parametrize(("data", "count", "notice"), FORMS)
def test_load_cases_reads_the_cases_of_a_file_with_a_warning(
    tmp_path: Path, data: bytes, count: int, notice: str | None
) -> None:
    given = tmp_path / "cases.json"
    given.write_bytes(data)
    if notice is None:
        loaded = load_cases(given)  # (any warning is an error here)
    else:
        with pytest.warns(CaseFileWarning, match=re.escape(f"{given} is {notice}")):
            loaded = load_cases(given)
    assert loaded.errors == []
    assert [c.model_dump() for c in loaded] == [c.model_dump() for c in load_cases(CASES)][:count]


def test_judge_check_reads_a_json_array_from_standard_input_and_in_workers(
    tmp_path: Path,
) -> None:
    from_stdin = run("check", "-", stdin=json.dumps(CASES, indent=2).encode())
    assert f"judge: warning: <stdin> is {ARRAY}" in from_stdin.stderr
    assert [json.loads(line)["id"] for line in from_stdin.stdout.splitlines()] == ["a", "b", "c"]
    given = tmp_path / "cases.json"
    given.write_text(json.dumps([*CASES, weather("d", {"city": {"$anyy": ["Paris"]}})]))
    in_workers = run("check", str(given), "-o", str(tmp_path / "out.jsonl"), "--jobs", "2")
    assert in_workers.exit_code == 0, in_workers.output
    [invalid] = [r for r in results(tmp_path / "out.jsonl") if r["failures"]]
    assert invalid["failures"][0]["path"] == "/3/expected_calls/0/arguments/city"


def test_judge_grade_reads_the_cases_of_a_json_array(server: ChatServer, tmp_path: Path) -> None:
    given, out = tmp_path / "cases.json", tmp_path / "out.jsonl"
    given.write_text(json.dumps(CASES, indent=2))
    done = run("grade", str(given), "-o", str(out), "--base-url", server.url, "--model", "m",
               "--cache-dir", str(tmp_path / "cache"))  # fmt: skip
    assert done.exit_code == 0, done.output
    assert f"judge: warning: {given} is {ARRAY}" in done.stderr
    assert sorted(r["id"] for r in results(out)) == ["a", "b", "c"]  # (in the order judged)


@pytest.mark.parametrize("seekable", [True, False], ids=["file", "pipe"])
@pytest.mark.parametrize(
    "data", [JSONL, codecs.BOM_UTF8 + JSONL, b"{oops\n" + JSONL], ids=["jsonl", "bom", "bad-first"]
)
def test_json_lines_are_given_back_whole_past_a_byte_order_mark(
    data: bytes, seekable: bool
) -> None:
    stream = io.BytesIO(data) if seekable else _Pipe(data)
    opened = case_input(stream, "cases.jsonl")
    assert not isinstance(opened, CaseDocument)
    assert opened.read() == data.removeprefix(codecs.BOM_UTF8)


class _Pipe(io.BytesIO):
    def seekable(self) -> bool:
        return False


# -- errors in a JSON array name the element: its pointer, and the line it starts on -----------


def test_an_error_in_a_json_array_names_the_element_and_its_line(tmp_path: Path) -> None:
    elements = [
        *CASES,
        weather("d", {"city": {"$anyy": ["Paris"]}}),
        7,
        weather("f") | {"id": None},
    ]
    given = tmp_path / "cases.json"
    given.write_text("[\n" + ",\n".join(json.dumps(e) for e in elements) + "\n]\n")
    with pytest.warns(CaseFileWarning):
        loaded = load_cases(given)
    assert [c.id for c in loaded] == ["a", "b", "c", "cases.json/5"]  # (no id: its pointer)
    misspelt, number = loaded.errors
    assert str(misspelt) == (
        f"{given}:5 (case 'd') at /3/expected_calls/0/arguments/city: "
        'unknown matcher key "$anyy" (did you mean "$any"?)'
    )
    assert str(number) == f"{given}:6 at /4: a case must be a JSON object, got a number"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        pytest.param("[\n" + "\n".join(json.dumps(c) for c in CASES) + "\n]",
                     "expected ',' or ']' at line 3, column 1", id="array-missing-a-comma"),
        pytest.param("[\n" + json.dumps(CASES[0]), "Input data was truncated", id="array-cut"),
        pytest.param("{\n" + json.dumps(CASES[0])[1:-1] + ",\n}",
                     "at line 3, column 1", id="object-with-a-trailing-comma"),
    ],
)  # fmt: skip
def test_a_json_document_that_is_not_json_is_refused_once_saying_where(
    tmp_path: Path, text: str, where: str
) -> None:
    given = tmp_path / "cases.json"
    given.write_text(text)
    done = run("check", str(given))
    assert done.exit_code == 2 and done.stdout == ""  # never one InvalidCase a line
    [said] = done.stderr.splitlines()
    assert said.startswith(f"judge check: {given} is ") and where in said, said
    with pytest.raises(InputError, match=re.escape(where)):
        load_cases(given)


def test_a_json_document_past_the_bound_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_file_form, "MAX_DOCUMENT", 100)
    given = tmp_path / "cases.json"
    given.write_text(json.dumps(CASES, indent=2))
    with pytest.raises(InputError, match="larger than"):
        load_cases(given)


def test_a_case_text_keeps_its_place_in_a_worker_process() -> None:
    text = CaseText(b'{"id": "x"}', 12, "/3")
    copied = pickle.loads(pickle.dumps(text))
    assert (copied, copied.line, copied.pointer) == (text, 12, "/3")


# -- files in another encoding, refused once --------------------------------------------------

LATIN = json.dumps(weather("café"), ensure_ascii=False).encode("latin-1") + b"\n"
ENCODINGS = [
    pytest.param(codecs.BOM_UTF16_LE + JSONL.decode().encode("utf-16-le"),
                 "UTF-16 (little-endian)", id="utf-16-le-with-bom"),
    pytest.param(codecs.BOM_UTF16_BE + JSONL.decode().encode("utf-16-be"),
                 "UTF-16 (big-endian)", id="utf-16-be-with-bom"),
    pytest.param(JSONL.decode().encode("utf-16-le"), "UTF-16 (little-endian)", id="utf-16-le"),
    pytest.param(JSONL.decode().encode("utf-16-be"), "UTF-16 (big-endian)", id="utf-16-be"),
    pytest.param(JSONL.decode().encode("utf-32"), "UTF-32 (little-endian)", id="utf-32-with-bom"),
    pytest.param(JSONL.decode().encode("utf-32-be"), "UTF-32 (big-endian)", id="utf-32-be"),
    pytest.param(LATIN, "not UTF-8 (byte 0xE9 on line 1 is not UTF-8 text)", id="latin-1"),
]  # fmt: skip


@pytest.mark.parametrize(("data", "encoding"), ENCODINGS)
def test_judge_check_refuses_a_file_in_another_encoding_once(
    tmp_path: Path, data: bytes, encoding: str
) -> None:
    given = tmp_path / "cases.jsonl"
    given.write_bytes(data)
    done = run("check", str(given))
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr == f"judge check: {given} is {encoding}: save it as UTF-8\n"
    from_stdin = run("check", "-", stdin=data)
    assert from_stdin.exit_code == 2, from_stdin.output
    assert f"<stdin> is {encoding}: save it as UTF-8" in from_stdin.stderr


@pytest.mark.parametrize(("data", "encoding"), ENCODINGS)
def test_load_cases_and_judge_grade_refuse_a_file_in_another_encoding(
    server: ChatServer, tmp_path: Path, data: bytes, encoding: str
) -> None:
    given = tmp_path / "cases.jsonl"
    given.write_bytes(data)
    with pytest.raises(InputError, match=re.escape(f"{given} is {encoding}: save it as UTF-8")):
        load_cases(given)
    done = run("grade", str(given), "--base-url", server.url, "--model", "m",
               "--cache-dir", str(tmp_path / "cache"))  # fmt: skip
    assert done.exit_code == 2 and f"{given} is {encoding}" in done.stderr, done.output
    assert server.chat_requests == []


def test_a_damaged_line_of_a_utf8_file_is_that_line_alone(tmp_path: Path) -> None:
    given = tmp_path / "cases.jsonl"
    damaged = json.dumps(weather("é-1"), ensure_ascii=False).encode().replace(b"Paris", b"\xff")
    given.write_bytes(JSONL + damaged + b"\n")
    loaded = load_cases(given)
    assert [c.id for c in loaded] == ["a", "b", "c"]
    assert [e.line for e in loaded.errors] == [4]


# -- a misspelt matcher, at any depth of an expected value ------------------------------------

MATCHERS = [
    pytest.param({"city": {"$anyy": ["Paris"]}}, "/city",
                 'unknown matcher key "$anyy" (did you mean "$any"?)', id="misspelt-any"),
    pytest.param({"city": {"$any": ["Paris"], "$optinal": True}}, "/city",
                 'unknown matcher key "$optinal" (did you mean "$optional"?)',
                 id="misspelt-optional-beside-any"),
    pytest.param({"city": {"name": {"$anyy": ["Paris"]}}}, "/city/name",
                 'unknown matcher key "$anyy" (did you mean "$any"?)', id="nested-in-a-literal"),
    pytest.param({"city": {"$any": ["Paris", {"$Any": [1]}]}}, "/city/$any/1",
                 'unknown matcher key "$Any" (did you mean "$any"?)', id="nested-in-an-option"),
    pytest.param({"city": [{"$gt": 3}]}, "/city/0",
                 'unknown matcher key "$gt" (the matcher keys are "$absent", "$any", "$date", '
                 '"$int", "$judge", "$number", "$object", "$optional", "$regex", "$string", '
                 '"$unordered")',
                 id="no-matcher-near"),
]  # fmt: skip


@pytest.mark.parametrize(("arguments", "at", "reason"), MATCHERS)
def test_a_misspelt_matcher_is_an_invalid_case_at_its_pointer(
    tmp_path: Path, arguments: dict[str, Any], at: str, reason: str
) -> None:
    pointer = "/expected_calls/0/arguments" + at
    bad = weather("bad", arguments)
    given = tmp_path / "cases.jsonl"
    given.write_text(json.dumps(CASES[0]) + "\n" + json.dumps(bad) + "\n")
    loaded = load_cases(given)
    [error] = loaded.errors
    assert (error.line, error.case_id, error.pointer, error.reason) == (2, "bad", pointer, reason)
    done = run("check", str(given), "-o", str(tmp_path / "out.jsonl"))
    assert done.exit_code == 0, done.output
    good, invalid = results(tmp_path / "out.jsonl")
    assert good["passed"] is True
    [failure] = invalid["failures"]
    assert (failure["kind"], failure["path"]) == ("InvalidCase", pointer)
    assert failure["message"] == f"{given}:2 (case 'bad') at {pointer}: {reason}"


@pytest.mark.parametrize(("arguments", "at", "reason"), MATCHERS)
def test_the_lean_reading_leaves_a_misspelt_matcher_to_the_full_one(
    arguments: dict[str, Any], at: str, reason: str
) -> None:
    line = json.dumps(weather("bad", arguments)).encode()
    assert read_lean(line) is None
    full = read_line(line, source="t.jsonl", line=1)
    assert isinstance(full, CaseError) and full.reason == reason
    [checked] = check([weather("bad", arguments)])
    assert invalid_case_result(full).failures[0].path == checked.failures[0].path


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"city": {"name": "Paris", "country": "FR"}}, id="literal-object"),
        pytest.param({"city": {"$any": ["Paris", {"name": "Paris"}]}}, id="literal-option"),
        pytest.param({"price": {"currency$": "EUR", "a$b": 1}}, id="dollar-not-first"),
    ],
)
def test_keys_that_do_not_begin_with_a_dollar_stay_literal_and_lean(
    arguments: dict[str, Any],
) -> None:
    line = json.dumps(weather("ok", arguments)).encode()
    assert read_lean(line) is not None
    assert not isinstance(read_line(line, source="t.jsonl", line=1), CaseError)
