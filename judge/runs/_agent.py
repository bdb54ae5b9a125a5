"""Agent runs: a candidate driven step by step against an environment (the built-in loop), or
the user's own agent code, given a `chat` bound to the current candidate.

A step is one request to the candidate. The built-in loop sends the case's prompt, executes
every call of the reply in order in the environment, answers each with a `tool` message (the
result as JSON text; a raised error as `{"error": "..."}`), and asks again, until a reply has no
call (its text is the final answer) or the steps run out (`StepLimit`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from judge.cases._calls import Response
from judge.cases._case import Case
from judge.cases._json import dumps
from judge.cases._match import load_object
from judge.checks._env import Environment, ToolText, describe_error
from judge.checks._structure import parse_arguments


class Chat(Protocol):
    """One request to the current candidate: `await chat(messages, tools=...)` returns the
    assistant message (OpenAI form). `tools` defaults to the case's; None or [] sends none."""

    def __call__(
        self, messages: Sequence[dict[str, Any]], tools: Any = ...
    ) -> Awaitable[dict[str, Any]]: ...


Agent = Callable[..., Awaitable[Any]]
"""`await agent(case, chat)` (or `agent(case, chat, env=...)`) returns the transcript."""


class StepLimit(Exception):
    """The run has used all its steps and the candidate still wants to go on."""


@dataclass
class Transcript:
    """What a run added after the case's own messages, as it goes."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_errors: list[dict[str, Any]] = field(default_factory=list)
    """Calls that failed in the environment: `{"call", "name", "message"}` (`call`: the
    call's place among the run's calls)."""
    calls: int = 0


def prompt_of(case: Case) -> list[dict[str, Any]]:
    """The messages a run starts from: the case's, up to its last user turn. A recorded path
    after it (assistant and tool turns) is a reference transcript's, not the prompt."""
    messages = case.messages
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)
    return list(messages if last is None else messages[: last + 1])


def added_after(prompt: Sequence[dict[str, Any]], messages: Sequence[Any]) -> list[Any] | None:
    """The messages of a conversation that come after the case's own (found as a run inside
    it: an agent may put its own system prompt first); None when the prompt is not in it."""
    n = len(prompt)
    for start in range(len(messages) - n + 1):
        if list(messages[start : start + n]) == list(prompt):
            return list(messages[start + n :])
    return None


async def built_in_loop(case: Case, chat: Chat, env: Environment, transcript: Transcript) -> None:
    """Ask, execute every call of the reply in order, answer each, ask again; return when a
    reply has no call. `chat` raises `StepLimit` once the steps are spent."""
    prompt = prompt_of(case)
    while True:
        reply = await chat([*prompt, *transcript.messages])
        transcript.messages.append(reply)
        calls = reply.get("tool_calls") or []
        if not calls:
            return
        for call in calls:
            text, why = await execute(env, call)
            if why is not None:
                name = (call.get("function") or {}).get("name")
                transcript.tool_errors.append(
                    {"call": transcript.calls, "name": name, "message": why}
                )
            transcript.calls += 1
            transcript.messages.append(
                {"role": "tool", "tool_call_id": call.get("id"), "content": text}
            )


async def execute(env: Environment, call: dict[str, Any]) -> tuple[str, str | None]:
    """Run one OpenAI-form call in `env` (awaited where it can be: an MCP server's): the tool
    message's text, and why it failed (None when it did not)."""
    function = call.get("function") or {}
    name = function.get("name")
    arguments, why = parse_arguments(function.get("arguments") or "")  # as the checks read it
    if arguments is not None:
        acall = getattr(env, "acall", None)
        try:
            if acall is not None:
                result = await acall(str(name), arguments)
            else:
                result = env.call(str(name), arguments)
        except Exception as exc:  # the tool refused: the agent is told, and goes on
            why = describe_error(exc)
        else:
            if isinstance(result, ToolText):  # text for the agent as it is
                return str(result), None
            return dumps(result, default=str).decode(), None
    return dumps({"error": why}).decode(), why


def assistant_message(response: Response, step: int) -> dict[str, Any]:
    """The reply as the assistant turn of the conversation (OpenAI form), each call with an
    id (made up for calls without one: calls written as text)."""
    message: dict[str, Any] = {"role": "assistant", "content": response.content}
    if response.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_{step}_{j}",
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for j, call in enumerate(response.tool_calls)
        ]
    return message


def final_answer(messages: Sequence[dict[str, Any]]) -> str | None:
    """The text the run ends with: the last message's, when it is an assistant turn without
    calls."""
    if not messages:
        return None
    last = messages[-1]
    if last.get("role") != "assistant" or last.get("tool_calls"):
        return None
    content = last.get("content")
    return content if isinstance(content, str) else None


def load_agent(spec: str) -> Agent:
    """`module:callable` or `path/to/file.py:callable`: an async callable `agent(case, chat)`."""
    agent = load_object(spec)
    if not callable(agent):
        raise ValueError(f"{spec!r} is not callable")
    return agent  # type: ignore[no-any-return]


async def call_agent(agent: Agent, case: Case, chat: Chat, env: Environment | None) -> Any:
    """`await agent(case, chat)`, with `env=` when the agent takes it."""
    try:
        takes_env = "env" in inspect.signature(agent).parameters
    except (TypeError, ValueError):
        takes_env = False
    made = agent(case, chat, env=env) if takes_env else agent(case, chat)
    return await made if inspect.isawaitable(made) else made
