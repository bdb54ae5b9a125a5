"""JSON documents read from a trace file within stated bounds: one per line (JSON Lines),
several pretty-printed one after another, or one for the whole file, read a chunk at a time.

What cannot be read is a `Problem` naming the file and line, and the reader goes on:
- bytes that are not UTF-8 (their byte offset said), unless `errors="replace"` reads them as
  U+FFFD;
- a document nested more than `MAX_DEPTH` arrays and objects deep;
- a document longer than `MAX_DOCUMENT` characters.
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
"""Bytes one compressed member (an Inspect `.eval` sample) may unpack to, by default."""
_CHUNK = 1 << 20  # bytes read at a time
_ESCAPED = re.compile("[\udc80-\udcff]")  # bytes that are not UTF-8, as surrogateescape keeps them
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")  # an escape of half a pair, perhaps
_BOM = codecs.BOM_UTF8


@dataclass(frozen=True)
class Reading:
    """How trace files are read: what to do with bytes that are not UTF-8, and how far a
    compressed member may unpack."""

    errors: EncodingErrors = "strict"
    max_unpacked: int = MAX_UNPACKED


@dataclass
class Problem:
    source: str
    why: str


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
    """Whether `value` nests more than `limit` arrays and objects (followed without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


class _Text:
    """The file's text, decoded a chunk at a time, and the byte offset of its first character
    still held (to name the offset of a byte that is not UTF-8)."""

    def __init__(self, handle: BinaryIO, errors: EncodingErrors) -> None:
        self.handle = handle
        self.decoder = codecs.getincrementaldecoder("utf-8")(
            errors="surrogateescape" if errors == "strict" else "replace"
        )
        self.buffer, self.base, self.ended, self.started = "", 0, False, False

    def more(self) -> None:
        chunk = self.handle.read(_CHUNK)
        if not self.started:
            self.started = True
            if chunk.startswith(_BOM):
                chunk, self.base = chunk[len(_BOM) :], len(_BOM)
        self.ended = not chunk
        self.buffer += self.decoder.decode(chunk, final=self.ended)

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
    handle: BinaryIO, name: str, problems: list[Problem], errors: EncodingErrors = "strict"
) -> Iterator[tuple[int, Any]]:
    """Every JSON value of the stream `handle` (file `name`), with the line it starts on.
    Memory holds one document, not the file. What cannot be read is reported (name:line) in
    `problems` and skipped: a document read whole, else up to the next line."""
    decoder = json.JSONDecoder()
    text = _Text(handle, errors)
    at, line = 0, 1
    while True:
        at, line = text.skip_blank(at, line)
        buffer = text.buffer
        if at >= len(buffer):
            return
        end = -1  # where the document ends, once read whole
        why: str | None
        try:
            value, end = decoder.raw_decode(buffer, at)
        except RecursionError:
            why = DEEP
        except json.JSONDecodeError as exc:
            # Failing on the buffer's last line, the document may be cut by the chunk: read on
            # (JSON text never holds a raw newline, so an error with a line after it is real).
            cut = not text.ended and "\n" not in buffer[exc.pos :]
            if cut and len(buffer) - at < MAX_DOCUMENT:
                text.drop(at)
                at = 0
                text.more()
                continue
            why = (
                f"a document longer than {MAX_DOCUMENT} characters"
                if cut
                else f"not JSON: {exc.msg}"
            )
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


def _line_end(buffer: str, at: int) -> int:
    newline = buffer.find("\n", at)
    return len(buffer) if newline < 0 else newline
