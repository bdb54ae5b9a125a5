"""LLM calls read from span attributes: OpenInference (`llm.input_messages.N.message.*`, ...)
or the OpenTelemetry GenAI conventions (`gen_ai.input.messages`, ..., or the older form that
carries the messages as span events), recognised per span, all turned into OpenAI chat form."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from judge.cases._json import maybe_json
from judge.traces._spans import RecordError, Span


@dataclass
class LLMCall:
    """One call to a model: what it was sent and what it answered, in OpenAI chat form."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    output: dict[str, Any] | None
    model: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    trace_id: str = ""
    span_id: str = ""
    start: int = 0
    source: str = ""
    case_id: str | None = None
    """The record's own id where it has one (a LangSmith run's); else `<trace_id>:<span_id>`."""
    group: str | None = None
    """What `--per trace` groups by when not the trace id (an Inspect sample of one file)."""


def llm_call(span: Span) -> LLMCall | None:
    """The span's LLM call, or None when the span is not one. Raises `RecordError` when it is
    one whose messages cannot be read."""
    attributes = span.attributes
    openinference = attributes.get("openinference.span.kind") == "LLM"
    if openinference or _has(attributes, "llm.input_messages.", "llm.output_messages."):
        found = _openinference(attributes)
    elif "gen_ai.input.messages" in attributes or "gen_ai.output.messages" in attributes:
        found = _genai(attributes)
    elif _has(attributes, "gen_ai.prompt.", "gen_ai.completion."):
        found = _openllmetry(attributes)
    elif any(e.name == "gen_ai.choice" or _message_event(e.name) for e in span.events):
        found = _genai_events(span)
    else:
        return None
    found.trace_id, found.span_id, found.start, found.source = (
        span.trace_id,
        span.span_id,
        span.start,
        span.source,
    )
    return found


# -- OpenInference ---------------------------------------------------------------------------


def _openinference(attributes: dict[str, Any]) -> LLMCall:
    inputs = indexed(attributes, "llm.input_messages")
    outputs = indexed(attributes, "llm.output_messages")
    tools = []
    for i, tool in enumerate(indexed(attributes, "llm.tools")):
        schema = maybe_json((tool.get("tool") or {}).get("json_schema"))
        if not isinstance(schema, dict):
            raise RecordError(f"llm.tools.{i}.tool.json_schema is not a JSON object")
        tools.append(schema)
    parameters = maybe_json(attributes.get("llm.invocation_parameters")) or {}
    return LLMCall(
        messages=[_oi_message(m, f"llm.input_messages.{i}") for i, m in enumerate(inputs)],
        tools=tools,
        output=_oi_message(outputs[0], "llm.output_messages.0") if outputs else None,
        model=_text_or_none(attributes.get("llm.model_name")),
        parameters=parameters if isinstance(parameters, dict) else {},
    )


def _oi_message(node: dict[str, Any], where: str) -> dict[str, Any]:
    message = node.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise RecordError(f"{where}.message.role is missing")
    content = message.get("content")
    if content is None and isinstance(message.get("contents"), list):
        texts = [
            str((part.get("message_content") or {}).get("text") or "")
            for part in message["contents"]
            if isinstance(part, dict)
        ]
        content = "".join(texts) or None
    out: dict[str, Any] = {"role": message["role"], "content": content}
    calls = []
    for j, item in enumerate(message.get("tool_calls") or ()):
        call = (item or {}).get("tool_call") or {}
        function = call.get("function") or {}
        if not isinstance(function.get("name"), str):
            raise RecordError(f"{where}.message.tool_calls.{j}.tool_call.function.name is missing")
        arguments = function.get("arguments")
        calls.append(openai_call(call.get("id"), function["name"], arguments))
    if calls:
        out["tool_calls"] = calls
    if message.get("tool_call_id") is not None:
        out["tool_call_id"] = message["tool_call_id"]
    if message.get("name") is not None and message["role"] != "tool":
        out["name"] = message["name"]
    return out


# -- GenAI semantic conventions --------------------------------------------------------------


