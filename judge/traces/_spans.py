"""Spans read from OpenTelemetry JSON: the OTLP JSON the Collector's file exporter writes
(`resourceSpans` documents) and the Python SDK's own span JSON (what `ConsoleSpanExporter`
prints), one document per line, several pretty-printed one after another, or one per file."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime
from typing import Any


class RecordError(ValueError):
    """One record that cannot be read; the import reports it and goes on."""


def why(exc: Exception) -> str:
    """What a record's problem says: a `RecordError`'s own words, else the error's type too."""
    return str(exc) if isinstance(exc, RecordError) else f"{type(exc).__name__}: {exc}"


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


def raw_spans(document: Any) -> list[tuple[str, Any]]:
    """The spans of one document, each as (`otlp` or `sdk`, its JSON) to be read on its own:
    OTLP JSON (`resourceSpans`, or a bare OTLP span), or the SDK's span JSON (one, or an array).
    Raises `RecordError` for any other document."""
    if isinstance(document, dict) and "resourceSpans" in document:
        found: list[tuple[str, Any]] = []
        for resource in _objects(document.get("resourceSpans"), "resourceSpans"):
            scopes = resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans")
            for scope in _objects(scopes, "scopeSpans"):
                found.extend(("otlp", span) for span in _list(scope.get("spans"), "spans"))
        if not found:
            raise RecordError("a resourceSpans document with no span in it")
        return found
    if isinstance(document, dict) and "traceId" in document and "spanId" in document:
        return [("otlp", document)]
    if isinstance(document, dict) and isinstance(document.get("context"), dict):
        return [("sdk", document)]
    if isinstance(document, list) and document:  # a JSON array of SDK spans
        if any(isinstance(item, list) for item in document):
            raise RecordError("an array of spans holds an array, not a span")
        return [found for item in document for found in raw_spans(item)]
    if isinstance(document, list):
        raise RecordError("an empty array: no span in it")
    kind = type(document).__name__ if not isinstance(document, dict) else "object"
    raise RecordError(f"not an OpenTelemetry span or resourceSpans document (a JSON {kind})")


def read_span(kind: str, span: Any, source: str) -> Span:
    """One span of `raw_spans`; raises `RecordError` when it cannot be read."""
    if not isinstance(span, dict):
        raise RecordError(f"a span must be an object, not {type(span).__name__}")
    try:
        return _otlp_span(span, source) if kind == "otlp" else _sdk_span(span, source)
    except RecordError:
        raise
    except Exception as exc:  # any other malformation of this one span
        raise RecordError(f"a span that cannot be read: {type(exc).__name__}: {exc}") from None


def _objects(value: Any, where: str) -> list[dict[str, Any]]:
    items = _list(value, where)
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise RecordError(f"{where}[{index}] must be an object, not {type(item).__name__}")
    return items


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise RecordError(f"{where} must be a list")
    return value


def _otlp_span(span: dict[str, Any], source: str) -> Span:
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
