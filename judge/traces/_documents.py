"""JSON documents read from a trace file within stated bounds: one per line (JSON Lines),
several pretty-printed one after another, or one for the whole file, read a chunk at a time.

What cannot be read is a `Problem` naming the file and line, and the reader goes on:
- bytes that are not UTF-8 (their byte offset said), unless `errors="replace"` reads them as
  U+FFFD;
- a document nested more than `MAX_DEPTH` arrays and objects deep;
- a document longer than `MAX_DOCUMENT` characters;
- a document that would take more than `Reading.max_record` bytes parsed (`parsed_size`).

Python holds an empty object `{}`, two bytes of JSON, in 64 bytes (and a pointer), so JSON's
size does not bound what it takes parsed: what a document may take is bounded on its own,
estimated before it is parsed.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, Literal

from judge.cases._file_form import MAX_DOCUMENT
from judge.cases._json import DecodeError, loads

EncodingErrors = Literal["strict", "replace"]
MAX_DEPTH = 256
"""Arrays and objects a document may nest (OTLP and LangSmith records use a few dozen)."""
# `MAX_DOCUMENT`: characters one document may take, the bound of a case file that is one JSON
# document: a longer one is refused rather than held in memory.
MAX_UNPACKED = 256 << 20
"""Bytes the compressed members of one log (Inspect `.eval` samples) may unpack to in all, by
default."""
PER_VALUE = 64
"""Bytes one JSON value takes parsed, about: `{}` 64, `[]` 56, a float 24, a short string 50."""
MEMBER_PARSED = 4
"""What one compressed member may take parsed, in `max_unpacked`s (an unpacked byte costs its
sender nothing: the bound is what the bytes allowed would take as sparse JSON)."""
RECORD_PARSED = 16
"""What one document of an uncompressed file or body may take parsed, in `max_unpacked`s (the
densest trace JSON, OTLP attributes, takes about 10 bytes parsed a byte: `judge serve`'s bound
on a body, its `max_unpacked` by default, admits a body of it whole)."""
_CHUNK = 1 << 20  # bytes read at a time
_BLOCK = 1 << 16  # characters a long document's window grows by near the bound
_ESCAPED = re.compile("[\udc80-\udcff]")  # bytes that are not UTF-8, as surrogateescape keeps them
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")  # an escape of half a pair, perhaps
_BOM = codecs.BOM_UTF8


@dataclass(frozen=True)
class Reading:
    """How trace files are read: what to do with bytes that are not UTF-8, how far the
    compressed members of a log may unpack, and what a member or document may take parsed."""

    errors: EncodingErrors = "strict"
    max_unpacked: int = MAX_UNPACKED
    """Bytes the compressed members of one log may unpack to, in all."""

    @property
    def max_member(self) -> int:
        """Bytes one compressed member may take parsed (`parsed_size`)."""
        return MEMBER_PARSED * self.max_unpacked

    @property
    def max_record(self) -> int:
        """Bytes one document of an uncompressed file or body may take parsed."""
        return RECORD_PARSED * self.max_unpacked


@dataclass
class Problem:
    source: str
    why: str


def parsed_size(text: str | bytes, start: int = 0, end: int | None = None) -> int:
    """About the bytes JSON `text[start:end]` takes parsed: its length, and `PER_VALUE` for
    each `{`, `[`, `,` and `:`, counted in strings too (a trace's strings may hold JSON that is
    parsed in turn): each value but the first of a container follows one."""
    end = len(text) if end is None else end
    if isinstance(text, str):
        marks = sum(text.count(mark, start, end) for mark in "{[,:")
    else:
        marks = sum(text.count(mark, start, end) for mark in (b"{", b"[", b",", b":"))
    return end - start + PER_VALUE * marks


def parsed_past(bound: int, times: int) -> str:
    """What a member or document that would take more than `bound` bytes parsed is told."""
    return (
        f"its JSON would take more than {bound} bytes parsed, at {PER_VALUE} bytes a value "
        f"(the bound is {times} times --max-unpacked: raise that to read it)"
    )


def not_utf8(offset: int) -> str:
    """What a record with bytes that are not UTF-8 is told."""
    return (
        f"invalid UTF-8 at byte offset {offset} (give --encoding-errors replace to read such "
        "bytes as U+FFFD)"
    )


def lone_surrogate(text: str) -> str | None:
    """Why JSON `text` holds what is not text: a `\\u` escape of half a surrogate pair, which
    no UTF-8 output can hold (case files, read with msgspec, refuse it the same way)."""
    if _SURROGATE.search(text) is None:
        return None
    try:
        loads(text.encode("utf-8", "surrogateescape"))
    except DecodeError as exc:
        return f"not JSON: {exc}"
    return None


DEEP = f"nested more than {MAX_DEPTH} arrays and objects deep"


def refused(value: Any, text: str) -> str | None:
    """Why a parsed document (`value`, from JSON `text`) is not taken: nested past
    `MAX_DEPTH`, or holding half a surrogate pair; None when it is."""
    return DEEP if too_deep(value) else lone_surrogate(text)


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests more than `limit` arrays and objects (followed a level at a time,
    without recursion: what a level holds is a list of pointers, and an empty array or
    object is dropped where it cannot go past the limit)."""
    level, depth = [value] if isinstance(value, _CONTAINERS) else [], 1
    while level:  # the arrays and objects `depth` deep
        if depth > limit:
            return True
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, _CONTAINERS) and (child or depth >= limit)
        ]
        depth += 1
    return False


