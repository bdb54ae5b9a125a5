"""Inspect AI eval logs (`.eval`, a zip of JSON files, or `.json`): each model call of each
sample, with the tools it was offered, in OpenAI chat form."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import IO, Any, BinaryIO

from judge.cases._file_form import MAX_DOCUMENT
from judge.traces._calls import LLMCall, openai_call
from judge.traces._documents import (
    DEEP,
    MEMBER_PARSED,
    RECORD_PARSED,
    Problem,
    Reading,
    not_utf8,
    parsed_past,
    parsed_size,
    refused,
)
from judge.traces._spans import RecordError, why

_ZSTD = 93  # the compression Inspect writes `.eval` members with
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")
_PIECE = 1 << 20  # bytes unpacked at a time


@dataclass
class _Unpacked:
    """What the members of one log may still unpack to (`Reading.max_unpacked` in all)."""

    bound: int
    left: int
    spent: bool = False
    """Whether a member unpacked past what was left: the members after it are not read."""


def inspect_calls(
    log: bytes | BinaryIO, path: str, problems: list[Problem], reading: Reading | None = None
) -> Iterator[LLMCall]:
    """The model calls of every sample of an Inspect log (`log`, the contents of file `path`
    or the file open, its members read one at a time); a sample that cannot be read (one
    whose member unpacks past what `reading.max_unpacked` leaves, or would take more than
    `reading.max_member` parsed) is reported and skipped."""
    reading = reading or Reading()
    unpacked = _Unpacked(reading.max_unpacked, reading.max_unpacked)
    try:
        samples = list(_samples(_seekable(log), path, reading, unpacked))
    except RecordError as exc:  # a JSON log past a bound
        problems.append(Problem(path, f"a log that cannot be read: {exc}"))
        return
    except Exception as exc:  # not a zip, not JSON, not a log
        problems.append(Problem(path, f"not an Inspect log: {type(exc).__name__}: {exc}"))
        return
    if not samples:
        problems.append(Problem(path, "the log holds no samples"))
    for n, (where, load) in enumerate(samples):  # one bad sample drops only itself
        if unpacked.spent:
            problems.append(Problem(path, _unread(len(samples) - n, unpacked.bound)))
            return
        try:
            sample = load()
            if not isinstance(sample, dict):
                raise RecordError(f"a sample must be an object, not {type(sample).__name__}")
            calls = list(_sample_calls(sample, where, path))
        except Exception as exc:
            problems.append(Problem(where, f"a sample that cannot be read: {why(exc)}"))
            continue
        if not calls:
            problems.append(Problem(where, "a sample with no model call and no messages"))
        yield from calls


def _seekable(log: bytes | BinaryIO) -> BinaryIO:
    if isinstance(log, bytes):
        return io.BytesIO(log)
    return log if log.seekable() else io.BytesIO(log.read())  # a pipe: read whole


def _samples(
    log: BinaryIO, path: str, reading: Reading, unpacked: _Unpacked
) -> Iterator[tuple[str, Callable[[], Any]]]:
    """Each sample's place and how to read it."""
    start = log.tell()
    magic = log.read(4)
    log.seek(start)
    if magic == b"PK\x03\x04":
        archive = zipfile.ZipFile(log)
        for info in archive.infolist():
            if info.filename.startswith("samples/") and info.filename.endswith(".json"):
                load = partial(_load_member, archive, log, info, reading, unpacked)
                yield f"{path}:{info.filename}", load
        return
    data = _read_up_to(log, MAX_DOCUMENT + 1)
    if len(data) > MAX_DOCUMENT:
        raise RecordError(f"a JSON log longer than {MAX_DOCUMENT} bytes")
    if parsed_size(data) > reading.max_record:
        raise RecordError(parsed_past(reading.max_record, RECORD_PARSED))
    try:
        document = json_of(data, reading)
    except RecordError as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(document, dict) or "eval" not in document:
        raise ValueError("a JSON log holds an `eval` object and its `samples`")
    for i, sample in enumerate(document.get("samples") or ()):
        yield f"{path}:samples/{i}", partial(lambda s: s, sample)


def _load_member(
    archive: zipfile.ZipFile,
    log: BinaryIO,
    info: zipfile.ZipInfo,
    reading: Reading,
    unpacked: _Unpacked,
) -> Any:
    data = _member(archive, log, info, unpacked)
    if parsed_size(data) > reading.max_member:  # refused before it is parsed
        raise RecordError(parsed_past(reading.max_member, MEMBER_PARSED))
    return json_of(data, reading)


def json_of(data: bytes, reading: Reading) -> Any:
    """The JSON value of a member or a file, or `RecordError`: bytes that are not UTF-8
    (unless read as U+FFFD), text that is not JSON, nesting past `MAX_DEPTH`."""
    try:
        text = data.decode("utf-8-sig", reading.errors)
    except UnicodeDecodeError as exc:
        raise RecordError(not_utf8(exc.start)) from None
    try:
        value = json.loads(text)
    except RecursionError:
        raise RecordError(DEEP) from None
    except ValueError as exc:
        raise RecordError(f"not JSON: {exc}") from None
    if (why := refused(value, text)) is not None:
        raise RecordError(why)
    return value


