"""What a case file's bytes hold, told from its first bytes before any case is read: every
reader of case files (`judge check`, `judge grade`, `load_cases`) opens them here.

- JSON Lines, one case per line: the format. A UTF-8 byte-order mark at the start is skipped.
- One JSON array of cases (the first byte that is not blank is `[`), or cases spread over
  several lines each (a first line that is `{` alone, or first two lines that are each no
  JSON value alone): read whole, up to `MAX_DOCUMENT` bytes, each case made one line of JSON
  text that keeps its place (`CaseText`), with a `CaseFileWarning` saying so. Such a document
  that is not JSON, or is larger, refuses the file, once, saying where (where only its first
  two lines suggested a document, the file is read as JSON Lines instead, as before).
- UTF-16 or UTF-32 (a byte-order mark, or the NUL bytes ASCII text has in them), or another
  encoding (bytes that are not UTF-8 in the first `HEAD` bytes, and no character UTF-8 writes
  in several): the file is refused, once (`InputError`), never each of its lines. A UTF-8
  file with a damaged line reads the others: that line is an `InvalidCase`.
"""

from __future__ import annotations

import codecs
import io
import json
import re
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, NamedTuple

import msgspec

from judge._errors import CaseFileWarning, InputError
from judge.cases._files import open_cases
from judge.cases._json import DecodeError, TooDeep, array_items, loads

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

HEAD = 1 << 16
"""Bytes read to tell a file's form and encoding, before any case is read."""
MAX_DOCUMENT = 256 << 20
"""Bytes a case file that is one JSON document may hold: it is read whole, so a larger one is
refused (the bound of a trace file's documents too, `judge.traces._documents`)."""
FORMAT = "JSON Lines, one case per line, is the format"

_WIDE = (  # UTF-32's marks first: UTF-16 LE's begins UTF-32 LE's
    (codecs.BOM_UTF32_LE, "UTF-32 (little-endian)"),
    (codecs.BOM_UTF32_BE, "UTF-32 (big-endian)"),
    (codecs.BOM_UTF16_LE, "UTF-16 (little-endian)"),
    (codecs.BOM_UTF16_BE, "UTF-16 (big-endian)"),
)
_ARRAY = msgspec.json.Decoder(list[msgspec.Raw])  # each element's text, as it is in the file
_AT_BYTE = re.compile(r"^(?:JSON is malformed: )?(.*) \(byte (\d+)\)$")
_BLOCK = 1 << 20  # bytes read at a time
_BLANK = re.compile(r"[ \t\r\n]*")
_MULTIBYTE = re.compile(r"[^\x00-\x7f\udc80-\udcff]")  # UTF-8 of several bytes, not a bad byte


class CaseText(bytes):
    """One case of a file that is one JSON document: its JSON text on one line (the line
    breaks between its tokens made spaces; JSON strings hold none), with its place in the
    file: the `line` it starts on, and its JSON `pointer` (`/3`; "" outside an array). It
    travels to worker processes as it is."""

    line: int
    pointer: str

    def __new__(cls, text: bytes, line: int, pointer: str) -> CaseText:
        made = super().__new__(cls, text)
        made.line, made.pointer = line, pointer
        return made

    def __reduce__(self) -> tuple[type[CaseText], tuple[bytes, int, str]]:
        return CaseText, (bytes(self), self.line, self.pointer)


@dataclass(frozen=True)
class CaseDocument:
    """The cases of a case file that is one JSON document, in order."""

    cases: list[CaseText]
    notice: str
    """What the `CaseFileWarning` says: the file, and how it was read."""

    def numbered(self) -> Iterator[tuple[int, bytes]]:
        """Each case with the line it starts on (its number, as a JSON Lines line's)."""
        for text in self.cases:
            yield text.line, text


CaseInput = BinaryIO | CaseDocument
"""A case file opened: a stream of JSON Lines, or the cases of one JSON document."""


@contextmanager
def open_case_input(path: str) -> Iterator[CaseInput]:
    """The case file `path` (`-`: standard input) opened to read its cases (`case_input`);
    `InputError` when it cannot be read, or is not UTF-8."""
    if path == "-":
        yield case_input(sys.stdin.buffer, "<stdin>")
        return
    with open_cases(path) as stream:
        yield case_input(stream, path)


