"""The embedded judge's hidden state where it answers: the final-layer vector, after the last
norm, at the position from which it would say yes or no (the vector its LM head reads). A probe
trained on it decides what the answer token alone cannot.

llama.cpp serves it as an embedding (`--pooling last`, the native `/embedding` endpoint with
`embd_normalize: -1` for the raw vector). The chat template is applied by the server itself
(`/apply-template`), so the vector is taken exactly where a chat completion would answer."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np

from judge._errors import JudgeError
from judge.judging._cache import VerdictCache, cache_key

HIDDEN_SIZE = 1536
"""Qwen2.5-1.5B's hidden size: the length of every vector the embedded judge gives."""


class HiddenStateError(JudgeError):
    """The server gave no usable hidden state for a prompt."""


def hidden_key(model_sha256: str, messages: list[dict[str, str]]) -> str:
    """A hidden state's cache key: the model file's hash and exactly the messages sent."""
    return cache_key({"hidden_state": model_sha256, "pooling": "last", "messages": messages})


def encode(vector: np.ndarray) -> str:
    return base64.b64encode(vector.astype("<f4").tobytes()).decode()


def decode(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4").copy()


def read_embedding(data: Any) -> np.ndarray:
    """The one vector of a native `/embedding` reply (`[{"index": 0, "embedding": [[...]]}]`),
    checked: HIDDEN_SIZE finite numbers."""
    try:
        found = data[0]["embedding"]
        if found and isinstance(found[0], list):
            found = found[-1]
        vector = np.asarray(found, dtype=np.float64)
    except (KeyError, IndexError, TypeError, ValueError):
        raise HiddenStateError(
            f"the server's embedding reply is not a vector: {str(data)[:200]}"
        ) from None
    if vector.shape != (HIDDEN_SIZE,) or not np.all(np.isfinite(vector)):
        raise HiddenStateError(
            f"expected {HIDDEN_SIZE} finite values from the embedding endpoint, got shape "
            f"{vector.shape}"
        )
    return vector.astype(np.float32)


class HiddenStates:
    """Hidden states from a llama.cpp server started with embeddings and last-token pooling
    (the embedded judge's), cached by prompt and model file hash like verdicts."""

    def __init__(
        self,
        root: str | Callable[[], str],
        model_sha256: str,
        cache: VerdictCache | None,
        timeout: float = 900.0,
    ) -> None:
        self._root = root
        """The server's root URL, or what starts the server and gives it (called in a thread
        on the first vector the cache does not hold)."""
        self.model_sha256 = model_sha256
        self._cache = cache
        self._http = httpx.AsyncClient(timeout=timeout)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def cached(self, messages: list[dict[str, str]]) -> np.ndarray | None:
        if self._cache is None:
            return None
        hit = await self._cache.get(hidden_key(self.model_sha256, messages))
        if isinstance(hit, dict) and isinstance(hit.get("h"), str):
            try:
                vector = decode(hit["h"])
            except ValueError:  # a damaged entry is asked again
                return None
            if vector.shape == (HIDDEN_SIZE,) and np.all(np.isfinite(vector)):
                return vector
        return None

    async def of(self, messages: list[dict[str, str]]) -> np.ndarray:
        """The hidden state at the answer position of these chat messages."""
        return (await self.fetch(messages))[0]

    async def fetch(self, messages: list[dict[str, str]]) -> tuple[np.ndarray, bool]:
        """The hidden state, and whether the server was asked for it (not the cache)."""
        found = await self.cached(messages)
        if found is not None:
            return found, False
        prompt = await self._post("/apply-template", {"messages": messages})
        if not isinstance(prompt, dict) or not isinstance(prompt.get("prompt"), str):
            raise HiddenStateError(f"the server's /apply-template reply has no prompt: {prompt}")
        reply = await self._post("/embedding", {"content": prompt["prompt"], "embd_normalize": -1})
        vector = read_embedding(reply)
        if self._cache is not None:
            await self._cache.put(hidden_key(self.model_sha256, messages), {"h": encode(vector)})
        return vector, True

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        if callable(self._root):
            self._root = await asyncio.to_thread(self._root)
        try:
            response = await self._http.post(self._root.rstrip("/") + path, json=body)
        except httpx.HTTPError as exc:
            raise HiddenStateError(f"{path}: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise HiddenStateError(
                f"{path} answered {response.status_code}: {response.text[:300]} (the probe "
                "needs a llama.cpp server started with embeddings and last-token pooling)"
            )
        try:
            return response.json()
        except ValueError:
            raise HiddenStateError(f"{path} answered with no JSON: {response.text[:200]}") from None
