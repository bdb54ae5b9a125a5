"""Two scripted candidate models on an OpenAI-compatible endpoint, to try agent runs with no key
and no model: each answers by reading the tool results it is sent.

    python examples/refunds/scripted_agents.py --port 8101 &
    judge run examples/refunds/cases.jsonl --models careful,reckless \
        --base-url http://127.0.0.1:8101/v1 \
        --env examples/refunds/environment.py:make_environment -o agent-runs.jsonl

- `careful` looks each order up, verifies its eligibility, refunds what the user asked for (the
  amount they name, else what is left to refund) only when eligible, and says what it did;
- `reckless` refunds straight away, and whatever the shop answers, says the refund was issued.

Asked without tools (the confirmation step of `examples/refunds/agent.py`), both answer "yes".
"""

from __future__ import annotations

import argparse
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODELS = ("careful", "reckless")
SUPPORTED = ["tools", "tool_choice", "temperature", "seed", "reasoning"]


def reply(model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The next assistant message of `model` for this conversation."""
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    asked = messages[last_user]["content"]
    orders = list(dict.fromkeys(re.findall(r"ord_\d+", asked)))
    named = re.search(r"refund (\d+(?:\.\d+)?) of", asked)
    results: dict[tuple[str, str], Any] = {}
    calls: dict[str, tuple[str, str]] = {}
    for message in messages[last_user:]:
        for call in message.get("tool_calls") or []:
            arguments = json.loads(call["function"]["arguments"])
            calls[call["id"]] = (call["function"]["name"], arguments.get("order_id", ""))
        if message["role"] == "tool" and message.get("tool_call_id") in calls:
            results[calls[message["tool_call_id"]]] = json.loads(message["content"])
    step = len(calls)
    if model == "reckless":
        if not calls:
            amount = float(named.group(1)) if named else 100.0
            refunds = [("issue_refund", {"order_id": o, "amount": amount}) for o in orders]
            return _calls(step, *refunds)
        return {"role": "assistant", "content": "Your refund has been issued."}
    for order in orders:
        found = results.get(("lookup_order", order))
        if found is None:
            return _calls(step, ("lookup_order", {"order_id": order}))
        if "error" in found:
            continue
        verified = results.get(("verify_refund_eligibility", order))
        if verified is None:
            return _calls(step, ("verify_refund_eligibility", {"order_id": order}))
        if verified.get("eligible") and ("issue_refund", order) not in results:
            amount = (
                float(named.group(1)) if named else round(found["total"] - found["refunded"], 2)
            )
            return _calls(step, ("issue_refund", {"order_id": order, "amount": amount}))
    said = []
    for order in orders:
        refunded = results.get(("issue_refund", order))
        verified = results.get(("verify_refund_eligibility", order)) or {}
        if refunded and "error" not in refunded:
            said.append(f"{order} is refunded ({refunded['refunded']:.2f} in all).")
        else:
            why = (
                verified.get("reason") or (refunded or {}).get("error") or "it could not be checked"
            )
            said.append(f"{order} cannot be refunded: {why}.")
    return {"role": "assistant", "content": " ".join(said)}


def _calls(step: int, *calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{step + i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for i, (name, arguments) in enumerate(calls)
        ],
    }


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        if not self.path.rstrip("/").endswith("/models"):
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        listed = [{"id": m, "supported_parameters": SUPPORTED} for m in MODELS]
        self._send(200, {"object": "list", "data": listed})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        model = body.get("model")
        if model not in MODELS:
            return self._send(404, {"error": {"message": f"no model {model!r}"}})
        if body.get("tools"):
            message = reply(model, body["messages"])
        else:  # a question without tools (the example agent's confirmation step): agree
            message = {"role": "assistant", "content": "yes"}
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        prompt = len(json.dumps(body["messages"])) // 4
        self._send(200, {
            "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 20,
                      "total_tokens": prompt + 20},
        })  # fmt: skip

    def _send(self, status: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # quiet


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8101)
    port = parser.parse_args().port
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"scripted agents {', '.join(MODELS)} on http://127.0.0.1:{port}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
