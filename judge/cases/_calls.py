"""Normalise a candidate response into one internal form.

Accepted shapes (all become `Response(content, tool_calls)`, raw argument text kept):

- an OpenAI chat message: `{"content": ..., "tool_calls": [{"id", "type", "function": {"name",
  "arguments"}}]}`, or a whole chat completion (`{"choices": [{"message": ...}]}`);
- a plain list of `{"name": ..., "arguments": {...} | "..."}`;
- OpenAI Responses API output items (`{"type": "function_call", "name", "arguments", "call_id"}`,
  `{"type": "message", ...}`), or a whole response object (`{"output": [...]}`);
- Anthropic content blocks (`{"type": "tool_use", "id", "name", "input"}`, `{"type": "text"}`),
  or a whole message (`{"role": "assistant", "content": [...]}`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from judge.cases._json import dumps, json_kind


class ToolCall(BaseModel):
    """One call the candidate made, in the internal form."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The tool name exactly as the model wrote it."""
    arguments: str
    """The raw argument text, kept so that invalid JSON can be graded."""
    id: str | None = None
    """The provider's call id, when it gave one."""


class Response(BaseModel):
    """What the candidate model returned: text and tool calls."""

    model_config = ConfigDict(frozen=True)

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


class ShapeError(ValueError):
    """A field that fits none of the accepted shapes; `pointer` is relative to the field."""

    def __init__(self, pointer: str, message: str) -> None:
        self.pointer = pointer
        super().__init__(message)


def first_choice(body: Any) -> dict[str, Any]:
    """A chat completion's first choice; empty when the body has none (not a completion)."""
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    return first if isinstance(first, dict) else {}


def normalise_response(value: Any) -> Response | None:
    """Turn any accepted response shape into a `Response` (None stays None)."""
    if value is None or isinstance(value, Response):
        return value
    texts: list[str] = []
    calls: list[ToolCall] = []
    _collect(value, "", texts, calls)
    return Response(content="".join(texts) if texts else None, tool_calls=tuple(calls))


def _collect(value: Any, ptr: str, texts: list[str], calls: list[ToolCall]) -> None:
    if isinstance(value, str):
        texts.append(value)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _item(item, f"{ptr}/{i}", texts, calls)
    elif isinstance(value, dict):
        if "choices" in value:
            choices = value["choices"]
            if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
                raise ShapeError(f"{ptr}/choices", "expected a non-empty list of choices")
            _collect(choices[0].get("message"), f"{ptr}/choices/0/message", texts, calls)
        elif "output" in value and "type" not in value:
            _collect(value["output"], f"{ptr}/output", texts, calls)
        elif "tool_calls" in value or "content" in value or "role" in value:
            _message(value, ptr, texts, calls)
        else:
            _item(value, ptr, texts, calls)
    elif value is not None:
        raise ShapeError(
            ptr, f"expected a message, a list of calls or text, got {json_kind(value)}"
        )


def _message(msg: dict[str, Any], ptr: str, texts: list[str], calls: list[ToolCall]) -> None:
    content = msg.get("content")
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        # Anthropic blocks or OpenAI content parts.
        for i, part in enumerate(content):
            _item(part, f"{ptr}/content/{i}", texts, calls)
    elif content is not None:
        raise ShapeError(f"{ptr}/content", f"expected text or a list, got {json_kind(content)}")
    elif isinstance(msg.get("refusal"), str):  # OpenAI's refusal: the text the model said
        texts.append(msg["refusal"])
    tool_calls = msg.get("tool_calls")
    if tool_calls is None:
        return
    if not isinstance(tool_calls, list):
        raise ShapeError(f"{ptr}/tool_calls", f"expected a list, got {json_kind(tool_calls)}")
    for i, call in enumerate(tool_calls):
        _item(call, f"{ptr}/tool_calls/{i}", texts, calls)


def _item(item: Any, ptr: str, texts: list[str], calls: list[ToolCall]) -> None:
    if isinstance(item, ToolCall):
        calls.append(item)
        return
    if isinstance(item, str):
        texts.append(item)
        return
    if not isinstance(item, dict):
        raise ShapeError(ptr, f"expected an object, got {json_kind(item)}")
    kind = item.get("type")
    if "function" in item and isinstance(item["function"], dict):  # OpenAI chat tool call
        fn = item["function"]
        calls.append(_call(fn, "arguments", f"{ptr}/function", item.get("id"), missing=""))
    elif kind == "function_call":  # Responses API
        call_id = item.get("call_id", item.get("id"))
        calls.append(_call(item, "arguments", ptr, call_id, missing=""))
    elif kind == "tool_use":  # Anthropic
        calls.append(_call(item, "input", ptr, item.get("id"), missing="{}"))
    elif kind in ("text", "output_text", "input_text"):
        text = item.get("text")
        if not isinstance(text, str):
            raise ShapeError(f"{ptr}/text", "expected text")
        texts.append(text)
    elif kind == "message":  # Responses API output message
        _message(item, ptr, texts, calls)
    elif kind in ("reasoning", "thinking", "redacted_thinking", "refusal"):
        if kind == "refusal" and isinstance(item.get("refusal"), str):
            texts.append(item["refusal"])
    elif kind is None and "name" in item:  # plain {name, arguments}
        calls.append(_call(item, "arguments", ptr, item.get("id"), missing="{}"))
    else:
        raise ShapeError(ptr, f"not a tool call, a text part or a message (type {kind!r})")


def _call(obj: dict[str, Any], key: str, ptr: str, call_id: Any, *, missing: str) -> ToolCall:
    name = obj.get("name")
    if not isinstance(name, str):
        raise ShapeError(f"{ptr}/name", "a tool call needs a name (a string)")
    args = obj.get(key)
    if args is None:
        raw = missing
    elif isinstance(args, str):
        raw = args
    else:
        try:
            raw = dumps(args).decode()
        except TypeError as exc:
            raise ShapeError(f"{ptr}/{key}", f"arguments are not JSON data: {exc}") from None
    return ToolCall(name=name, arguments=raw, id=call_id if isinstance(call_id, str) else None)
