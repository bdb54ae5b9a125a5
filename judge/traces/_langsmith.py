"""LangSmith runs exported as JSON lines: the LLM and chat runs, their input messages (OpenAI
form, or LangChain's serialised messages), their output message, and the tools from the
invocation parameters or the inputs."""

from __future__ import annotations

from typing import Any

from judge.traces._calls import LLMCall, openai_call
from judge.traces._spans import RecordError, iso_nanos

LLM_RUNS = ("llm", "chat")
_ROLES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}


def is_run(document: Any) -> bool:
    return isinstance(document, dict) and "run_type" in document


def langsmith_call(run: dict[str, Any], source: str) -> LLMCall | None:
    """The run's LLM call, or None when it is another kind of run (a chain, a tool)."""
    kind = run.get("run_type")
    if not isinstance(kind, str):
        raise RecordError(f"run_type must be text, not {type(kind).__name__}")
    if kind not in LLM_RUNS:
        return None
    inputs, outputs = run.get("inputs") or {}, run.get("outputs") or {}
    if not isinstance(inputs, dict) or not isinstance(outputs, dict):
        raise RecordError("inputs and outputs must be objects")
    messages = inputs.get("messages", inputs.get("prompts"))
    if isinstance(messages, list) and len(messages) == 1 and isinstance(messages[0], list):
        messages = messages[0]  # LangChain chat models log a batch of one
    if not isinstance(messages, list):
        raise RecordError("inputs.messages must be a list of messages")
    extra = run.get("extra") or {}
    parameters = dict(extra.get("invocation_params") or {})
    tools = _tools(parameters.pop("tools", None), "extra.invocation_params.tools")
    tools = tools or _tools(inputs.get("tools"), "inputs.tools")
    model = parameters.get("model") or parameters.get("model_name") or inputs.get("model")
    return LLMCall(
        # a completion model's prompts are text: each a user message
        messages=[
            {"role": "user", "content": m} if isinstance(m, str) else message_of(m)
            for m in messages
        ],  # fmt: skip
        tools=tools,
        output=_output(outputs),
        model=model if isinstance(model, str) else None,
        parameters=parameters,
        trace_id=str(run.get("trace_id") or run.get("id") or ""),
        span_id=str(run.get("id") or ""),
        start=iso_nanos(str(run.get("start_time") or "").replace(" ", "T")),
        source=source,
        case_id=str(run["id"]) if run.get("id") else None,
    )


def _tools(value: Any, where: str) -> list[dict[str, Any]]:
    """The tools a run was offered: a list of objects, or `RecordError` (never read as none)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise RecordError(f"{where} must be a list of tools, not {type(value).__name__}")
    for index, tool in enumerate(value):
        if not isinstance(tool, dict):
            raise RecordError(f"{where}[{index}] must be a tool object, not {type(tool).__name__}")
    return value


def _output(outputs: dict[str, Any]) -> dict[str, Any] | None:
    if not outputs:
        return None
    choices = outputs.get("choices")
    if isinstance(choices, list) and choices:  # an OpenAI completion
        return message_of(choices[0].get("message") or {})
    generations = outputs.get("generations")
    if isinstance(generations, list) and generations:  # LangChain's LLMResult
        batch = generations[0] if isinstance(generations[0], list) else generations
        if not batch:
            return None
        first = batch[0]
        if isinstance(first, dict) and isinstance(first.get("message"), dict):
            return message_of(first["message"])
        if isinstance(first, dict):
            return {"role": "assistant", "content": first.get("text")}
    for key in ("output", "message"):
        if isinstance(outputs.get(key), dict):
            return message_of(outputs[key])
    if "role" in outputs or "content" in outputs:
        return message_of(outputs)
    raise RecordError("outputs hold no message (choices, generations, output or message)")


def message_of(message: Any) -> dict[str, Any]:
    """One message in OpenAI form: OpenAI's, or LangChain's (`{"lc": 1, "id": [...,
    "AIMessage"], "kwargs"}`, `{"type": "ai", "data"}` or `{"type": "ai", "content"}`)."""
    if not isinstance(message, dict):
        raise RecordError(f"a message must be an object, not {type(message).__name__}")
    kind = message.get("role")
    body = message
    if kind is None and message.get("lc") and isinstance(message.get("kwargs"), dict):
        name = str((message.get("id") or [""])[-1])
        kind = name.removesuffix("MessageChunk").removesuffix("Message").lower()
        body = message["kwargs"]
    elif kind is None and isinstance(message.get("data"), dict):
        kind, body = message.get("type"), message["data"]
    elif kind is None:
        kind = message.get("type")
    role = _ROLES.get(str(kind))
    if role is None:
        raise RecordError(f"a message of unknown kind {kind!r}")
    content = body.get("content")
    if isinstance(content, list):
        texts = [p if isinstance(p, str) else str(p.get("text") or "") for p in content
                 if isinstance(p, str | dict)]  # fmt: skip
        content = "".join(texts) or None
    out: dict[str, Any] = {"role": role, "content": content}
    calls = _calls(body)
    if calls:
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = body.get("tool_call_id")
    return out


def _calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    calls = body.get("tool_calls")
    if not calls:
        calls = (body.get("additional_kwargs") or {}).get("tool_calls")
    found = []
    for call in calls or ():
        if isinstance(call.get("function"), dict):  # OpenAI form
            function = call["function"]
            name, arguments = function.get("name"), function.get("arguments")
        else:  # LangChain's {"name", "args", "id"}
            name, arguments = call.get("name"), call.get("args")
        found.append(openai_call(call.get("id"), name, {} if arguments is None else arguments))
    return found
