"""Inspect AI eval logs (`.eval`, a zip of JSON files, or `.json`): each model call of each
sample, with the tools it was offered, in OpenAI chat form."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from collections.abc import Callable, Iterator
from functools import partial
from typing import IO, Any

from judge.traces._calls import LLMCall, openai_call
from judge.traces._documents import DEEP, Problem, Reading, not_utf8, refused
from judge.traces._spans import RecordError, why

_ZSTD = 93  # the compression Inspect writes `.eval` members with
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")
_PIECE = 1 << 20  # bytes unpacked at a time


def inspect_calls(
    data: bytes, path: str, problems: list[Problem], reading: Reading | None = None
) -> Iterator[LLMCall]:
    """The model calls of every sample of an Inspect log (`data`, the contents of file
    `path`); a sample that cannot be read (one that unpacks past `reading.max_unpacked`
    bytes, say) is reported and skipped."""
    reading = reading or Reading()
    try:
        samples = list(_samples(data, path, reading))
    except Exception as exc:  # not a zip, not JSON, not a log
        problems.append(Problem(path, f"not an Inspect log: {type(exc).__name__}: {exc}"))
        return
    if not samples:
        problems.append(Problem(path, "the log holds no samples"))
    for where, load in samples:  # each sample on its own: one bad sample drops only itself
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


def _samples(data: bytes, path: str, reading: Reading) -> Iterator[tuple[str, Callable[[], Any]]]:
    """Each sample's place and how to read it."""
    if data[:4] == b"PK\x03\x04":
        archive = zipfile.ZipFile(io.BytesIO(data))
        for info in archive.infolist():
            if info.filename.startswith("samples/") and info.filename.endswith(".json"):
                load = partial(_load_member, archive, data, info, reading)
                yield f"{path}:{info.filename}", load
        return
    try:
        log = json_of(data, reading)
    except RecordError as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(log, dict) or "eval" not in log:
        raise ValueError("a JSON log holds an `eval` object and its `samples`")
    for i, sample in enumerate(log.get("samples") or ()):
        yield f"{path}:samples/{i}", partial(lambda s: s, sample)


def _load_member(
    archive: zipfile.ZipFile, data: bytes, info: zipfile.ZipInfo, reading: Reading
) -> Any:
    return json_of(_member(archive, data, info, reading.max_unpacked), reading)


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


def _member(archive: zipfile.ZipFile, data: bytes, info: zipfile.ZipInfo, limit: int) -> bytes:
    """A member's bytes, read as they unpack and refused past `limit` bytes (its declared
    size is not trusted); zstd-compressed ones (which Python's zipfile cannot read before
    3.14) decompressed with zstandard."""
    if info.file_size > limit:
        raise RecordError(_too_large(limit, info.file_size))
    if info.compress_type != _ZSTD:
        with archive.open(info) as stream:
            return _bounded(stream, limit)
    import zstandard

    fields = _LOCAL_HEADER.unpack_from(data, info.header_offset)
    start = info.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1]  # name, extra
    packed = data[start : start + info.compress_size]
    with zstandard.ZstdDecompressor().stream_reader(packed) as stream:
        return _bounded(stream, limit)


def _bounded(stream: IO[bytes], limit: int) -> bytes:
    """What `stream` unpacks to, or `RecordError` once it passes `limit` bytes."""
    parts, size = [], 0
    while chunk := stream.read(min(_PIECE, limit + 1 - size)):
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            raise RecordError(_too_large(limit))
    return b"".join(parts)


def _too_large(limit: int, declared: int | None = None) -> str:
    size = f"declares {declared} bytes unpacked" if declared else "unpacks past that"
    return (
        f"one member may unpack to {limit} bytes and this one {size} (raise the bound with "
        "--max-unpacked)"
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
