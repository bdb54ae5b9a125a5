"""Reading a batch of cases from an HTTP request: a JSON array or NDJSON, within limits.

The body is read whole (up to the size limit) before any reply is sent, so every refusal is a
proper status code; the cases in it are then parsed lazily, one at a time, exactly as the CLI
parses a file, so a bad case becomes an `InvalidCase` result and never a refusal.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException, Request
from starlette.concurrency import run_in_threadpool

from judge._errors import CaseError
from judge.cases._case import Case
from judge.cases._json import DecodeError, TooDeep, array_items, json_kind, loads
from judge.cases._loading import Warn, iter_stream, parse_case
from judge.traces._documents import EncodingErrors, Reading

_log = logging.getLogger("judge.service")
NDJSON = "application/x-ndjson"
NDJSON_TYPES = frozenset((NDJSON, "application/jsonl", "application/x-jsonlines"))
_PARSE_OFF_LOOP = 256 * 1024  # bodies larger than this are decoded in a worker thread


@dataclass(frozen=True)
class Limits:
    """What one request may hold."""

    max_request_bytes: int = 32 * 1024 * 1024
    max_cases: int = 10_000
    max_unpacked_bytes: int | None = None
    """What one compressed member of trace data may unpack to (None: `max_request_bytes`)."""
    encoding_errors: EncodingErrors = "strict"
    """Trace data: a record with bytes that are not UTF-8 skipped (strict) or read with
    U+FFFD in their place (replace)."""

    def reading(self) -> Reading:
        """How a request's trace data is read."""
        unpacked = self.max_unpacked_bytes or self.max_request_bytes
        return Reading(errors=self.encoding_errors, max_unpacked=unpacked)


@dataclass(frozen=True)
class Batch:
    """The cases of one request, parsed lazily (`items()`): NDJSON `body` lines, or the items
    of a decoded JSON `array` (a `CaseError` in the place of one nested too deeply)."""

    source: str
    body: bytes = b""
    array: list[Any] | None = None
    skipped: tuple[str, ...] = ()
    """Trace records that could not be read (`source:line: why`), with `--from`."""

    @property
    def ndjson(self) -> bool:
        """Whether the cases came as NDJSON (and the results go back so)."""
        return self.array is None

    def items(self, warn: Warn | None = None) -> Iterator[Case | CaseError]:
        """Each case in order, or the `CaseError` standing in for it (named `source:line`);
        what a case holds that the format does not know goes to `warn` (default: dropped, as
        an NDJSON reply has no place for it)."""
        warn = warn or _unheard
        if self.array is None:
            yield from iter_stream(io.BytesIO(self.body), self.source, warn=warn)
            return
        for position, data in enumerate(self.array, start=1):
            if isinstance(data, CaseError):  # (`_json_body`)
                yield data
                continue
            try:
                yield parse_case(data, source=self.source, line=position, warn=warn)
            except CaseError as exc:
                yield exc


def _unheard(message: str) -> None:
    """Where an NDJSON request's warnings go: its reply has no place for them, so the
    service's log."""
    _log.warning("%s", message)


def is_ndjson(request: Request) -> bool:
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return media in NDJSON_TYPES


async def read_batch(
    request: Request, limits: Limits, source: str, traces: str | None = None
) -> Batch:
    """The request's cases; 413 over the size limit, 400 for a JSON body that does not parse,
    422 for one that is not an array or holds more cases than allowed. With `traces` (a
    `judge import` format) the body is trace data, converted to cases (422 when none can be
    read); the results come back as for the same cases sent as a JSON array."""
    body = await _read_body(request, limits.max_request_bytes)
    if traces is not None:
        from judge.traces._import import import_data

        found = await run_in_threadpool(
            import_data,
            traces,  # type: ignore[arg-type]
            [(source, body)],
            "call",
            limits.reading(),
        )
        if not found.cases and found.problems:
            said = "; ".join(f"{p.source}: {p.why}" for p in found.problems[:5])
            raise HTTPException(422, f"no {traces} trace could be read: {said}")
        _check_count(len(found.cases), limits)
        reasons = tuple(f"{p.source}: {p.why}" for p in found.problems)
        return Batch(source=source, array=found.cases, skipped=reasons)
    if is_ndjson(request):
        count = (
            await run_in_threadpool(_count_lines, body)
            if len(body) > _PARSE_OFF_LOOP
            else _count_lines(body)
        )
        _check_count(count, limits)
        return Batch(source=source, body=body)
    try:
        if len(body) > _PARSE_OFF_LOOP:
            data = await run_in_threadpool(_json_body, body, source)
        else:
            data = _json_body(body, source)
    except DecodeError as exc:
        raise HTTPException(
            400,
            f"the body is not valid JSON ({exc}); send a JSON array of cases, or NDJSON "
            f"(one case per line) with Content-Type: {NDJSON}",
        ) from None
    if not isinstance(data, list):
        raise HTTPException(
            422,
            f"the body must be a JSON array of cases, got {json_kind(data)}; to send one "
            "case, wrap it in [...]",
        )
    _check_count(len(data), limits)
    return Batch(source=source, array=data)


async def read_json(request: Request, limits: Limits) -> Any:
    """The request's JSON body, whatever its shape; 413 over the size limit, 400 when it
    does not parse."""
    body = await _read_body(request, limits.max_request_bytes)
    try:
        if len(body) > _PARSE_OFF_LOOP:
            return await run_in_threadpool(loads, body)
        return loads(body)
    except DecodeError as exc:
        raise HTTPException(400, f"the body is not valid JSON ({exc})") from None


def check_count(count: int, limits: Limits) -> None:
    """422 when a request holds more than `max_cases` cases (or results)."""
    _check_count(count, limits)


def _json_body(body: bytes, source: str) -> Any:
    """The decoded body. An array that holds a case nested past what `loads` follows holds, in
    that case's place, the `CaseError` such an NDJSON line gets: the other cases are read."""
    try:
        return loads(body)
    except TooDeep:
        items = array_items(body)
        if items is None:
            raise
    return [_element(text, source, line) for line, text in enumerate(items, start=1)]


def _element(text: bytes, source: str, line: int) -> Any:
    try:
        return loads(text)
    except TooDeep as exc:
        return CaseError(f"not valid JSON: {exc}", source=source, line=line)
    except DecodeError as exc:  # the body is not JSON: refused, saying where
        raise DecodeError(f"case {line} of the array: {exc}") from None


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(int(declared), limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(size, limit, at_least=True)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(size: int, limit: int, *, at_least: bool = False) -> HTTPException:
    shown = f"at least {size}" if at_least else str(size)
    return HTTPException(
        413,
        f"the request body is {shown} bytes, over this service's limit of {limit} bytes "
        "(judge serve --max-request-bytes); split the batch",
    )


def _check_count(count: int, limits: Limits) -> None:
    if count > limits.max_cases:
        raise HTTPException(
            422,
            f"the batch holds {count} cases, over this service's limit of {limits.max_cases} "
            "per request (judge serve --max-cases); split the batch",
        )


def _count_lines(body: bytes) -> int:
    return sum(1 for line in body.splitlines() if line.strip())
