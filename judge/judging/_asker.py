"""Asking the judge model: the chat client, the verdict cache, samples, logprobs and the
structured-output format it learns the endpoint refuses, re-asking an unusable reply, and
replies obtained elsewhere (a batch's) accepted through the same reader."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from judge.endpoints._client import (
    ChatClient,
    JudgeRequestError,
    Reply,
    ResponseFormat,
    rejects_logprobs,
    rejects_structured_output,
    serving,
)
from judge.endpoints._retry import RetryPolicy
from judge.judging._cache import VerdictCache
from judge.judging._identity import Identity
from judge.judging._questions import Question, parser
from judge.judging._reading import (
    ReplyError,
    Unusable,
    answer_share,
    kept,
    read_cached,
    read_verdict,
    with_confidences,
)
from judge.judging._rubric import Rubric
from judge.judging._scored import Ask, asks

MAX_REASKS = 2
TOP_LOGPROBS = 5
"""Alternatives asked for each token of a JSON verdict (the label's share is read from them)."""
FormatChoice = Literal["auto", "json_schema", "json_object", "tool"]
_FALLBACK: dict[str, ResponseFormat] = {"json_schema": "json_object", "json_object": "tool"}
_NEEDS_LOGPROBS = "a scored rubric needs an endpoint that returns token logprobs"


@dataclass(frozen=True)
class Asked:
    """One request grading would send: its cache key (a stable id), its body, and what it
    asks (a scored rubric's one-token question `ask`, or a verdict of `mode`)."""

    key: str
    body: dict[str, Any]
    mode: ResponseFormat | None
    question: Question
    rubric: Rubric
    cached: bool
    ask: Ask | None = None
    logprobs: int | None = None


class Asker:
    """Asks one judge's questions: from the cache when it answers, else of the endpoint."""

    def __init__(
        self,
        identity: Identity,
        cache: VerdictCache | None,
        *,
        response_format: FormatChoice,
        logprobs: bool,
        concurrency: int,
        timeout: float,
        retry: RetryPolicy | None,
    ) -> None:
        self.identity = identity
        self.cache = cache
        self.format_choice = response_format
        self.logprobs_asked: int | None = TOP_LOGPROBS if logprobs else None
        self.logprobs = self.logprobs_asked
        """Alternatives asked per token; None once the endpoint refuses them (learnt once)."""
        self.mode: ResponseFormat = "json_schema" if response_format == "auto" else response_format
        self._serving = (concurrency, timeout, retry)
        self._client: ChatClient | None = None
        self._client_lock = asyncio.Lock()
        self._refused: dict[str, str] = {}
        self._offline: str | None = None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _chat(self) -> ChatClient:
        async with self._client_lock:
            if self._client is None:
                concurrency, timeout, retry = self._serving
                endpoint, concurrency, timeout = await serving(
                    self.identity.endpoint, concurrency, timeout
                )
                self._client = ChatClient(
                    endpoint, concurrency=concurrency, timeout=timeout, policy=retry
                )
            return self._client

    def refuse(self, refused: dict[str, str], *, offline: str | None = None) -> None:
        """Never ask the requests of these cache keys (that case gets `judge_error` with the
        reason), nor, with `offline`, any request the cache does not answer."""
        self._refused, self._offline = dict(refused), offline

    def _refusal(self, key: str) -> None:
        why = self._refused.get(key) or self._offline
        if why is not None:
            raise ReplyError(why, None)

    def key(self, question: Question, sample: int) -> str:
        """The key of this sample of the question, as it would be asked now."""
        return self.identity.verdict_key(question, sample, self.mode, self.logprobs)

    async def is_cached(self, question: Question, sample: int) -> bool:
        """Whether this sample of the question would be answered from the cache."""
        return await self._has(self.key(question, sample))

    async def is_answered(self, rubric: Rubric, ask: Ask) -> bool:
        """Whether a scored rubric's question would be answered from the cache."""
        return await self._has(self.identity.answer_key(rubric, ask))

    async def _has(self, key: str) -> bool:
        return self.cache is not None and await self.cache.get(key) is not None

    async def answer(self, rubric: Rubric, ask: Ask, tally: Counter[str]) -> float:
        """The probability of the rubric's first answer word, from the cache or asked."""
        key = self.identity.answer_key(rubric, ask)
        if self.cache is not None:
            hit = await self.cache.get(key)
            if isinstance(hit, dict) and isinstance(hit.get("p"), float):
                tally["cached"] += 1
                return float(hit["p"])
        self._refusal(key)
        chat = await self._chat()
        try:
            reply = await chat.send(self.identity.answer_body(chat.endpoint.model, ask), None)
        except JudgeRequestError as exc:
            message = f"{exc} ({_NEEDS_LOGPROBS})" if rejects_logprobs(exc) else str(exc)
            raise ReplyError(message, None) from None
        _spent(tally, reply)
        p = answer_share(rubric, ask, reply)
        if self.cache is not None:
            await self.cache.put(key, {"p": p})
        return p

    async def ask(self, question: Question, sample: int, tally: Counter[str]) -> Any:
        """A validated answer to one question: from the cache, or asked (re-asked when the
        reply cannot be used, at most MAX_REASKS times)."""
        parse = parser(question)
        mode, asked = self.mode, self.logprobs  # as this request asks, whatever others learn
        key = self.identity.verdict_key(question, sample, mode, asked)
        if self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None:
                tally["cached"] += 1
                return read_cached(hit, parse)
        self._refusal(key)
        chat = await self._chat()
        conversation = list(question.messages)
        problem, raw = "no reply", None
        for _ in range(1 + MAX_REASKS):
            body = self.identity.verdict_body(
                chat.endpoint.model, conversation, question, sample, mode, asked
            )
            try:
                reply = await chat.send(body, mode)
            except JudgeRequestError as exc:
                if self._learns(exc, mode, asked):
                    return await self.ask(question, sample, tally)
                raise ReplyError(str(exc), raw) from None
            _spent(tally, reply)
            raw = reply.text or reply.refusal
            try:
                answer, data, confidences = read_verdict(question, reply, parse)
            except Unusable as exc:
                problem = str(exc)
            else:
                await self._keep(key, data, confidences, asked)
                return with_confidences(answer, confidences)
            conversation += [
                {"role": "assistant", "content": reply.text},
                {
                    "role": "user",
                    "content": f"That reply cannot be used: {problem}. Reply "
                    "again with only the JSON object asked for.",
                },
            ]
        raise ReplyError(f"no usable verdict after {1 + MAX_REASKS} tries: {problem}", raw)

    def _learns(self, exc: JudgeRequestError, mode: ResponseFormat, asked: int | None) -> bool:
        """Whether a rejection teaches what the endpoint cannot do (logprobs, or this format
        under `auto`), so that the question is asked again without it."""
        if asked is not None and rejects_logprobs(exc):
            self.logprobs = None  # the endpoint gives none: ask without, once per run
            return True
        if self.format_choice == "auto" and rejects_structured_output(exc):
            if mode in _FALLBACK and self.mode == mode:
                self.mode = _FALLBACK[mode]  # the endpoint cannot do it: step down once
            return self.mode != mode
        return False

    async def _keep(
        self, key: str, data: Any, confidences: list[float | None], logprobs: int | None
    ) -> None:
        if self.cache is not None:
            await self.cache.put(key, kept(data, confidences, logprobs))

    async def accept(self, asked: Asked, reply: Reply) -> str | None:
        """Take a reply obtained elsewhere (a batch's output) for a request `requests` listed,
        as if it had been asked here: validated exactly as online and, when usable, cached
        under the request's key. Returns why it cannot be used (None: kept)."""
        if self.cache is None:
            return "no verdict cache to keep the reply in"
        try:
            if asked.ask is not None:
                await self.cache.put(asked.key, {"p": answer_share(asked.rubric, asked.ask, reply)})
                return None
            _, data, confidences = read_verdict(asked.question, reply, parser(asked.question))
        except (Unusable, ReplyError) as exc:
            return str(exc)
        await self._keep(asked.key, data, confidences, asked.logprobs)
        return None

    async def requests(self, questions: list[Question], samples: int) -> list[Asked]:
        """The requests these questions would send now, each with its cache key and whether
        the cache answers it already: what a batch submits (the uncached ones)."""
        endpoint = self.identity.endpoint
        assert endpoint is not None  # the embedded model is never batched
        model, found = endpoint.model, []
        for question in questions:
            rubric = question.rubric
            if rubric.scored:
                for ask in asks(rubric, question.messages, question.calls):
                    key = self.identity.answer_key(rubric, ask)
                    body = self.identity.answer_body(model, ask)
                    cached = await self._has(key)
                    found.append(Asked(key, body, None, question, rubric, cached, ask))
                continue
            mode, logprobs = self.mode, self.logprobs
            for sample in range(samples):
                key = self.identity.verdict_key(question, sample, mode, logprobs)
                messages = list(question.messages)
                body = self.identity.verdict_body(model, messages, question, sample, mode, logprobs)
                cached = await self._has(key)
                found.append(Asked(key, body, mode, question, rubric, cached, logprobs=logprobs))
        return found


def _spent(tally: Counter[str], reply: Reply) -> None:
    tally.update(
        requests=1,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        cached_prompt_tokens=reply.cached_tokens or 0,
    )
