"""The case model: one request, the tools offered, the candidate response, and what was expected."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from judge.cases._calls import Response, ShapeError, normalise_response
from judge.cases._form import ExpectedBehavior, Label, matcher_fault
from judge.cases._json import DecodeError, loads, pointer
from judge.cases._match import Match
from judge.cases._tools import (
    NO_ARGUMENTS,
    ToolFormError,
    name_fault,
    read_tool,
    read_tool_list,
    refuse_duplicates,
)


class Tool(BaseModel):
    """A tool the candidate could call, normalised from the OpenAI, Responses, Anthropic or MCP
    form."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str | None = None
    parameters: dict[str, Any] = Field(default_factory=lambda: dict(NO_ARGUMENTS))
    """The JSON Schema of the arguments, exactly as the model was given it (none given: no
    arguments at all)."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        fault = name_fault(name)  # (`read_tool` checked one read from a case: one made in Python)
        if fault is not None:
            raise ValueError(fault)
        return name

    @classmethod
    def from_spec(cls, spec: Any) -> Tool:
        """Read a tool in any known form: OpenAI chat (`{"type": "function", "function":
        {...}}`), Responses (`{"type": "function", "name", "parameters"}`), Anthropic
        (`{"name", "input_schema"}`) or MCP (`{"name", "inputSchema"}`). Raises `ToolFormError`
        (a `ValueError`) for an entry that fits none."""
        if isinstance(spec, Tool):
            return spec
        name, description, parameters = read_tool(spec)
        return cls(name=name, description=description, parameters=parameters)

    def to_openai(self) -> dict[str, Any]:
        """The tool in OpenAI chat-completions form."""
        fn: dict[str, Any] = {"name": self.name, "parameters": self.parameters}
        if self.description is not None:
            fn["description"] = self.description
        return {"type": "function", "function": fn}


UNFINISHED_OUTLINE = (
    "an unfinished outline: fill in the request, the expected call and the agent's response, "
    'then remove "draft"'
)
"""Why a case marked `"draft": true` is an `InvalidCase`."""


class ExpectedCall(BaseModel):
    """A call the candidate should make.

    Each argument value is a literal JSON value (compared as JSON, or as the case's
    `match.values` says), or a matcher, at any depth: `{"$any": [v1, v2]}` (any of them);
    `{"$number": 3.5, "abs": 0.01}` (or `"rel"`); `{"$int": 3}` (`3.0` fails);
    `{"$string": "Paris", "case": false}` (also `space`, `punct`, `normalise: "bfcl"`);
    `{"$regex": "^ord_[0-9]+$"}` (ECMA-262); `{"$date": "2024-05-01"}` (the same day in any
    form; `order`: `dmy` or `mdy`); `{"$unordered": [...]}` (a multiset);
    `{"$object": {...}, "extra": "allow"}`; `{"$judge": "..."}` (the LLM judge decides).
    `"$optional": true` with any of them: may be left out (alone: any value, or none);
    `{"$absent": true}`: must be left out. A key beginning with `$` that is none of these,
    or a matcher written wrong, is refused with its JSON pointer (a misspelt matcher is never
    compared as a literal).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _read_openai_form(cls, data: Any) -> Any:
        # Accept an OpenAI tool call copied as is: {"function": {"name", "arguments": "..."}}.
        if isinstance(data, dict) and isinstance(data.get("function"), dict):
            data = data["function"]
        if isinstance(data, dict) and isinstance(data.get("arguments"), str):
            try:
                data = {**data, "arguments": loads(data["arguments"])}
            except DecodeError as exc:
                raise ValueError(f"arguments text is not JSON: {exc}") from None
        return data

    @field_validator("arguments")
    @classmethod
    def _check_matchers(cls, arguments: dict[str, Any]) -> dict[str, Any]:
        for key, value in arguments.items():
            fault = matcher_fault(value)
            if fault is not None:
                raise ShapeError(pointer([key]) + fault.pointer, fault.message)
        return arguments


