"""The simulated user of a multi-turn agent run (`judge run --user-model`): after each agent
reply in text, a model plays the user from the case's scenario (what they want, what they
know, how they speak), until it writes `STOP`, the scenario's `max_turns` or `--max-steps`.

The user model is told the conversation from the user's side, a line per turn (its own
turns, the case's opening included, and the agent's replies in text), and asked for its next
message; the agent's tool calls and their results stay hidden, as a customer never sees
them. Each turn is cached by the scenario, the conversation so far and the user model's
settings, so a re-run or a resumed run with the same agent replies asks the user model
nothing twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from judge.cases._calls import ShapeError, first_choice, normalise_response
from judge.cases._case import UserScenario
from judge.cases._json import dumps
from judge.endpoints._candidates import CandidateClient
from judge.endpoints._endpoint import Endpoint
from judge.judging._cache import VerdictCache, cache_key
from judge.runs._replies import reply_error

STOP = "###STOP###"
"""What the user model writes when the conversation is over for it."""
_PROMPT_VERSION = "3"


class UserModelError(Exception):
    """The user model's reply could not be read, or its endpoint failed for good."""


@dataclass(frozen=True)
class UserModel:
    """Who plays the user: the model, its endpoint (None: the embedded model), and the
    settings every user turn is asked with."""

    model: str
    base_url: str | None
    temperature: float
    seed: int | None
    weights: str | None = None
    """The embedded model's file, when it plays the user (`local` names no version)."""

    def described(self) -> dict[str, Any]:
        """The settings a run's records carry (a resume with others is refused), and what
        keys its cached turns."""
        found = {
            "model": self.model,
            "base_url": self.base_url,
            "temperature": self.temperature,
            "seed": self.seed,
            "prompt": _PROMPT_VERSION,
        }
        return found if self.weights is None else {**found, "weights": self.weights}


@dataclass(frozen=True)
class UserTurn:
    """One turn of the simulated user."""

    text: str
    """What the user says (the stop token taken out)."""
    done: bool
    """The user wrote the stop token: the conversation is over."""
    called_tool: bool
    """The user model's reply held tool calls (a simulator's mistake: users call nothing)."""
    cached: bool
    usage: dict[str, Any] | None
    latency_s: float


def system_prompt(scenario: UserScenario) -> str:
    """The brief the user model plays from."""
    lines = [
        "You play a CUSTOMER writing to a shop's SUPPORT agent. You are the customer, never "
        "the support agent: you cannot look anything up, call tools or act on the shop's "
        "systems, and you never explain what support should do.",
        f"Your goal: {scenario.instructions.strip()}",
    ]
    if scenario.facts:
        lines.append(
            "What you know (give each fact only when the assistant asks for it or needs it; "
            "never make up any other detail, and if asked something not listed, say you do "
            "not know):"
        )
        lines.extend(f"- {key}: {fact_text(value)}" for key, value in scenario.facts.items())
    else:
        lines.append("You know nothing beyond your goal: never make up a detail.")
    if scenario.persona:
        lines.append(f"How you write: {scenario.persona.strip()}")
    lines.append(
        "Write only your next message, short, in the customer's words. Support does the "
        "work: never tell it which function or tool to use. When support has done what you "
        f"want, or said it cannot, write a brief closing line ending with {STOP}"
    )
    return "\n".join(lines)


def conversation_lines(conversation: Sequence[dict[str, Any]]) -> list[str]:
    """The conversation as the customer saw it, a line per turn: their own turns (the case's
    opening included) as `CUSTOMER:`, the agent's replies in text as `SUPPORT:`; system
    prompts, tool calls and tool results left out."""
    lines = []
    for message in conversation:
        role, content = message.get("role"), message.get("content")
        if role in ("user", "assistant") and isinstance(content, str) and content.strip():
            lines.append(f"{'CUSTOMER' if role == 'user' else 'SUPPORT'}: {content.strip()}")
    return lines


def user_request(conversation: Sequence[dict[str, Any]]) -> str:
    """What the user model is asked: the conversation so far, told, and its next message.
    (Told rather than role-played turn by turn: a small model given the agent's words as the
    user's answers them as the agent would.)"""
    return (
        "The conversation so far:\n"
        + "\n".join(conversation_lines(conversation))
        + "\n\nWrite the CUSTOMER's next message to SUPPORT: only the message, one or two "
        "short sentences, in your own words. Only once SUPPORT has done what you want, or "
        f"has said it cannot be done, end your message with {STOP}"
    )


class UserSimulator:
    """Asks the user model for the user's next turn, through the cache. Its client is made
    on first use, in the run's event loop; `aclose` when the run is over."""

    def __init__(
        self, user: UserModel, endpoint: Endpoint, cache: VerdictCache | None, *,
        concurrency: int = 4, timeout: float = 120.0,
    ) -> None:  # fmt: skip
        self.user, self.endpoint, self.cache = user, endpoint, cache
        self._concurrency, self._timeout = concurrency, timeout
        self._client: CandidateClient | None = None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    def body(self, scenario: UserScenario, conversation: Sequence[dict[str, Any]], run: int
             ) -> dict[str, Any]:  # fmt: skip
        """The request for the user's next turn (run r is sent `seed + r - 1`)."""
        body: dict[str, Any] = {
            "model": self.user.model,
            "messages": [
                {"role": "system", "content": system_prompt(scenario)},
                {"role": "user", "content": user_request(conversation)},
            ],
            "temperature": self.user.temperature,
            "max_tokens": 200,
        }
        if self.user.seed is not None:
            body["seed"] = self.user.seed + run - 1
        return body

    async def reply(
        self, scenario: UserScenario, conversation: Sequence[dict[str, Any]], run: int
    ) -> UserTurn:
        """The user's next turn (`UserModelError` when its reply cannot be read)."""
        body = self.body(scenario, conversation, run)
        key = cache_key({"user": self.user.described(), "body": body})
        stored = await self.cache.get(key) if self.cache is not None else None
        if stored is not None:
            return _turn(stored, cached=True, usage=None, latency_s=0.0)
        if self._client is None:
            self._client = CandidateClient(
                self.endpoint, concurrency=self._concurrency, timeout=self._timeout,
                key_hint="JUDGE_USER_API_KEY",
            )  # fmt: skip
        answer = await self._client.chat(body)
        failed = reply_error(answer.body)
        if failed is not None:
            raise UserModelError(f"the user model failed: {failed}")
        try:
            response = normalise_response(answer.body)
        except ShapeError as exc:
            raise UserModelError(
                f"the user model's reply is not a chat completion ({exc})"
            ) from None
        content = (response.content if response is not None else None) or ""
        said = {
            "content": content,
            "tool_calls": bool(response is not None and response.tool_calls),
        }
        cut = first_choice(answer.body).get("finish_reason") == "length"
        if self.cache is not None and content.strip() and not cut:  # a hiccup: not kept
            await self.cache.put(key, said)
        usage = answer.body.get("usage") if isinstance(answer.body, dict) else None
        return _turn(said, cached=False, usage=usage, latency_s=answer.latency_s)


def _turn(said: dict[str, Any], *, cached: bool, usage: Any, latency_s: float) -> UserTurn:
    text = str(said.get("content") or "")
    done = STOP in text
    return UserTurn(
        text=text.replace(STOP, "").strip(),
        done=done,
        called_tool=bool(said.get("tool_calls")),
        cached=cached,
        usage=usage if isinstance(usage, dict) else None,
        latency_s=round(latency_s, 4),
    )


def fact_text(value: Any) -> str:
    """A scenario fact as the prompts show it."""
    return value if isinstance(value, str) else dumps(value).decode()
