"""The common case shapes read straight into msgspec structs, for the check path.

`read_lean` decodes a JSON line of the usual form (OpenAI tools and tool calls, expected calls
with plain arguments, no `match`) in one pass, skipping what checking never reads (messages,
meta), about five times cheaper than decoding and building the pydantic `Case`. It accepts only
what `Case` accepts and reads it the same way; for any other line, valid or not, it returns None
and the caller reads the line as a `Case`, whose errors name file, line, case and pointer.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from judge.cases._form import MATCHER_KEYS, ExpectedBehavior, Label
from judge.cases._json import loads

_NULL = b"null"
_NO_PARAMETERS = b'{"type":"object","properties":{}}'


class Called(Protocol):
    """A call as checking reads it: `ToolCall`, or `LeanCall`."""

    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> str: ...


class Expected(Protocol):
    """An expected call as checking reads it: `ExpectedCall`, or `LeanExpected`."""

    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> dict[str, Any]: ...


class _Object(Struct):
    """Any JSON object, its members skipped."""


class _Function(Struct):
    name: str
    description: str | None = None
    parameters: Raw | UnsetType = UNSET
    input_schema: Raw | UnsetType = UNSET


class _Tool(Struct):
    """A tool in the OpenAI form, `{"type": "function", "function": {...}}`."""

    function: _Function


class _CallFunction(Struct):
    name: str
    arguments: str | None = None


class LeanCall(Struct):
    """A call in the OpenAI chat form, `{"id", "type", "function": {"name", "arguments"}}`."""

    function: _CallFunction

    @property
    def name(self) -> str:
        return self.function.name

    @property
    def arguments(self) -> str:
        return self.function.arguments or ""


class _Message(Struct):
    role: Any = UNSET
    content: str | None | UnsetType = UNSET
    tool_calls: list[LeanCall] | None | UnsetType = UNSET
    # Members that make `Case` read the response in another way.
    choices: Raw | UnsetType = UNSET
    output: Raw | UnsetType = UNSET


class LeanExpected(Struct):
    name: str
    arguments: dict[str, Any] = {}
    function: Raw | UnsetType = UNSET  # the OpenAI form: read by `Case` only


class _Labels(Struct):
    selection: Label | None = None
    arguments: Label | None = None


class _Line(Struct):
    """A case line as decoded: every member `Case` reads, checked as `Case` checks it."""

    id: str
    messages: list[_Object] = []
    tools: Raw | UnsetType = UNSET  # read by `_read_tools`
    response: _Message | None = None
    expected_calls: list[LeanExpected] | None = None
    expected_behavior: ExpectedBehavior | None = None
    labels: _Labels | None = None
    match: Raw | UnsetType = UNSET
    meta: _Object | UnsetType = UNSET


class LeanTool:
    """A tool as checking reads it: its name and its schema's JSON text, decoded on demand."""

    __slots__ = ("name", "schema_key")

    def __init__(self, name: str, schema_key: bytes) -> None:
        self.name = name
        self.schema_key = schema_key
        """The schema's JSON text as written: what the validator cache is keyed by."""

    @property
    def parameters(self) -> dict[str, Any]:
        value: dict[str, Any] = loads(self.schema_key)
        return value


class LeanCase:
    """The parts of a case that checking reads, with the names `Case` gives them."""

    __slots__ = ("id", "tools", "tool_calls", "expected_calls")
    match = None
    """A lean case has no match settings of its own (a line with them is read as `Case`)."""

    def __init__(
        self,
        id: str,
        tools: dict[str, LeanTool],
        tool_calls: list[LeanCall],
        expected_calls: list[LeanExpected] | None,
    ) -> None:
        self.id = id
        self.tools = tools
        """The tools offered, by name (the last of a name, as `Case` has them)."""
        self.tool_calls = tool_calls
        self.expected_calls = expected_calls


_decoder = msgspec.json.Decoder(_Line)


def read_lean(raw: bytes) -> LeanCase | None:
    """The case of a JSON line in the common form, or None: read it as a `Case` instead."""
    try:
        line = _decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    if line.match is not UNSET and bytes(line.match) != _NULL:
        return None
    tools = _read_tools(line.tools)
    if tools is None:
        return None
    calls: list[LeanCall] = []
    response = line.response
    if response is not None:
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
    return LeanCase(line.id, tools, calls, line.expected_calls)


_tools_decoder = msgspec.json.Decoder(list[_Tool] | None)
_tool_sets: dict[bytes, dict[str, LeanTool] | None] = {}
_TOOL_SETS_KEPT = 1024


def _read_tools(raw: Raw | UnsetType) -> dict[str, LeanTool] | None:
    """The tools of a case, or None when they are not in the lean form. Cases of a file mostly
    offer the same tools, so each distinct `tools` text is read once."""
    if raw is UNSET:
        return {}
    text = bytes(raw)
    if text in _tool_sets:
        return _tool_sets[text]
    if len(_tool_sets) >= _TOOL_SETS_KEPT:
        _tool_sets.clear()
    found = _tool_sets[text] = _tools_in(text)
    return found


def _tools_in(text: bytes) -> dict[str, LeanTool] | None:
    try:
        specs = _tools_decoder.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return None
    tools = {}
    for spec in specs or ():
        fn = spec.function
        if fn.input_schema is not UNSET:
            return None
        key = _NULL if fn.parameters is UNSET else bytes(fn.parameters)
        if key == _NULL:
            key = _NO_PARAMETERS
        elif not key.startswith(b"{"):
            return None  # not an object: `Case` says why
        tools[fn.name] = LeanTool(fn.name, key)
    return tools


def _good_matcher(value: dict[str, Any]) -> bool:
    return (
        value.keys() <= MATCHER_KEYS
        and isinstance(value.get("$any", []), list)
        and isinstance(value.get("$optional", False), bool)
    )
