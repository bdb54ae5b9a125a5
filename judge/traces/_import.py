"""Traces in: LLM calls recorded in production, as cases.

`--per call` makes one case per LLM call (`messages` its input, `tools` those offered,
`response` its output); `--per trace` one case per trace, the whole conversation in `messages`
(every call and tool result in its turns, the final answer last) and no `response`, for
`judge check --match ...` and the trajectory judge. A record that cannot be read is reported
with file:line and why, and skipped; the rest is converted. Two cases never share an id: a
later one gets `<id>#2` (`#3`, ...), its own id kept in `meta.original_id` (`UniqueIds`).
"""

from __future__ import annotations

import io
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager as ContextManager
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

from judge.cases._calls import first_choice
from judge.traces._calls import LLMCall, llm_call
from judge.traces._documents import Problem, Reading, iter_documents
from judge.traces._ids import UniqueIds
from judge.traces._inspect import inspect_calls
from judge.traces._langsmith import is_run, langsmith_call
from judge.traces._spans import RecordError, raw_spans, read_span, why

Format = Literal["otel", "langsmith", "inspect", "openai"]
FORMATS: tuple[Format, ...] = ("otel", "langsmith", "inspect", "openai")
Per = Literal["call", "trace"]


@dataclass
class Imported:
    """The cases made, and what was skipped and why."""

    cases: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    """Records that are not LLM calls, by kind (`span`: spans of other operations)."""
    calls: int = 0
    ids: UniqueIds = field(default_factory=UniqueIds)
    """The ids given, and those made unique (shared by the readings of one command)."""
    reading: Reading = field(default_factory=Reading)
    """How the files are read (bytes that are not UTF-8, the bound on unpacking)."""
    per_file: Counter[str] = field(default_factory=Counter)
    """LLM calls read, by file (a file with none is an input with nothing usable)."""


def import_traces(
    fmt: Format, paths: Iterable[str | Path], per: Per = "call", reading: Reading | None = None
) -> Imported:
    """Read every file of `paths` in format `fmt` and make cases of its LLM calls."""
    found = Imported(reading=reading or Reading())
    found.cases = list(iter_import(fmt, paths, found, per))
    return found


def iter_import(
    fmt: Format, paths: Iterable[str | Path], found: Imported, per: Per = "call"
) -> Iterator[dict[str, Any]]:
    """The cases of the files, one at a time: with `--per call` as each LLM call is read (a
    file is read a chunk at a time), with `--per trace` once every file is read. `found`
    collects what was skipped and why (its `cases` stay empty), and the ids made unique."""
    calls = (call for path in paths for call in _read_file(fmt, str(path), found))
    if per == "call":
        for call in calls:
            found.calls += 1
            yield from map(found.ids.claim, cases_per_call([call]))
        return
    collected = list(calls)
    found.calls += len(collected)
    yield from map(found.ids.claim, cases_per_trace(collected))


def import_data(
    fmt: Format,
    sources: Iterable[tuple[str, bytes]],
    per: Per = "call",
    reading: Reading | None = None,
) -> Imported:
    """The cases of trace data given as (name, contents) pairs (a request body)."""
    found = Imported(reading=reading or Reading())
    calls = [call for name, data in sources for call in _read(fmt, io.BytesIO(data), name, found)]
    found.calls = len(calls)
    made = cases_per_call(calls) if per == "call" else cases_per_trace(calls)
    found.cases = [found.ids.claim(case) for case in made]
    return found


def _read_file(fmt: Format, path: str, found: Imported) -> Iterator[LLMCall]:
    with _opened(path) as handle:
        for call in _read(fmt, handle, path, found):
            found.per_file[path] += 1
            yield call


def _opened(path: str) -> ContextManager[BinaryIO]:
    return nullcontext(sys.stdin.buffer) if path == "-" else Path(path).open("rb")


def _read(fmt: Format, handle: BinaryIO, path: str, found: Imported) -> Iterator[LLMCall]:
    reading = found.reading
    if fmt == "inspect":  # a zip, its members read one at a time
        yield from inspect_calls(handle, path, found.problems, reading)
        return
    said, records = len(found.problems), 0
    documents = iter_documents(handle, path, found.problems, reading.errors, reading.max_record)
    for line, document in documents:
        records += 1
        yield from _calls_of(fmt, document, f"{path}:{line}", found)
    if not records and len(found.problems) == said:  # an empty file is not "0 cases, fine"
        found.problems.append(Problem(path, "no record in it (an empty file)"))