_CONTAINERS = (dict, list)


class _Text:
    """The file's text, decoded a chunk at a time, and the byte offset of its first character
    still held (to name the offset of a byte that is not UTF-8)."""

    def __init__(self, handle: BinaryIO, errors: EncodingErrors, chunk: int = _CHUNK) -> None:
        self.handle, self.chunk = handle, chunk
        self.decoder = codecs.getincrementaldecoder("utf-8")(
            errors="surrogateescape" if errors == "strict" else "replace"
        )
        self.buffer, self.base, self.ended, self.started = "", 0, False, False
        self.held: list[str] = []
        """Text read past a long document and put back, given again a chunk at a time (last
        first)."""

    def more(self) -> None:
        if self.held:
            self.buffer += self.held.pop()
            return
        chunk = self.handle.read(self.chunk)
        if not self.started:
            self.started = True
            if chunk.startswith(_BOM):
                chunk, self.base = chunk[len(_BOM) :], len(_BOM)
        self.ended = not chunk
        self.buffer += self.decoder.decode(chunk, final=self.ended)

    def fill(self, size: int) -> None:
        """Read on until the buffer holds `size` characters, or the text ends."""
        while len(self.buffer) < size and not self.ended:
            self.more()

    def put_back(self, at: int) -> None:
        """Give the text from `at` on again, a chunk at a time: what a document is parsed
        within stays a chunk or two (`iter_documents`)."""
        rest, self.buffer = self.buffer[at:], self.buffer[:at]
        pieces = [rest[i : i + self.chunk] for i in range(0, len(rest), self.chunk)]
        self.held.extend(reversed(pieces))
        self.ended = self.ended and not self.held

    def drop(self, at: int) -> None:
        """Forget the text before `at`."""
        self.base += len(self.buffer[:at].encode("utf-8", "surrogateescape"))
        self.buffer = self.buffer[at:]

    def skip_blank(self, at: int, line: int) -> tuple[int, int]:
        """The first character at or after `at` that is not blank space (reading on as
        needed; `at` is past the text at the end), and the line it is on."""
        while True:
            buffer = self.buffer
            while at < len(buffer) and buffer[at] in " \t\r\n":
                line += buffer[at] == "\n"
                at += 1
            if at < len(buffer) or self.ended:
                return at, line
            self.drop(at)
            at = 0
            self.more()

    def skip_line(self, at: int) -> int:
        """Where the line holding `at` ends (its newline, counted by `skip_blank`), what is
        read on to find it forgotten as it is read."""
        while True:
            newline = self.buffer.find("\n", at)
            if newline >= 0 or self.ended:
                return newline if newline >= 0 else len(self.buffer)
            self.drop(len(self.buffer))
            at = 0
            self.more()

    def bad_byte(self, start: int, end: int) -> int | None:
        """The byte offset of the first byte that is not UTF-8 in `buffer[start:end]`."""
        found = _ESCAPED.search(self.buffer, start, end)
        if found is None:
            return None
        return self.base + len(self.buffer[: found.start()].encode("utf-8", "surrogateescape"))