def _genai(attributes: dict[str, Any]) -> LLMCall:
    messages: list[dict[str, Any]] = []
    system = maybe_json(attributes.get("gen_ai.system_instructions"))
    if system:
        messages.append({"role": "system", "content": _parts_text(system)})
    inputs = maybe_json(attributes.get("gen_ai.input.messages")) or []
    outputs = maybe_json(attributes.get("gen_ai.output.messages")) or []
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise RecordError("gen_ai.input.messages and gen_ai.output.messages must be JSON arrays")
    for i, message in enumerate(inputs):
        messages.extend(_genai_message(message, f"gen_ai.input.messages[{i}]"))
    answered = _genai_message(outputs[0], "gen_ai.output.messages[0]") if outputs else []
    output = answered[0] if answered else None
    tools = maybe_json(attributes.get("gen_ai.tool.definitions")) or []
    if not isinstance(tools, list):
        raise RecordError("gen_ai.tool.definitions must be a JSON array")
    return LLMCall(
        messages=messages,
        tools=[t for t in tools if isinstance(t, dict)],
        output=output,
        model=_text_or_none(attributes.get("gen_ai.request.model")),
        parameters=_genai_parameters(attributes),
    )


def _genai_message(message: Any, where: str) -> list[dict[str, Any]]:
    """One GenAI message (role and typed parts) as OpenAI messages: a tool message per
    tool-call response."""
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        raise RecordError(f"{where} has no role")
    role, parts = message["role"], message.get("parts")
    if not isinstance(parts, list):
        raise RecordError(f"{where}.parts must be a list")
    responses = [p for p in parts if isinstance(p, dict) and p.get("type") == "tool_call_response"]
    if role == "tool" and not responses:  # a tool's reply written as text parts
        return [{"role": "tool", "tool_call_id": message.get("id"), "content": _parts_text(parts)}]
    if responses:
        return [
            {"role": "tool", "tool_call_id": p.get("id"), "content": _as_text(p.get("response"))}
            for p in parts
            if isinstance(p, dict) and p.get("type") == "tool_call_response"
        ]
    out: dict[str, Any] = {"role": role, "content": _parts_text(parts)}
    calls = [
        openai_call(p.get("id"), p.get("name"), p.get("arguments"))
        for p in parts
        if isinstance(p, dict) and p.get("type") == "tool_call"
    ]
    if calls:
        out["tool_calls"] = calls
    return [out]


def _openllmetry(attributes: dict[str, Any]) -> LLMCall:
    """OpenLLMetry's indexed form: `gen_ai.prompt.N.{role,content,tool_calls.M.*}`,
    `gen_ai.completion.N.*`, tools as `llm.request.functions.N.{name,description,parameters}`."""

    def message(node: dict[str, Any], where: str) -> dict[str, Any]:
        if not isinstance(node.get("role"), str):
            raise RecordError(f"{where}.role is missing")
        out: dict[str, Any] = {
            "role": node["role"],
            "content": _as_text(maybe_json(node.get("content"))),
        }
        calls = [
            openai_call(call.get("id"), call.get("name"), call.get("arguments"))
            for call in node.get("tool_calls") or ()
            if isinstance(call, dict)
        ]
        if calls:
            out["tool_calls"] = calls
        if node.get("tool_call_id") is not None:
            out["tool_call_id"] = node["tool_call_id"]
        return out

    prompts = indexed(attributes, "gen_ai.prompt")
    completions = indexed(attributes, "gen_ai.completion")
    tools = []
    for function in indexed(attributes, "llm.request.functions"):
        spec = {"name": str(function.get("name"))}
        if function.get("description"):
            spec["description"] = function["description"]
        parameters = maybe_json(function.get("parameters"))
        spec_tool: dict[str, Any] = {"type": "function", "function": spec}
        if isinstance(parameters, dict):
            spec_tool["function"]["parameters"] = parameters
        tools.append(spec_tool)
    return LLMCall(
        messages=[message(m, f"gen_ai.prompt.{i}") for i, m in enumerate(prompts)],
        tools=tools,
        output=message(completions[0], "gen_ai.completion.0") if completions else None,
        model=_text_or_none(attributes.get("gen_ai.request.model")),
        parameters=_genai_parameters(attributes),
    )


