"""The Batch API's requests (upload a file, create a batch, poll it, read a file) through
`EndpointClient`'s one retry policy."""

from __future__ import annotations

import io
from functools import partial
from typing import Literal

import openai
from openai.types import Batch

from judge._errors import JudgeError
from judge.endpoints._client import EndpointClient, JudgeEndpointError

BATCH_URL: Literal["/v1/chat/completions"] = "/v1/chat/completions"


class BatchClient(EndpointClient):
    """The Batch API's requests (files, batches) through `EndpointClient`'s retry policy
    (429s, 5xx, timeouts, Retry-After; never an exhausted quota): a refusal for good, or no
    reply, stops the run (`JudgeEndpointError`)."""

    async def upload(self, data: bytes) -> str:
        """A batch input file of `data`: its id."""
        send = partial(
            self._client.files.create,
            file=("judge-batch.jsonl", io.BytesIO(data)),
            purpose="batch",
        )
        return (await self.request(send, "upload")).id

    async def create(self, input_file_id: str, chunk: str, window: str) -> Batch:
        """A batch of an uploaded input file, `chunk` in its metadata."""
        send = partial(
            self._client.batches.create,
            input_file_id=input_file_id,
            endpoint=BATCH_URL,
            completion_window=window,  # type: ignore[arg-type]
            metadata={"judge_chunk": chunk},
        )
        return await self.request(send, "create a batch")

    async def retrieve(self, batch_id: str) -> Batch | None:
        """A batch's status; None when the endpoint no longer knows it (404)."""

        async def send() -> Batch | None:
            try:
                return await self._client.batches.retrieve(batch_id)
            except openai.APIStatusError as exc:  # never retried: answered at once
                if exc.status_code == 404:
                    return None
                raise

        return await self.request(send, f"batch {batch_id}")

    async def content(self, file_id: str) -> bytes:
        """An output or error file's bytes."""
        return (await self.request(partial(self._client.files.content, file_id), "a file")).content

    async def recent(self) -> list[Batch]:
        """The endpoint's latest batches, asked once; none when it cannot say."""
        try:
            return (await self._client.batches.list(limit=100)).data
        except openai.APIError:
            return []

    def refused(self, exc: openai.APIStatusError, what: str) -> JudgeError:
        where = self.endpoint.base_url
        return JudgeEndpointError(
            f"the batch endpoint {where} refused ({exc.status_code}): {exc.message}"
        )

    def unreachable(self, exc: openai.APIConnectionError, what: str) -> JudgeError:
        return JudgeEndpointError(f"cannot reach {self.endpoint.base_url}: {exc}")

    def unreadable(self, exc: Exception, what: str) -> JudgeError | None:
        return None  # raised as it is
