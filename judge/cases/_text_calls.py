"""Tool calls written as JSON text in a reply's content, for models served without a tool-call
parser (llama.cpp's server without a tool template, as the embedded model is run).

What such models really emit, recognised here: a JSON object `{"name", "arguments"}` (or
`"parameters"`), a list of them, inside ```json fences, inside <tool_call>...</tool_call> tags,
bare, or after a sentence (`Sure: {"name": ...}`). JSON counts as calls only when every object
in it is shaped like a call (its keys among the ones a call has) and at least one names a tool
of the case, so an answer that merely contains JSON data (`{"name": "Paris"}`) is left alone.
A call to a tool the case lacks, beside one it has, is kept: it is graded as an unknown tool.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from typing import Any

from judge.cases._calls import Response, ToolCall
from judge.cases._json import DecodeError, dumps, loads

_FENCE = re.compile(r"```(?:json|tool_call|tool_code)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL | re.IGNORECASE)
_OPENING = re.compile(r"[\[{]")
_CALL_KEYS = frozenset(("name", "arguments", "parameters", "id", "type"))
_DECODER = json.JSONDecoder()


def calls_in_text(text: str, tools: Collection[str]) -> list[ToolCall] | None:
    """The tool calls written in `text` (naming the tools `tools`), or None when it holds none."""
    blocks = [m.group(1) for m in _TAG.finditer(text)]
    blocks = blocks or [m.group(1) for m in _FENCE.finditer(text)] or [text]
    calls: list[ToolCall] = []
    for block in blocks:
        for value in _json_values(block):
            items = value if isinstance(value, list) else [value]
            found = [_call(item) for item in items]
            if not found or any(call is None for call in found):
                continue
            named = [call for call in found if call is not None]
            if any(call.name in tools for call in named):
                calls.extend(named)
    return calls or None


def with_text_calls(response: Response, tools: Collection[str]) -> Response:
    """`response` with the calls written in its content moved into `tool_calls` (only when it
    made no structured call: a model that uses `tool_calls` is taken at its word)."""
    if response.tool_calls or not response.content:
        return response
    calls = calls_in_text(response.content, tools)
    if calls is None:
        return response
    return Response(content=None, tool_calls=tuple(calls))


def _json_values(block: str) -> Iterator[Any]:
    """The block as one JSON value, else every JSON object or list written inside it."""
    try:
        yield loads(block.strip())
        return
    except DecodeError:
        pass
    at = 0
    while (opening := _OPENING.search(block, at)) is not None:
        try:
            value, at = _DECODER.raw_decode(block, opening.start())
        except json.JSONDecodeError:
            at = opening.start() + 1
            continue
        yield value


def _call(item: Any) -> ToolCall | None:
    if isinstance(item, dict) and isinstance(item.get("function"), dict):
        item = item["function"]  # {"type": "function", "function": {...}}
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return None
    if not item.keys() <= _CALL_KEYS:
        return None
    arguments = item.get("arguments", item.get("parameters", {}))
    if isinstance(arguments, str):
        raw = arguments
    elif isinstance(arguments, dict):
        raw = dumps(arguments).decode()
    else:
        return None
    call_id = item.get("id")
    return ToolCall(
        name=item["name"], arguments=raw, id=call_id if isinstance(call_id, str) else None
    )
