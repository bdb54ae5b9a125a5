"""Spans read from OpenTelemetry JSON: the OTLP JSON the Collector's file exporter writes
(`resourceSpans` documents) and the Python SDK's own span JSON (what `ConsoleSpanExporter`
prints), one document per line, several pretty-printed one after another, or one per file."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class RecordError(ValueError):
    """One record that cannot be read; the import reports it and goes on."""


@dataclass(frozen=True)
class Event:
    name: str
    attributes: dict[str, Any]


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    name: str
    start: int
    """Start time in nanoseconds since the epoch (0 when unknown): the order within a trace."""
    attributes: dict[str, Any]
    events: tuple[Event, ...] = ()
    source: str = ""
    """`file:line` of the document the span came from."""


@dataclass
class Problem:
    source: str
    why: str


@dataclass
class Documents:
    """The JSON documents of a file, each with the line it starts on, and what could not be
    decoded."""

    found: list[tuple[int, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def read_documents(data: bytes, name: str) -> Documents:
    """Every JSON value in `data` (the contents of file `name`): one per line (JSON Lines),
    several pretty-printed one after another, or one for the whole file. Text that is not JSON
    is reported (name:line) and skipped up to the next line."""
    text = data.decode("utf-8", errors="replace")
    path = name
    decoder = json.JSONDecoder()
    out = Documents()
    at, size = 0, len(text)
    while True:
        while at < size and text[at] in " \t\r\n":
            at += 1
        if at >= size:
            return out
        line = text.count("\n", 0, at) + 1
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            out.problems.append(Problem(f"{path}:{line}", f"not JSON: {exc.msg}"))
            newline = text.find("\n", at)
            at = size if newline < 0 else newline + 1
            continue
        out.found.append((line, value))
        at = end


def spans_of(document: Any, source: str) -> Iterator[Span]:
    """The spans of one document: OTLP JSON (`resourceSpans`, or a bare OTLP span), or the SDK's
    span JSON. Raises `RecordError` for any other document."""
    if isinstance(document, dict) and "resourceSpans" in document:
        for resource in document.get("resourceSpans") or ():
            scopes = resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or ()
            for scope in scopes:
                for span in scope.get("spans") or ():
                    yield _otlp_span(span, source)
    elif isinstance(document, dict) and "traceId" in document and "spanId" in document:
        yield _otlp_span(document, source)
    elif isinstance(document, dict) and isinstance(document.get("context"), dict):
        yield _sdk_span(document, source)
    elif isinstance(document, list):  # a JSON array of SDK spans
        for item in document:
            yield from spans_of(item, source)
    else:
        kind = type(document).__name__ if not isinstance(document, dict) else "object"
        raise RecordError(f"not an OpenTelemetry span or resourceSpans document (a JSON {kind})")


def _otlp_span(span: dict[str, Any], source: str) -> Span:
    try:
        return Span(
            trace_id=_hex_id(span.get("traceId")),
            span_id=_hex_id(span.get("spanId")),
            name=str(span.get("name", "")),
            start=int(span.get("startTimeUnixNano") or 0),
            attributes=otlp_attributes(span.get("attributes") or ()),
            events=tuple(
                Event(str(e.get("name", "")), otlp_attributes(e.get("attributes") or ()))
                for e in span.get("events") or ()
            ),
            source=source,
        )
    except (TypeError, ValueError, AttributeError) as exc:
        raise RecordError(f"an OTLP span that cannot be read: {exc}") from None


def _sdk_span(span: dict[str, Any], source: str) -> Span:
    context = span["context"]
    attributes = span.get("attributes")
    if not isinstance(attributes, dict):
        raise RecordError("an SDK span without an attributes object")
    return Span(
        trace_id=_hex_id(context.get("trace_id")),
        span_id=_hex_id(context.get("span_id")),
        name=str(span.get("name", "")),
        start=iso_nanos(span.get("start_time")),
        attributes=dict(attributes),
        events=tuple(
            Event(str(e.get("name", "")), dict(e.get("attributes") or {}))
            for e in span.get("events") or ()
            if isinstance(e, dict)
        ),
        source=source,
    )


def otlp_attributes(items: Any) -> dict[str, Any]:
    """OTLP key-value attributes as plain values."""
    return {str(item["key"]): otlp_value(item.get("value") or {}) for item in items}


def otlp_value(value: dict[str, Any]) -> Any:
    """One OTLP `AnyValue` as a plain value (64-bit integers arrive as text)."""
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [otlp_value(v) for v in (value["arrayValue"] or {}).get("values") or ()]
    if "kvlistValue" in value:
        return otlp_attributes((value["kvlistValue"] or {}).get("values") or ())
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _hex_id(value: Any) -> str:
    """A trace or span id as lower-case hex: OTLP JSON writes hex, protobuf's JSON mapping
    base64, the SDK `0x`-prefixed hex."""
    text = str(value or "")
    if text.startswith("0x"):
        return text[2:].lower()
    if text and all(c in "0123456789abcdefABCDEF" for c in text) and len(text) in (16, 32):
        return text.lower()
    try:
        return base64.b64decode(text, validate=True).hex() if text else ""
    except (binascii.Error, ValueError):
        return text


def iso_nanos(value: Any) -> int:
    if not isinstance(value, str):
        return 0
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return 0
    return int(moment.timestamp() * 1_000_000_000)
