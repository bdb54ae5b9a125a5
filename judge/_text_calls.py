"""Tool calls written as JSON text in a reply's content, for models served without a tool-call
parser (llama.cpp's server without a tool template, as the embedded model is run).

What such models really emit, recognised here: a JSON object `{"name", "arguments"}` (or
`"parameters"`), a list of them, inside ```json fences, inside <tool_call>...</tool_call> tags,
or bare. An object counts as a call only when its keys are among the ones a call has, so an
answer that merely contains JSON data is left alone.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from judge._calls import Response, ToolCall

_FENCE = re.compile(r"```(?:json|tool_call|tool_code)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL | re.IGNORECASE)
_CALL_KEYS = frozenset(("name", "arguments", "parameters", "id", "type"))


def calls_in_text(text: str) -> list[ToolCall] | None:
    """The tool calls written in `text`, or None when it holds none."""
    blocks = [m.group(1) for m in _TAG.finditer(text)]
    blocks = blocks or [m.group(1) for m in _FENCE.finditer(text)] or [text]
    calls: list[ToolCall] = []
    for block in blocks:
        try:
            data = orjson.loads(block.strip())
        except orjson.JSONDecodeError:
            continue
        items = data if isinstance(data, list) else [data]
        found = [_call(item) for item in items]
        if found and all(call is not None for call in found):
            calls.extend(call for call in found if call is not None)
    return calls or None


def with_text_calls(response: Response) -> Response:
    """`response` with the calls written in its content moved into `tool_calls` (only when it
    made no structured call: a model that uses `tool_calls` is taken at its word)."""
    if response.tool_calls or not response.content:
        return response
    calls = calls_in_text(response.content)
    if calls is None:
        return response
    return Response(content=None, tool_calls=tuple(calls))


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
        raw = orjson.dumps(arguments).decode()
    else:
        return None
    call_id = item.get("id")
    return ToolCall(
        name=item["name"], arguments=raw, id=call_id if isinstance(call_id, str) else None
    )
