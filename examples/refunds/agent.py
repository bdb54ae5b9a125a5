"""A worked example of your own agent under `judge run --agent`: its own system prompt, the
shop's tools run in the environment, and a confirmation step before any refund.

    judge run examples/refunds/cases.jsonl --models openai/gpt-4.1-mini,qwen/qwen3-32b \
        --agent examples/refunds/agent.py:refund_agent \
        --env examples/refunds/environment.py:make_environment --max-steps 8

The runner calls `await refund_agent(case, chat, env=...)` once per model, case and run, with
a fresh environment. `chat(messages, tools=...)` sends one request to the model being
compared, with the settings agreed for every model, and returns its assistant message (OpenAI
form); `tools` defaults to the case's, and `tools=None` asks without tools. The agent returns
the transcript; the runner grades it like its own loop (calls, final state, tool assertions,
the judge) and records every request's tokens and latency.
"""

from __future__ import annotations

import json
from typing import Any

SYSTEM = (
    "You are the refunds assistant of the shop. Look the order up, verify its refund "
    "eligibility, and refund only what the customer asks for. Say briefly what you did."
)
CONFIRM = (
    "The customer wrote: {request!r}. You are about to refund {amount} of order {order_id}. "
    "Does that match what the customer asked for? Answer yes or no."
)


async def refund_agent(case: Any, chat: Any, env: Any) -> list[dict[str, Any]]:
    """Ask, run the calls, answer them; confirm every refund with the model first."""
    conversation: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, *case.messages]
    request = next(m["content"] for m in reversed(case.messages) if m["role"] == "user")
    while True:
        reply = await chat(conversation)
        conversation.append(reply)
        calls = reply.get("tool_calls") or []
        if not calls:
            return conversation  # the runner keeps what comes after the case's own messages
        for call in calls:
            name = call["function"]["name"]
            try:
                arguments = json.loads(call["function"]["arguments"] or "{}")
                if name == "issue_refund" and not await _confirmed(chat, request, arguments):
                    raise RuntimeError("the refund was not confirmed: ask the customer")
                result: Any = env.call(name, arguments)
            except Exception as exc:  # the model is told, and may try again
                result = {"error": str(exc)}
            conversation.append(
                {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
            )


async def _confirmed(chat: Any, request: str, arguments: dict[str, Any]) -> bool:
    """The confirmation step: one request without tools, yes or no."""
    question = CONFIRM.format(
        request=request, amount=arguments.get("amount"), order_id=arguments.get("order_id")
    )
    answer = await chat([{"role": "user", "content": question}], tools=None)
    return str(answer.get("content") or "").strip().lower().startswith("yes")