def _genai_events(span: Span) -> LLMCall:
    """The older form: one span event per message (`gen_ai.user.message`, ...) and one per
    choice (`gen_ai.choice`)."""
    messages: list[dict[str, Any]] = []
    output = None
    for event in span.events:
        attributes = {k: maybe_json(v) for k, v in event.attributes.items()}
        role = event.name.removeprefix("gen_ai.").removesuffix(".message")
        if event.name == "gen_ai.choice":
            message = attributes.get("message") or {}
            if not isinstance(message, dict):
                raise RecordError("gen_ai.choice's message is not an object")
            output = _event_message("assistant", message)
        elif _message_event(event.name):
            messages.append(_event_message(role, attributes))
    return LLMCall(
        messages=messages,
        tools=[],
        output=output,
        model=_text_or_none(span.attributes.get("gen_ai.request.model")),
        parameters=_genai_parameters(span.attributes),
    )


def _event_message(role: str, body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": body.get("role", role), "content": _as_text(body.get("content"))}
    calls = maybe_json(body.get("tool_calls"))
    if isinstance(calls, list) and calls:
        out["tool_calls"] = [
            openai_call(
                c.get("id"),
                (c.get("function") or {}).get("name"),
                (c.get("function") or {}).get("arguments"),
            )
            for c in calls
            if isinstance(c, dict)
        ]
    if role == "tool" and body.get("id") is not None:
        out["tool_call_id"] = body["id"]
    return out


def _genai_parameters(attributes: dict[str, Any]) -> dict[str, Any]:
    prefix = "gen_ai.request."
    return {
        key.removeprefix(prefix): value
        for key, value in attributes.items()
        if key.startswith(prefix) and key != "gen_ai.request.model"
    }


# -- helpers ---------------------------------------------------------------------------------


def indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The items of flattened attributes `prefix.N.rest...` as a list of nested objects, every
    level of `.N.` a list. Raises `RecordError` when the indices have gaps (`.0`, `.2`)."""
    tree: dict[Any, Any] = {}
    start = prefix + "."
    for key, value in attributes.items():
        if not key.startswith(start):
            continue
        node = tree
        parts = key[len(start) :].split(".")
        for i, part in enumerate(parts):
            step: Any = int(part) if part.isascii() and part.isdigit() else part
            if i == len(parts) - 1:
                node[step] = value
            else:
                node = node.setdefault(step, {})
                if not isinstance(node, dict):
                    raise RecordError(f"{key}: a value and an object at the same place")
    if not tree:
        return []
    listed = _lists(tree, prefix)
    if not isinstance(listed, list):
        raise RecordError(f"{prefix}: expected {prefix}.0, {prefix}.1, ...")
    return listed


def _lists(node: Any, where: str) -> Any:
    if not isinstance(node, dict):
        return node
    keys = list(node)
    if keys and all(isinstance(k, int) for k in keys):
        wanted = list(range(len(keys)))
        if sorted(keys) != wanted:
            missing = sorted(set(range(max(keys) + 1)) - set(keys))
            raise RecordError(f"{where}: indices have a gap (no {where}.{missing[0]})")
        return [_lists(node[i], f"{where}.{i}") for i in wanted]
    return {k: _lists(v, f"{where}.{k}") for k, v in node.items()}


def _message_event(name: str) -> bool:
    role = name.removeprefix("gen_ai.").removesuffix(".message")
    return name.startswith("gen_ai.") and name.endswith(".message") and role in _ROLES


_ROLES = ("system", "user", "assistant", "tool")


def _has(attributes: dict[str, Any], *prefixes: str) -> bool:
    return any(key.startswith(prefixes) for key in attributes)


def openai_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """A tool call in the OpenAI form a case holds, from what a trace recorded."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": str(name), "arguments": arguments_text(arguments)},
    }


def arguments_text(value: Any) -> str:
    """A call's arguments as the text a tool call carries (JSON text as it is)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def _parts_text(parts: Any) -> str | None:
    if isinstance(parts, str):
        return parts
    texts = [
        str(p.get("content") or "")
        for p in parts or ()
        if isinstance(p, dict) and p.get("type", "text") == "text"
    ]
    return "".join(texts) or None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