def case_input(stream: BinaryIO, name: str) -> CaseInput:
    """`stream` (the file `name`) as JSON Lines, past a UTF-8 byte-order mark, or the cases
    of the one JSON document it holds (with a `CaseFileWarning`); `InputError` for a file in
    another encoding, or a document that cannot be read."""
    seekable = stream.seekable()
    start = stream.tell() if seekable else 0
    head, ended = _read_head(stream, seekable)
    _refuse_encoding(head, name)
    skip = len(codecs.BOM_UTF8) if head.startswith(codecs.BOM_UTF8) else 0
    form = _form(head[skip:], ended)
    taken = head[skip:]  # what a stream that cannot seek gives back (`_Rejoined`)
    if form.kind != "lines":
        if seekable:
            stream.seek(start + skip)
            taken = _read_up_to(stream, MAX_DOCUMENT + 1)
        else:
            taken += _read_up_to(stream, MAX_DOCUMENT + 1 - len(taken))
        document = _document(taken, name, form)
        if document is not None:
            warnings.warn(CaseFileWarning(document.notice), stacklevel=2)
            return document
    if seekable:
        stream.seek(start + skip)
        return stream
    return io.BufferedReader(_Rejoined(taken, stream), 1 << 16)


class _Form(NamedTuple):
    kind: Literal["lines", "array", "spread"]
    sure: bool
    """Whether a document that cannot be read refuses the file (else it is read as lines)."""


def _form(text: bytes, ended: bool) -> _Form:
    """What the first bytes of a file (past a byte-order mark) say it holds; `ended`: they
    are the whole file."""
    first = text.lstrip()[:1]
    if first not in (b"[", b"{"):
        return _Form("lines", True)
    pieces = text.split(b"\n")
    filled = [line.strip() for line in (pieces if ended else pieces[:-1]) if line.strip()]
    if first == b"[":  # a line of JSON Lines cannot be an array: read whole, unless ...
        alone = bool(filled) and _is_json(filled[0])
        return _Form("array", not (alone and (len(filled) > 1 or not ended)))  # ... more lines
    if not filled or _is_json(filled[0]):
        return _Form("lines", True)
    if filled[0] == b"{":
        return _Form("spread", True)
    if len(filled) > 1 and not _is_json(filled[1]):
        return _Form("spread", False)
    return _Form("lines", True)


def _is_json(line: bytes) -> bool:
    try:
        loads(line)
    except DecodeError:
        return False
    return True


def _read_head(stream: BinaryIO, seekable: bool) -> tuple[bytes, bool]:
    """The first `HEAD` bytes (from a pipe, as soon as two lines are in: it is read as it
    comes), and whether they are all there is."""
    if seekable:
        head = stream.read(HEAD)
        return head, len(head) < HEAD
    read = getattr(stream, "read1", stream.read)
    head = b""
    while len(head) < HEAD and sum(bool(p.strip()) for p in head.split(b"\n")[:-1]) < 2:
        more = read(HEAD - len(head))
        if not more:
            return head, True
        head += more
    return head, False


def _read_up_to(stream: BinaryIO, limit: int) -> bytes:
    """At most `limit` bytes of the rest of `stream`, a block at a time (one read of `limit`
    bytes would take that much memory first, whatever the file holds)."""
    blocks: list[bytes] = []
    size = 0
    while size < limit and (block := stream.read(min(_BLOCK, limit - size))):
        blocks.append(block)
        size += len(block)
    return b"".join(blocks)


def _refuse_encoding(head: bytes, name: str) -> None:
    """`InputError` for a file in UTF-16 or UTF-32, or one whose first bytes are not UTF-8."""
    wide = _wide_encoding(head)
    if wide is not None:
        raise InputError(f"{name} is {wide}: save it as UTF-8")
    text = head.removeprefix(codecs.BOM_UTF8)
    try:
        codecs.getincrementaldecoder("utf-8")().decode(text)  # (a character cut at the end)
    except UnicodeDecodeError as exc:
        if _MULTIBYTE.search(text.decode("utf-8", "surrogateescape")) is not None:
            return  # UTF-8 with a damaged line: that line is an `InvalidCase`
        line = text.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{name} is not UTF-8 (byte 0x{text[exc.start]:02X} on line {line} is not UTF-8 "
            "text): save it as UTF-8"
        ) from None


def _wide_encoding(head: bytes) -> str | None:
    """UTF-16 or UTF-32, by a byte-order mark or by the NUL bytes that ASCII text (as JSON
    begins) has around each character in them; None for neither."""
    for mark, encoding in _WIDE:
        if head.startswith(mark):
            return encoding
    four = head[:4]
    if len(four) == 4 and four[:3] == b"\0\0\0" and four[3]:
        return "UTF-32 (big-endian)"
    if len(four) == 4 and four[0] and four[1:] == b"\0\0\0":
        return "UTF-32 (little-endian)"
    if len(four) >= 2 and not four[0] and four[1]:
        return "UTF-16 (big-endian)"
    if len(four) >= 2 and four[0] and not four[1]:
        return "UTF-16 (little-endian)"
    return None


