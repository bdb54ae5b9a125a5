"""The common case shapes read straight into msgspec structs, for the check path.

`read_lean` decodes a JSON line of the usual form (OpenAI tool calls, expected calls, no
`match`) in one pass, about five times cheaper than decoding and building the pydantic `Case`,
and reads each distinct `tools` text once. It accepts only what `Case` accepts and reads it the
same way; for any other line, valid or not, it returns None and the caller reads the line as a
`Case`, whose errors name file, line, case and pointer.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType

from judge.cases._form import MATCHER_KEYS, ExpectedBehavior
from judge.cases._json import DecodeError, dumps, loads
from judge.cases._lean_form import LeanCall, LeanExpected, decoder
from judge.cases._tools import ToolFormError, read_tool

_NULL = b"null"


class LeanTool:
    """A tool as checking reads it: its name and its schema, and the schema's JSON text (what
    the validator cache is keyed by)."""

    __slots__ = ("name", "parameters", "schema_key", "index")

    def __init__(self, name: str, parameters: dict[str, Any], index: int = 0) -> None:
        self.name = name
        self.parameters = parameters
        self.schema_key = dumps(parameters)
        self.index = index  # its place in the case's `tools`


class LeanCase:
    """The parts of a case that checking reads, with the names `Case` gives them."""

    __slots__ = (
        "id",
        "tools",
        "tool_calls",
        "expected_calls",
        "expected_behavior",
        "reply_text",
        "messages",
    )
    match = None
    """A lean case has no match settings of its own (a line with them is read as `Case`)."""

    def __init__(
        self,
        id: str,
        tools: dict[str, LeanTool],
        tool_calls: list[LeanCall],
        expected_calls: list[LeanExpected] | None,
        expected_behavior: ExpectedBehavior | None = None,
        reply_text: str | None = None,
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        self.id = id
        self.tools = tools
        """The tools offered, by name (the last of a name, as `Case` has them)."""
        self.tool_calls = tool_calls
        self.expected_calls = expected_calls
        self.expected_behavior = expected_behavior
        self.reply_text = reply_text
        """The response's text: "" when it has none, None when there is no response."""
        self.messages = messages or []
        """The conversation before the response (where the calls' values come from)."""


def read_lean(raw: bytes) -> LeanCase | None:
    """The case of a JSON line in the common form, or None: read it as a `Case` instead."""
    try:
        line = decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    if line.match is not UNSET and bytes(line.match) != _NULL:
        return None
    tools = _read_tools(line.tools)
    if tools is None:
        return None
    labels = line.labels or {}
    if (  # (a few comparisons: a generator here costs a quarter of a microsecond a line)
        (labels and not labels.keys() <= _LABEL_KEYS)  # `Case` reads (or reports) the rest
        or labels.get("selection") not in _LABELS
        or labels.get("arguments") not in _LABELS
        or labels.get("answer") not in _LABELS
    ):
        return None
    calls: list[LeanCall] = []
    response = line.response
    text = None
    if response is not None:
        text = response.content if isinstance(response.content, str) else ""
        if response.content is None and isinstance(response.refusal, str):
            text = response.refusal  # as `Case` reads it
        if response.choices is not UNSET or response.output is not UNSET:
            return None
        if response.role is UNSET and response.content is UNSET and response.tool_calls is UNSET:
            return None  # not a message: `Case` reads it as a call, or says why not
        if isinstance(response.tool_calls, list):
            calls = response.tool_calls
    for expected in line.expected_calls or ():
        if expected.function is not UNSET:
            return None
        for value in expected.arguments.values():
            matcher = type(value) is dict and ("$any" in value or "$optional" in value)
            if matcher and not _good_matcher(value):
                return None  # `Case` says what is wrong with it
    return LeanCase(
        line.id, tools, calls, line.expected_calls, line.expected_behavior, text, line.messages
    )


_tool_sets: dict[tuple[int, bytes], tuple[bytes, dict[str, LeanTool] | None]] = {}
"""Each `tools` text read, with what it reads as, by its length and its end: hashing a long
text whole costs more than the rest of finding it (a text is then compared whole)."""
_TOOL_SETS_KEPT = 1024
_KEY_END = 128
_last: tuple[bytes, dict[str, LeanTool] | None] = (b"", None)
_LABELS = (None, "correct", "incorrect")
_LABEL_KEYS = frozenset(("selection", "arguments", "answer"))
"""The labels checked here; a line with any other is read as a `Case`."""


def _read_tools(raw: Raw | UnsetType) -> dict[str, LeanTool] | None:
    """The tools of a case by name, or None when `Case` would not read them so. Cases of a file
    mostly offer the same tools, so each distinct `tools` text is read once."""
    global _last
    if raw is UNSET:
        return {}
    text = bytes(raw)
    if text == _last[0]:  # the common run: the line before offered the same tools
        return _last[1]
    key = (len(text), text[-_KEY_END:])
    kept = _tool_sets.get(key)
    if kept is not None and kept[0] == text:
        found = kept[1]
    else:
        if len(_tool_sets) >= _TOOL_SETS_KEPT:
            _tool_sets.clear()
        found = _tools_in(text)
        _tool_sets[key] = (text, found)
    _last = (text, found)
    return found


def _tools_in(text: bytes) -> dict[str, LeanTool] | None:
    """`Case`'s reading of `tools` (`Tool.from_spec` for each), or None where it would fail."""
    try:
        specs = loads(text)
    except DecodeError:
        return None
    if specs is None:
        return {}
    if not isinstance(specs, list):
        return None
    tools = {}
    for index, spec in enumerate(specs):
        try:
            name, _, parameters = read_tool(spec)
        except ToolFormError:
            return None
        tools[name] = LeanTool(name, parameters, index)
    return tools


def _good_matcher(value: dict[str, Any]) -> bool:
    return (
        value.keys() <= MATCHER_KEYS
        and isinstance(value.get("$any", []), list)
        and isinstance(value.get("$optional", False), bool)
    )