def iter_documents(
    handle: BinaryIO,
    name: str,
    problems: list[Problem],
    errors: EncodingErrors = "strict",
    max_parsed: int = RECORD_PARSED * MAX_UNPACKED,
) -> Iterator[tuple[int, Any]]:
    """Every JSON value of the stream `handle` (file `name`), with the line it starts on.
    Memory holds one document, not the file, and what it parses to stays within `max_parsed`
    bytes (`parsed_size`). What cannot be read is reported (name:line) in `problems` and
    skipped: a document read whole, else up to the next line."""
    decoder = json.JSONDecoder()
    # A chunk or two parses to at most `max_parsed`; a document cut by the chunk is parsed
    # again within twice as much, as far as what that takes parsed stays within the bound.
    text = _Text(handle, errors, min(_CHUNK, max(max_parsed // (2 + 2 * PER_VALUE), 4096)))
    at, line, reach = 0, 1, 0  # reach: characters of the document at `at` known to be cut
    while True:
        at, line = text.skip_blank(at, line)
        buffer = text.buffer
        if at >= len(buffer):
            return
        stop = _window(buffer, at, reach, max_parsed) if reach else len(buffer)
        end = -1  # where the document ends, once read whole
        why: str | None
        try:
            value, end = decoder.raw_decode(buffer if stop == len(buffer) else buffer[:stop], at)
        except RecursionError:
            why = DEEP
        except json.JSONDecodeError as exc:
            # Failing on the last line read, the document may be cut there: read on (JSON
            # text never holds a raw newline, so an error with a line after it is real).
            cut = (stop < len(buffer) or not text.ended) and "\n" not in buffer[exc.pos : stop]
            if cut and reach < stop - at < MAX_DOCUMENT:
                text.drop(at)
                at, reach = 0, stop - at
                text.fill(min(2 * reach, MAX_DOCUMENT))
                continue
            why = _cut_why(stop - at, max_parsed) if cut else f"not JSON: {exc.msg}"
        else:
            why = None
        offset = text.bad_byte(at, end if end >= 0 else _line_end(buffer, at))
        if offset is not None:
            why = not_utf8(offset)
        elif why is None:
            why = refused(value, buffer[at:end])
        if why is None:
            yield line, value
        else:
            problems.append(Problem(f"{name}:{line}", why))
        if end >= 0:
            line += buffer.count("\n", at, end)
            at = end
        else:  # what could not be read is skipped up to its line's end
            at = text.skip_line(at)
        if reach:  # what was read past a long document is given again a chunk at a time
            text.put_back(at)
            reach = 0


def _window(buffer: str, at: int, reach: int, bound: int) -> int:
    """Where to parse the document at `at`, cut at `at + reach`, up to: twice as far (never
    past `MAX_DOCUMENT`), or as far as what that would take parsed stays within `bound` (a
    block at a time, then halves of the block that would pass it)."""
    stop = min(len(buffer), at + 2 * reach, at + MAX_DOCUMENT)
    if parsed_size(buffer, at, stop) <= bound:
        return stop
    end, size, step = at + reach, parsed_size(buffer, at, at + reach), _BLOCK
    while step and end < stop:
        more = parsed_size(buffer, end, min(end + step, stop))
        if size + more <= bound:
            end, size = min(end + step, stop), size + more
        else:
            step //= 2
    return end


def _cut_why(read: int, bound: int) -> str:
    """Why a document cut where it may be read no further is refused."""
    if read >= MAX_DOCUMENT:
        return f"a document longer than {MAX_DOCUMENT} characters"
    return "a document whose " + parsed_past(bound, RECORD_PARSED).removeprefix("its ")


def _line_end(buffer: str, at: int) -> int:
    newline = buffer.find("\n", at)
    return len(buffer) if newline < 0 else newline
