"""The common case shapes as msgspec structs, and their decoder: what `_lean` reads a line
into (the structs stay out of the compiled core: compiled, msgspec decodes them 3x slower)."""

from __future__ import annotations

from typing import Any, Protocol

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from judge.cases._form import ExpectedBehavior


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


class _CallFunction(Struct, forbid_unknown_fields=True):
    name: str
    arguments: str | None = None


class LeanCall(Struct, forbid_unknown_fields=True):
    """A call in the OpenAI chat form, `{"id", "type", "function": {"name", "arguments"}}`."""

    function: _CallFunction
    id: Any = None
    type: Any = None

    @property
    def name(self) -> str:
        return self.function.name

    @property
    def arguments(self) -> str:
        return self.function.arguments or ""


class _Message(Struct, forbid_unknown_fields=True):
    """An OpenAI chat message; members `Case` does not read are decoded (so checked) all the
    same, and an unknown one sends the line to `Case`. (`read_lean` unpacks the members in
    this order: a test holds it.)"""

    role: Any = UNSET
    content: str | None | UnsetType = UNSET
    tool_calls: list[LeanCall] | None | UnsetType = UNSET
    refusal: Any = None
    annotations: Any = None
    audio: Any = None
    function_call: Any = None
    name: Any = None
    reasoning_content: Any = None
    # Members that make `Case` read the response in another way.
    choices: Raw | UnsetType = UNSET
    output: Raw | UnsetType = UNSET


class LeanExpected(Struct, forbid_unknown_fields=True):
    name: str
    arguments: dict[str, Any] = {}
    function: Raw | UnsetType = UNSET  # the OpenAI form: read by `Case` only


class _Line(Struct, forbid_unknown_fields=True):
    """A case line as decoded. Every member is decoded, never skipped (msgspec does not check
    the text it skips: a number out of range, bytes that are not UTF-8), but `tools`, read once
    per distinct text by `_read_tools`; an unknown member sends the line to `Case`.
    (`read_lean` unpacks the members in this order: a test holds it.)"""

    id: str
    messages: list[dict[str, Any]] = []
    tools: Raw | UnsetType = UNSET
    response: _Message | None = None
    expected_calls: list[LeanExpected] | None = None
    expected_behavior: ExpectedBehavior | None = None
    labels: dict[str, Any] | None = None
    match: Raw | UnsetType = UNSET
    meta: dict[str, Any] = {}


decoder = msgspec.json.Decoder(_Line)
