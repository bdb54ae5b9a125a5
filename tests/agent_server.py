"""Scripted agents on the fake OpenRouter: each model answers by reading the tool results it
is sent (the refund shop of `examples/refunds`), so a right and a wrong agent can be told
apart by what they did.

The user's message names the order (`ord_1001`); a message with "status" asks only for it.
- `agent/good`: lookup_order, verify_refund_eligibility, issue_refund of the order's total
  (only when eligible), then says what it did; for a status question, lookup and answer;
- `agent/parallel`: lookup and verify in one reply (two calls), then as agent/good;
- `agent/eager`: issue_refund first; told the error, verifies, then refunds and answers;
- `agent/forbidden`: refunds even when only asked for the status;
- `agent/loop`: looks the order up again and again;
- `agent/liar`: no call at all, "Your refund has been issued";
- `agent/slow`: as agent/good, each reply after `slow_seconds`;
- `agent/plain`: a chat without tools gets "yes" (the example agent's confirmation step), else
  as agent/good;
- `agent/cut`: as agent/good, but its final answer stops at its token limit
  (`finish_reason: "length"`);
- `agent/asks`: asks "Which order is it?" while the user's last message names none, else as
  agent/good (a conversation of several turns, with a simulated user).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.loopback import Request
from tests.openrouter_server import FULL, OpenRouterServer, completion, tool_call

AGENTS = (
    "agent/good",
    "agent/parallel",
    "agent/eager",
    "agent/forbidden",
    "agent/loop",
    "agent/liar",
    "agent/slow",
    "agent/plain",
    "agent/cut",
    "agent/asks",
)


def _call(name: str, step: int, **arguments: Any) -> dict[str, Any]:
    made = tool_call(name, arguments)
    return {**made, "id": f"call_{name}_{step}"}


def _say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _calls(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


class AgentServer(OpenRouterServer):
    def _route(self, request: Request) -> tuple[int, Any, dict[str, str], float]:
        status, reply, extra, delay = super()._route(request)
        if request.method == "GET" and request.path.endswith("/models") and status == 200:
            reply["data"] += [
                {"id": m, "name": m, "pricing": {"prompt": "0", "completion": "0"},
                 "supported_parameters": FULL}
                for m in AGENTS
            ]  # fmt: skip
        return status, reply, extra, delay

    def _chat(self, body: dict[str, Any]) -> tuple[int, Any, dict[str, str], float]:
        model = body["model"]
        if not model.startswith("agent/"):
            return super()._chat(body)
        message = self._reply("agent/good" if model == "agent/cut" else model, body)
        delay = self.slow_seconds if model == "agent/slow" else 0.0
        reply = completion(model, message)
        if model == "agent/cut" and not message.get("tool_calls"):
            reply["choices"][0]["finish_reason"] = "length"
        return 200, reply, {}, delay

    def _reply(self, model: str, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        asked = messages[last_user]["content"]
        if "tools" not in body:
            return _say("yes")
        order = re.search(r"ord_\d+", asked)
        if model == "agent/asks" and order is None:
            return _say("Which order is it?")
        order_id = order.group(0) if order else "ord_0"
        results = {
            call_id: json.loads(m["content"])
            for m in messages[last_user:]
            if m["role"] == "tool"
            for call_id in [m.get("tool_call_id")]
        }
        made = [
            c["function"]["name"]
            for m in messages[last_user:]
            if m["role"] == "assistant"
            for c in m.get("tool_calls") or []
        ]
        step = len([m for m in messages[last_user:] if m["role"] == "assistant"]) + 1
        done = {
            name: next(
                (r for cid, r in results.items() if cid and cid.startswith(f"call_{name}_")
                 and "error" not in r),
                None,
            )
            for name in ("lookup_order", "verify_refund_eligibility", "issue_refund")
        }  # fmt: skip
        if model == "agent/liar":
            return _say("Your refund has been issued.")
        if model == "agent/loop":
            return _calls(_call("lookup_order", step, order_id=order_id))
        if model == "agent/eager" and not made:
            return _calls(_call("issue_refund", step, order_id=order_id, amount=1.0))
        if model == "agent/parallel" and not made:
            return _calls(
                _call("lookup_order", step, order_id=order_id),
                _call("verify_refund_eligibility", step, order_id=order_id),
            )
        order_data = done["lookup_order"]
        if order_data is None:
            return _calls(_call("lookup_order", step, order_id=order_id))
        if "status" in asked and model != "agent/forbidden":
            return _say(f"{order_id} is {order_data['status']}.")
        verified = done["verify_refund_eligibility"]
        if verified is None:
            return _calls(_call("verify_refund_eligibility", step, order_id=order_id))
        if not verified["eligible"] and model != "agent/forbidden":
            return _say(f"Sorry, {order_id} cannot be refunded: {verified['reason']}.")
        refunded = done["issue_refund"]
        if refunded is None and "issue_refund" not in made[-1:]:
            amount = order_data["total"] - order_data["refunded"]
            return _calls(_call("issue_refund", step, order_id=order_id, amount=amount))
        if refunded is None:
            return _say(f"I could not refund {order_id}.")
        return _say(f"Refunded {refunded['refunded']:.2f} for {order_id}.")


@contextmanager
def agent_server(slow_seconds: float = 0.0) -> Iterator[AgentServer]:
    server = AgentServer(slow_seconds).start()
    try:
        yield server
    finally:
        server.stop()