class CallBounds(BaseModel):
    """How many calls to one tool are allowed: `{"min": 1, "max": 2}`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min: int = Field(default=0, ge=0)
    max: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> CallBounds:
        if self.max is not None and self.max < self.min:
            raise ValueError(f"max ({self.max}) is below min ({self.min})")
        return self


class AssertTools(BaseModel):
    """Which tools the candidate must call, must avoid, and how often: checked over every
    call graded (with a trajectory, every assistant turn's)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    called: tuple[str, ...] = ()
    """Each must be called at least once."""
    avoided: tuple[str, ...] = ()
    """None may be called."""
    counts: dict[str, CallBounds] = Field(default_factory=dict)
    max_calls: int | None = Field(default=None, ge=0)
    """At most this many calls in all."""


class Labels(BaseModel):
    """Human labels, used only by calibration. A key the format does not know is reported
    (a warning; an error with `strict`) and not kept."""

    model_config = ConfigDict(frozen=True)

    selection: Label | None = None
    arguments: Label | None = None
    answer: Label | None = None
    """Whether the text the response (or run) ends with is a right answer."""
    trajectory: Label | None = None
    """Whether the whole path of an agent run was a sensible one (tau-bench's labels)."""
    reviewer: str | None = None
    """Who gave the labels (`judge review`, `judge label`)."""
    labelled_at: str | None = None
    """When they were given (ISO 8601)."""


class UserScenario(BaseModel):
    """A simulated user for a multi-turn agent run (`judge run --user-model`): what they
    want, what they know and reveal only when asked, how they speak."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    instructions: str = Field(min_length=1)
    """What the user wants, in the user's own terms (the simulator's brief)."""
    facts: dict[str, Any] = Field(default_factory=dict)
    """What the user knows (an order id, an address) and gives only when asked."""
    persona: str | None = None
    """How the user speaks (terse, polite, impatient...)."""
    max_turns: int = Field(default=10, ge=1)
    """At most this many user turns after the case's own; the run then ends."""

    @field_validator("instructions")
    @classmethod
    def _said(cls, instructions: str) -> str:
        if not instructions.strip():
            raise ValueError("instructions must say what the user wants (it is blank)")
        return instructions


class Case(BaseModel):
    """One graded unit: the conversation, the tools offered, the candidate response and
    what was expected. `name` is accepted for `id`. A case marked `"draft": true` (an outline
    `judge init --from-mcp` writes) is refused until it is filled in."""

    model_config = ConfigDict(frozen=True, coerce_numbers_to_str=True, populate_by_name=True)

    id: str = Field(validation_alias=AliasChoices("id", "name"))
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: tuple[Tool, ...] = ()
    response: Response | None = None
    """What the candidate returned; None means it has yet to be run."""
    expected_calls: tuple[ExpectedCall, ...] | None = None
    """None: unknown (judge only); []: no tool should be called."""
    expected_behavior: ExpectedBehavior | None = None
    labels: Labels | None = None
    match: Match | None = None
    """How strictly the calls must follow `expected_calls` (see `Match`)."""
    assert_tools: AssertTools | None = None
    """Tools that must be called or avoided, and call counts (see `AssertTools`)."""
    expected_answer: str | list[str] | None = None
    """A reference for the final answer: a text, or facts that must all appear in it."""
    user: UserScenario | None = None
    """A simulated user's scenario: `judge run --user-model` plays it after each reply."""
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _refuse_outline(cls, data: Any) -> Any:
        # An outline (`judge init --from-mcp`) is refused, never graded: its request is a
        # placeholder, so no verdict on it, nor a model's reply to it, would mean anything.
        draft = data.get("draft", False) if isinstance(data, dict) else False
        if draft is True:
            raise ShapeError("/draft", UNFINISHED_OUTLINE)
        if draft is not False:
            raise ShapeError("/draft", "draft must be true (an unfinished outline) or false")
        return data

    @field_validator("tools", mode="before")
    @classmethod
    def _read_tools(cls, tools: Any) -> Any:
        try:
            if isinstance(tools, tuple) and all(isinstance(t, Tool) for t in tools):
                refuse_duplicates([t.name for t in tools])
                return tools
            return tuple(read_tool_list(tools, Tool.from_spec))
        except ToolFormError as exc:
            raise ShapeError(exc.pointer, str(exc)) from None

    @field_validator("response", mode="before")
    @classmethod
    def _read_response(cls, response: Any) -> Response | None:
        return normalise_response(response)

    @property
    def tool_calls(self) -> tuple[Any, ...]:
        """The candidate's calls (empty when there is no response)."""
        return self.response.tool_calls if self.response is not None else ()
