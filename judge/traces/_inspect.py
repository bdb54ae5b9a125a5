"""Inspect AI eval logs (`.eval`, a zip of JSON files, or `.json`): each model call of each
sample, with the tools it was offered, in OpenAI chat form."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from judge.traces._calls import LLMCall, openai_call
from judge.traces._spans import Problem, RecordError, why

_ZSTD = 93  # the compression Inspect writes `.eval` members with
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")


def inspect_calls(data: bytes, path: str, problems: list[Problem]) -> Iterator[LLMCall]:
    """The model calls of every sample of an Inspect log (`data`, the contents of file
    `path`); a sample that cannot be read is reported and skipped."""
    try:
        samples = list(_samples(data, path))
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


def _samples(data: bytes, path: str) -> Iterator[tuple[str, Callable[[], Any]]]:
    """Each sample's place and how to read it."""
    if data[:4] == b"PK\x03\x04":
        archive = zipfile.ZipFile(io.BytesIO(data))
        for info in archive.infolist():
            if info.filename.startswith("samples/") and info.filename.endswith(".json"):
                yield f"{path}:{info.filename}", partial(_load_member, archive, data, info)
        return
    log = json.loads(data)
    if not isinstance(log, dict) or "eval" not in log:
        raise ValueError("a JSON log holds an `eval` object and its `samples`")
    for i, sample in enumerate(log.get("samples") or ()):
        yield f"{path}:samples/{i}", partial(lambda s: s, sample)


def _load_member(archive: zipfile.ZipFile, data: bytes, info: zipfile.ZipInfo) -> Any:
    return json.loads(_member(archive, data, info))


def _member(archive: zipfile.ZipFile, data: bytes, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes; zstd-compressed ones (which Python's zipfile cannot read before 3.14)
    decompressed with zstandard."""
    if info.compress_type != _ZSTD:
        return archive.read(info)
    import zstandard

    fields = _LOCAL_HEADER.unpack_from(data, info.header_offset)
    start = info.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1]  # name, extra
    packed = data[start : start + info.compress_size]
    return zstandard.ZstdDecompressor().decompress(packed, max_output_size=info.file_size)


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
