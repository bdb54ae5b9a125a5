"""A real HTTP server on 127.0.0.1 that speaks chat completions, scripted per test.

It runs its own event loop in a thread, so both sync and async code can talk to it. Each request
is answered by the next scripted `Reply`, or, when the script is empty, by `default` (which by
default returns a valid verdict for whatever schema was asked for).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.loopback import Answer, LoopbackServer, Request


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    body: Any = None
    """A dict is sent as JSON; str or bytes as they are (to send malformed JSON)."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


Seen = Request  # a request the server received


def completion(
    content: str | None = None,
    *,
    finish_reason: str = "stop",
    refusal: str | None = None,
    tool_arguments: str | None = None,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
) -> dict[str, Any]:
    """A chat-completion body."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if tool_arguments is not None:
        message["tool_calls"] = [
            {
                "id": "call_v",
                "type": "function",
                "function": {"name": "submit_verdict", "arguments": tool_arguments},
            }
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "judge-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def requested_schema(body: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema a request asked the reply to fit (any structured-output mode)."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return dict(fmt["json_schema"]["schema"])
    if body.get("tools"):
        return dict(body["tools"][0]["function"]["parameters"])
    text = body["messages"][0]["content"]
    return dict(json.loads(text[text.index("JSON Schema:\n") + len("JSON Schema:\n") :]))


def verdict_for(body: dict[str, Any], label: str = "correct") -> dict[str, Any]:
    """A valid verdict for the schema a request asked for, every label set to `label`."""
    schema = requested_schema(body)
    if "verdicts" in schema["properties"]:
        calls = schema["properties"]["verdicts"]["items"]["properties"]["call"]["enum"]
        return {
            "verdicts": [
                {"call": c, "reasoning": "fine", "verdict": label, "problems": []} for c in calls
            ]
        }
    if "category" not in schema["properties"]:  # a trajectory verdict
        problems = [] if label == "correct" else ["needless_call"]
        return {"reasoning": "fine", "verdict": label, "problems": problems}
    if "answered" in schema["properties"]["category"]["enum"]:  # an answer verdict
        category = "answered" if label == "correct" else "unanswered"
        return {"reasoning": "fine", "verdict": label, "category": category}
    category = "right_call" if label == "correct" else "wrong_tool"
    actions = {"needed_action": "call_tool", "assistant_action": "call_tool"}
    decided = actions if "needed_action" in schema["properties"] else {}  # a small rubric
    return {"reasoning": "fine", **decided, "verdict": label, "category": category}


def answer(body: dict[str, Any], label: str = "correct") -> Reply:
    """A valid reply to a request, in the structured-output mode it used."""
    text = json.dumps(verdict_for(body, label))
    if body.get("tools"):
        return Reply(body=completion(None, tool_arguments=text))
    return Reply(body=completion(text))


class ChatServer(LoopbackServer):
    """Scripted chat-completions endpoint on 127.0.0.1."""

    def __init__(self, default: Callable[[dict[str, Any]], Reply] = answer) -> None:
        super().__init__()
        self.default = default
        self.script: deque[Reply | Callable[[dict[str, Any]], Reply]] = deque()
        self.in_flight = 0
        self.max_in_flight = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_requests(self) -> list[Seen]:
        return [s for s in self.seen if s.path.endswith("/chat/completions")]

    def push(self, *replies: Reply | Callable[[dict[str, Any]], Reply]) -> None:
        with self._lock:
            self.script.extend(replies)

    def _next(self, body: Any) -> Reply:
        with self._lock:
            scripted = self.script.popleft() if self.script else self.default
        return scripted(body) if callable(scripted) else scripted

    async def handle(self, request: Seen) -> Answer:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        reply = (
            self._next(request.body)
            if request.path.endswith("/chat/completions")
            else Reply(status=404, body={"error": {"message": f"no route {request.path}"}})
        )
        try:
            if reply.delay:
                await asyncio.sleep(reply.delay)
        finally:
            with self._lock:
                self.in_flight -= 1
        return Answer(reply.status, reply.body, reply.headers)


@contextmanager
def serving(default: Callable[[dict[str, Any]], Reply] = answer) -> Iterator[ChatServer]:
    server = ChatServer(default).start()
    try:
        yield server
    finally:
        server.stop()


def tokenised(text: str, at: dict[str, dict[str, float]] | None = None) -> dict[str, Any]:
    """`logprobs.content` spelling `text` in small tokens, every token certain except where a
    value of one of the keys of `at` starts: there the alternatives are `at[key]` (token text
    -> probability), the first of them being the token generated."""
    import math
    import re

    at = at or {}
    starts = {m.end(): key for key in at for m in re.finditer(rf'"{re.escape(key)}"\s*:\s*"', text)}
    content, position = [], 0
    while position < len(text):
        key = starts.get(position)
        if key is not None:
            first = next(iter(at[key]))
            token = first if text.startswith(first, position) else text[position]
            top = [{"token": t, "logprob": math.log(p)} for t, p in at[key].items()]
        else:
            match = re.compile(r"\w+|\s+|[^\w\s]").match(text, position)
            assert match is not None
            token = match.group()
            top = [{"token": token, "logprob": 0.0}]
        content.append({"token": token, "logprob": top[0]["logprob"], "top_logprobs": top})
        position += len(token)
    return {"content": content}


def with_logprobs(reply: Reply, at: dict[str, dict[str, float]] | None = None) -> Reply:
    """A scripted reply with token logprobs added to its content (see `tokenised`)."""
    body = dict(reply.body)
    choice = dict(body["choices"][0])
    choice["logprobs"] = tokenised(choice["message"]["content"] or "", at)
    body["choices"] = [choice]
    return Reply(reply.status, body, reply.headers, reply.delay)


def one_token(p_yes: float, *, cached: int | None = None) -> Reply:
    """A one-token reply, `yes` or `no`, with both words' logprobs (and llama.cpp's
    `timings.cache_n` when `cached` is given)."""
    import math

    top = [
        {"token": "yes", "logprob": math.log(max(p_yes, 1e-9))},
        {"token": "no", "logprob": math.log(max(1 - p_yes, 1e-9))},
    ]
    top.sort(key=lambda t: -float(str(t["logprob"])))
    body = completion(str(top[0]["token"]), finish_reason="length", completion_tokens=1)
    body["choices"][0]["logprobs"] = {
        "content": [{"token": top[0]["token"], "logprob": top[0]["logprob"], "top_logprobs": top}]
    }
    if cached is not None:
        body["timings"] = {"cache_n": cached, "prompt_n": 10}
    return Reply(body=body)