def _member(
    archive: zipfile.ZipFile, log: BinaryIO, info: zipfile.ZipInfo, unpacked: _Unpacked
) -> bytes:
    """A member's bytes, read as they unpack and refused past what the log's members may
    still unpack to (its declared size is not trusted); zstd-compressed ones (which Python's
    zipfile cannot read before 3.14) decompressed with zstandard."""
    limit = unpacked.left
    if info.file_size > limit:
        raise RecordError(_too_large(unpacked, info.file_size))
    if info.compress_type != _ZSTD:
        with archive.open(info) as stream:
            return _bounded(stream, unpacked)
    import zstandard

    log.seek(info.header_offset)
    fields = _LOCAL_HEADER.unpack(log.read(_LOCAL_HEADER.size))
    log.seek(fields[-2] + fields[-1], io.SEEK_CUR)  # its name and extra field
    packed = _read_up_to(log, info.compress_size)
    with zstandard.ZstdDecompressor().stream_reader(packed) as stream:
        return _bounded(stream, unpacked)


def _read_up_to(log: BinaryIO, limit: int) -> bytes:
    """At most `limit` bytes of `log`, a piece at a time (one read of `limit` bytes takes
    that much memory first, whatever the file holds)."""
    parts, size = [], 0
    while size < limit and (part := log.read(min(_PIECE, limit - size))):
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def _bounded(stream: IO[bytes], unpacked: _Unpacked) -> bytes:
    """What `stream` unpacks to, or `RecordError` once it passes what is left."""
    parts, size, limit = [], 0, unpacked.left
    while chunk := stream.read(min(_PIECE, limit + 1 - size)):
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            unpacked.spent = True
            raise RecordError(_too_large(unpacked))
    unpacked.left -= size
    return b"".join(parts)


def _too_large(unpacked: _Unpacked, declared: int | None = None) -> str:
    first = unpacked.left == unpacked.bound  # else what the members before it took counts
    past = "that" if first else f"the {unpacked.left} left"
    size = f"declares {declared} bytes unpacked, past" if declared else "unpacks past"
    total = "" if first else ", a log's members as many in all,"
    return (
        f"one member may unpack to {unpacked.bound} bytes{total} and this one {size} {past} "
        "(raise the bound with --max-unpacked)"
    )


def _unread(samples: int, bound: int) -> str:
    return (
        f"{samples} more samples not read: the log's members unpacked past the {bound} bytes "
        "they may unpack to in all (raise the bound with --max-unpacked)"
    )


def _sample_calls(sample: dict[str, Any], where: str, path: str) -> Iterator[LLMCall]:
    pool = (sample.get("events_data") or {}).get("messages") or []
    key = f"{sample['id']}:{sample.get('epoch', 1)}"
    group = f"{path}:{key}"  # the same sample id in two logs is two traces
    events = [e for e in sample.get("events") or () if e.get("event") == "model"]
    if not events and sample.get("messages"):  # no events recorded: the sample's messages
        messages = [message_of(m) for m in sample["messages"]]
        last = messages[-1] if messages[-1]["role"] == "assistant" else None
        yield LLMCall(
            messages=messages[:-1] if last else messages,
            tools=[],
            output=last,
            trace_id=key,
            span_id="0",
            source=where,
            group=group,
        )
        return
    for n, event in enumerate(events):
        inputs = event.get("input") or [
            message for start, end in event.get("input_refs") or () for message in pool[start:end]
        ]
        choices = (event.get("output") or {}).get("choices") or []
        output = message_of(choices[0]["message"]) if choices else None
        yield LLMCall(
            messages=[message_of(m) for m in inputs],
            tools=[_tool(t) for t in event.get("tools") or ()],
            output=output,
            model=event.get("model"),
            parameters={k: v for k, v in (event.get("config") or {}).items() if v is not None},
            trace_id=key,
            span_id=str(n),
            start=n,
            source=where,
            group=group,
        )


def message_of(message: dict[str, Any]) -> dict[str, Any]:
    """An Inspect chat message in OpenAI form."""
    role = message.get("role")
    if role not in ("system", "user", "assistant", "tool"):
        raise RecordError(f"a message with role {role!r}")
    content = message.get("content")
    if isinstance(content, list):
        texts = [
            str(p.get("text") or "")
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        ]
        content = "".join(texts) or None
    out: dict[str, Any] = {"role": role, "content": content}
    calls = [
        openai_call(call.get("id"), call.get("function"), call.get("arguments") or {})
        for call in message.get("tool_calls") or ()
    ]
    if calls:
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = message.get("tool_call_id")
    return out


def _tool(info: dict[str, Any]) -> dict[str, Any]:
    function = {"name": info["name"], "parameters": info.get("parameters") or {"type": "object"}}
    if info.get("description"):
        function["description"] = info["description"]
    return {"type": "function", "function": function}