class _Broken(Exception):
    """Where a document is not JSON, and why."""

    def __init__(self, why: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(why)
        self.why, self.line, self.column = why, line, column

    def __str__(self) -> str:
        where = "" if self.line is None else f" at line {self.line}, column {self.column}"
        return f"{self.why}{where}"


def _document(data: bytes, name: str, form: _Form) -> CaseDocument | None:
    """The cases of a file that is one JSON document (`data`, past a byte-order mark), or
    None where it is not one and `form` was not sure it is (read it as lines)."""
    what = "one JSON array" if form.kind == "array" else "JSON spread over several lines"
    try:
        if len(data) > MAX_DOCUMENT:
            raise _Broken(f"larger than {MAX_DOCUMENT >> 20} MB, the most read whole")
        cases = _array(data) if form.kind == "array" else _spread(data)
    except _Broken as exc:
        if not form.sure:
            return None
        raise InputError(f"{name} is {what}, and cannot be read: {exc} ({FORMAT})") from None
    count = f"{len(cases)} case{'' if len(cases) == 1 else 's'}"
    if form.kind == "array":
        notice = f"{name} is one JSON array: read as its {count}"
    elif len(cases) == 1:
        notice = f"{name} is one JSON object spread over several lines: read as one case"
    else:
        notice = f"{name} is JSON values one after another over lines: read as its {count}"
    return CaseDocument(cases, f"{notice} ({FORMAT})")


def _array(data: bytes) -> list[CaseText]:
    """Each element of a JSON array, with the line it starts on and its pointer."""
    try:
        items: list[Any] = _ARRAY.decode(data)
    except msgspec.DecodeError as exc:
        raise _at_byte(data, str(exc)) from None
    except RecursionError:  # a case nested too deeply: read alone, it is that case's error
        items = _elements(data)
    cases, line, counted, end = [], 1, 0, 0
    for index, item in enumerate(items):
        text = bytes(item)
        found = data.find(text, end)  # (only blank space and a comma come before it)
        line += data.count(b"\n", counted, found)
        counted, end = found, found + len(text)
        cases.append(CaseText(_one_line(text), line, f"/{index}"))
    return cases


def _elements(data: bytes) -> list[bytes]:
    """The elements of an array with one nested past what the decoder follows, found by their
    brackets; each must be JSON, or nested too deeply itself."""
    items = array_items(data)
    if items is None:
        raise _Broken("JSON is nested too deeply")
    for index, item in enumerate(items):
        try:
            loads(item)
        except TooDeep:
            pass
        except DecodeError as exc:
            raise _Broken(f"{exc} (in /{index})") from None
    return items


def _spread(data: bytes) -> list[CaseText]:
    """Each JSON value of a text of values one after another, with the line it starts on.
    (The values are only found here; each case's text is read as a line is, strictly.)"""
    text = data.decode("utf-8", "surrogateescape")  # (bytes that are not UTF-8 kept as such)
    decoder = json.JSONDecoder()
    cases: list[CaseText] = []
    line, counted = 1, 0
    at = _blank_end(text, 0)
    while at < len(text):
        try:
            _, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise _Broken(exc.msg, exc.lineno, exc.colno) from None
        except RecursionError:
            raise _Broken("JSON is nested too deeply") from None
        line += text.count("\n", counted, at)
        counted = at
        value = text[at:end].encode("utf-8", "surrogateescape")
        cases.append(CaseText(_one_line(value), line, ""))
        at = _blank_end(text, end)
    return cases


def _blank_end(text: str, at: int) -> int:
    found = _BLANK.match(text, at)
    return found.end() if found is not None else at


def _one_line(text: bytes) -> bytes:
    return text.replace(b"\r", b" ").replace(b"\n", b" ")


def _at_byte(data: bytes, message: str) -> _Broken:
    """msgspec's `... (byte 1234)` as the line and column (of bytes) it is at."""
    found = _AT_BYTE.match(message)
    if found is None:
        return _Broken(message)
    offset = int(found.group(2))
    line = data.count(b"\n", 0, offset) + 1
    return _Broken(found.group(1), line, offset - data.rfind(b"\n", 0, offset))


class _Rejoined(io.RawIOBase):
    """A stream that cannot seek, whole again: the bytes read from it to tell its form, then
    the rest as it comes."""

    def __init__(self, taken: bytes, rest: BinaryIO) -> None:
        super().__init__()
        self._taken, self._at = memoryview(taken), 0
        self._read = getattr(rest, "read1", rest.read)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        out = memoryview(buffer).cast("B")
        if self._at < len(self._taken):
            data = self._taken[self._at : self._at + len(out)]
            self._at += len(data)
        else:
            data = memoryview(self._read(len(out)))
        out[: len(data)] = data
        return len(data)