def _calls_of(fmt: Format, document: Any, source: str, found: Imported) -> Iterator[LLMCall]:
    """The LLM calls of one record; what cannot be read goes to `found.problems`."""
    if fmt == "openai":
        try:
            yield _proxy_pair(document, source)
        except Exception as exc:
            found.problems.append(Problem(source, why(exc)))
        return
    if fmt == "langsmith":
        yield from _langsmith_run(document, source, found)
        return
    try:
        spans = raw_spans(document)
    except RecordError as exc:
        found.problems.append(Problem(source, str(exc)))
        return
    for kind, raw in spans:  # each span on its own: one bad span drops only itself
        try:
            span = read_span(kind, raw, source)
        except RecordError as exc:
            found.problems.append(Problem(source, str(exc)))
            continue
        try:
            call = llm_call(span)
        except Exception as exc:  # RecordError, or any malformation of its attributes
            found.problems.append(Problem(source, f"span {span.span_id} ({span.name}): {why(exc)}"))
            continue
        if call is None:
            found.skipped["span"] += 1
        else:
            yield call


def _langsmith_run(document: Any, source: str, found: Imported) -> Iterator[LLMCall]:
    if not is_run(document):
        found.problems.append(Problem(source, "not a LangSmith run (no run_type)"))
        return
    try:
        run = langsmith_call(document, source)
    except Exception as exc:
        found.problems.append(Problem(source, f"run {document.get('id')}: {why(exc)}"))
        return
    if run is None:
        found.skipped["run"] += 1
    else:
        yield run


def _proxy_pair(document: Any, source: str) -> LLMCall:
    """A proxy's log line: `{"request": <chat-completions body>, "response": <completion>}`."""
    if not isinstance(document, dict) or not isinstance(document.get("request"), dict):
        raise RecordError('expected {"request": <chat request body>, "response": <completion>}')
    request, response = document["request"], document.get("response")
    messages = request.get("messages")
    if not isinstance(messages, list):
        raise RecordError("request.messages must be a list")
    output = first_choice(response).get("message")
    if response is not None and not isinstance(output, dict):
        raise RecordError("response is not a chat completion (no choices[0].message)")
    tools = request.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise RecordError("request.tools must be a list of tools")
    parameters = {k: v for k, v in request.items() if k not in ("messages", "tools", "model")}
    return LLMCall(
        messages=messages,
        tools=tools,
        output=output,
        model=request.get("model") if isinstance(request.get("model"), str) else None,
        parameters=parameters,
        trace_id=str(response.get("id") or "") if isinstance(response, dict) else "",
        source=source,
    )


def cases_per_call(calls: Iterable[LLMCall]) -> Iterator[dict[str, Any]]:
    for call in calls:
        case: dict[str, Any] = {
            "id": _call_id(call),
            "messages": call.messages,
            "tools": call.tools,
        }
        if call.output is not None:
            case["response"] = call.output
        case["meta"] = _meta(call)
        yield case


def cases_per_trace(calls: Iterable[LLMCall]) -> Iterator[dict[str, Any]]:
    """One case per trace: the conversation of its last LLM call (its input holds the earlier
    turns, tool results included), the call's answer last."""
    traces: dict[str, list[LLMCall]] = {}
    for call in calls:
        traces.setdefault(call.group or call.trace_id or call.source, []).append(call)
    for found in traces.values():
        # By start time; at a tie (or none recorded) the longer input is the later call.
        ordered = sorted(found, key=lambda c: (c.start, len(c.messages)))
        trace_id = ordered[-1].trace_id or ordered[-1].source
        last = ordered[-1]
        messages = [*last.messages, *([last.output] if last.output is not None else [])]
        tools: dict[str, dict[str, Any]] = {}
        for call in ordered:
            for tool in call.tools:
                tools.setdefault(_tool_name(tool), tool)
        meta = _meta(last) | {"llm_calls": len(ordered), "span_ids": [c.span_id for c in ordered]}
        meta.pop("span_id", None)
        yield {"id": trace_id, "messages": messages, "tools": list(tools.values()), "meta": meta}


def _call_id(call: LLMCall) -> str:
    if call.case_id:
        return call.case_id
    if call.trace_id and call.span_id:
        return f"{call.trace_id}:{call.span_id}"
    return call.trace_id or call.source


def _meta(call: LLMCall) -> dict[str, Any]:
    meta: dict[str, Any] = {"trace_id": call.trace_id or None}
    if call.span_id:
        meta["span_id"] = call.span_id
    meta |= {"model": call.model, "invocation_parameters": call.parameters, "source": call.source}
    return meta


def _tool_name(tool: dict[str, Any]) -> str:
    function = tool.get("function")
    return str((function if isinstance(function, dict) else tool).get("name"))
