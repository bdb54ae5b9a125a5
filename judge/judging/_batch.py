"""Judging at batch prices: the requests grading would send go through the OpenAI Batch API
(which OpenAI serves, and vLLM and other OpenAI-compatible servers implement), their replies
are validated exactly as online ones and kept in the verdict cache, and grading then runs as
usual, answered from the cache.

A small state file (beside the results) holds the batches submitted, their status and the
request keys in each, so a killed process polls the same batches again instead of paying
twice. A line the batch could not answer usably is asked again online (`retry="online"`) or
in one follow-up batch (`retry="batch"`); the requests of an expired or cancelled batch are
submitted once more; what still has no reply is that case's `judge_error`, with the reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, Field, ValidationError

from judge._errors import InputError
from judge.cases._case import Case
from judge.cases._files import write_atomically
from judge.cases._json import dumps, loads
from judge.checks._result import CaseResult
from judge.endpoints._client import JudgeEndpointError, reply_of, sdk_client
from judge.judging._grade import Asked, Judge

BATCH_URL: Literal["/v1/chat/completions"] = "/v1/chat/completions"
MAX_REQUESTS = 50_000
"""Requests per batch (OpenAI's limit)."""
MAX_BYTES = 200 * 1024 * 1024
"""Bytes per batch input file (OpenAI's limit)."""
TERMINAL = frozenset(("completed", "failed", "expired", "cancelled"))
TRIES = 2
"""Batch submissions of one request at most: the first, and one more after an expired,
cancelled or failed batch (or, with `retry="batch"`, after an unusable reply)."""
Retry = Literal["online", "batch"]


class Submitted(BaseModel):
    """One batch this tool created."""

    id: str
    input_file_id: str
    chunk: str
    """A digest of its request keys (also in the batch's metadata, to adopt it on resume)."""
    keys: list[str]
    status: str = "validating"
    ingested: bool = False
    completed: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class BatchState(BaseModel):
    """What `<output>.batch.json` holds."""

    version: int = 1
    batches: list[Submitted] = Field(default_factory=list)
    answered: dict[str, str] = Field(default_factory=dict)
    """Request key -> the batch whose reply was kept."""
    failed: dict[str, str] = Field(default_factory=dict)
    """Request key -> why its last batch gave no usable reply."""
    unfinished: list[str] = Field(default_factory=list)
    """Failed keys whose batch ended (expired, cancelled, failed) before answering them."""
    tries: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> BatchState:
        if not path.exists():
            return cls()
        try:
            return cls.model_validate_json(path.read_bytes())
        except ValidationError as exc:
            raise InputError(f"{path}: not a batch state file: {exc}") from None

    def save(self, path: Path) -> None:
        write_atomically(path, self.model_dump_json(indent=1).encode(), durable=True)

    def pending(self) -> set[str]:
        return {k for b in self.batches if not b.ingested for k in b.keys}


@dataclass
class BatchOptions:
    poll: float = 60.0
    """The longest wait between two status checks (they start at a second and double)."""
    retry: Retry = "online"
    max_requests: int = MAX_REQUESTS
    max_bytes: int = MAX_BYTES
    window: str = "24h"


@dataclass
class Progress:
    """What the batches have done so far, for a progress bar."""

    total: int = 0
    done: int = 0
    batches: dict[str, str] = field(default_factory=dict)
    """Batch id -> status."""


@dataclass
class Prepared:
    """The batches' replies are in the cache: what grading needs to know about them."""

    asked: dict[str, Asked]
    by_case: dict[str, list[str]]
    state: BatchState
    refusals: dict[str, str]
    """Request body digest -> why grading must not ask it online (it gets `judge_error`)."""
    submitted: int = 0
    """Batches created by this call (0 when a resumed run found its batches)."""

    def gate(self, retry: Retry) -> Callable[[dict[str, Any]], str | None]:
        """What grading may still ask online: with `retry="online"` all but the requests
        given up; with `"batch"` nothing (a request the batches did not answer is refused)."""

        def refused(body: dict[str, Any]) -> str | None:
            why = self.refusals.get(body_digest(body))
            if why is None and retry == "batch":
                return (
                    "no usable reply from the batches, and --batch-retry batch asks nothing online"
                )
            return why

        return refused

    def annotate(self, result: CaseResult) -> CaseResult:
        """The result with the batches that answered its requests in its provenance."""
        judged = result.judge
        ids = sorted(
            {
                self.state.answered[k]
                for k in self.by_case.get(result.id, ())
                if k in self.state.answered
            }
        )
        if judged is None or judged.provenance is None or not ids:
            return result
        provenance = judged.provenance.model_copy(update={"batch": ",".join(ids)})
        return result.model_copy(
            update={"judge": judged.model_copy(update={"provenance": provenance})}
        )

    @property
    def usage(self) -> tuple[int, int, int]:
        """(requests answered, prompt tokens, completion tokens) over every batch."""
        batches = self.state.batches
        return (
            sum(b.completed for b in batches),
            sum(b.prompt_tokens for b in batches),
            sum(b.completion_tokens for b in batches),
        )


def body_digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(dumps(body, sort_keys=True)).hexdigest()


def batch_line(asked: Asked) -> bytes:
    """One line of a batch input file; `custom_id` is the request's cache key."""
    return dumps({"custom_id": asked.key, "method": "POST", "url": BATCH_URL, "body": asked.body})


async def requests_of(
    judge: Judge, cases: Iterable[Case]
) -> tuple[dict[str, Asked], dict[str, list[str]]]:
    """Every request grading `cases` would send (one per key: identical questions are asked
    once), and each case's keys."""
    asked: dict[str, Asked] = {}
    by_case: dict[str, list[str]] = {}
    for case in cases:
        found = await judge.requests(case)
        by_case[case.id] = [a.key for a in found]
        for item in found:
            asked.setdefault(item.key, item)
    return asked, by_case


def write_batch_file(path: str | Path, asked: Sequence[Asked]) -> int:
    """Write a batch input file of these requests (for a runner outside this tool)."""
    write_atomically(path, b"".join(batch_line(a) + b"\n" for a in asked))
    return len(asked)


async def read_batch_output(
    judge: Judge, data: bytes, asked: dict[str, Asked], source: str
) -> tuple[dict[str, str], dict[str, str], tuple[int, int]]:
    """Take every usable reply of a batch output (or error) file: (kept key -> source, failed
    key -> why, (prompt, completion) tokens). Lines of other requests are ignored."""
    kept: dict[str, str] = {}
    failed: dict[str, str] = {}
    prompt = completion = 0
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = loads(line)
            key = str(row["custom_id"])
        except (ValueError, KeyError, TypeError):
            continue  # an unreadable line: its request counts as not answered
        item = asked.get(key)
        if item is None:
            continue
        response = row.get("response") or {}
        status = response.get("status_code")
        if row.get("error") or status != 200:
            error = row.get("error") or (response.get("body") or {}).get("error") or {}
            message = error.get("message") if isinstance(error, dict) else str(error)
            failed[key] = f"{source} line {number}: {message or f'status {status}'}"
            continue
        try:
            completion_body = ChatCompletion.model_validate(response.get("body"))
        except ValidationError as exc:
            failed[key] = (
                f"{source} line {number}: not a chat completion: {str(exc).splitlines()[0]}"
            )
            continue
        reply = reply_of(completion_body, item.mode)
        prompt += reply.prompt_tokens
        completion += reply.completion_tokens
        why = await judge.accept(item, reply)
        if why is None:
            kept[key] = source
        else:
            failed[key] = f"{source} line {number}: {why}"
    return kept, failed, (prompt, completion)


class BatchRun:
    """Batches for one output file: submit, poll, take the replies, resubmit what needs it."""

    def __init__(
        self,
        judge: Judge,
        state_path: str | Path,
        options: BatchOptions | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        endpoint = judge.endpoint
        if endpoint is None:
            raise InputError("batch judging needs an endpoint with a Batch API (--base-url)")
        self.judge = judge
        self.path = Path(state_path)
        self.options = options or BatchOptions()
        self.on_progress = on_progress
        self.sleep = sleep
        self.state = BatchState.load(self.path)
        self.client = sdk_client(endpoint, timeout=120.0)
        self.progress = Progress()

    async def prepare(self, cases: Iterable[Case]) -> Prepared:
        """Submit what the cache cannot answer, wait for every batch, keep the replies."""
        asked, by_case = await requests_of(self.judge, cases)
        submitted = 0
        try:
            while True:
                await self._settle(asked)
                todo = self._todo(asked)
                if not todo:
                    break
                submitted += await self._submit(todo)
        finally:
            await self.client.close()
        return Prepared(asked, by_case, self.state, self._refusals(asked), submitted)

    def _todo(self, asked: dict[str, Asked]) -> list[Asked]:
        state, pending = self.state, self.state.pending()
        todo = []
        for key, item in asked.items():
            if item.cached or key in state.answered or key in pending:
                continue
            tries = state.tries.get(key, 0)
            again = key in state.unfinished or self.options.retry == "batch"
            if tries == 0 or (tries < TRIES and again):
                todo.append(item)
        return todo

    def _refusals(self, asked: dict[str, Asked]) -> dict[str, str]:
        """The requests given up: their batch tries are spent, or (online retry) their batch
        ended before answering them twice."""
        found = {}
        for key, why in self.state.failed.items():
            if key not in asked or key in self.state.answered:
                continue
            spent = self.state.tries.get(key, 0) >= TRIES
            if key in self.state.unfinished and spent or self.options.retry == "batch" and spent:
                found[body_digest(asked[key].body)] = why
        return found

    async def _submit(self, todo: list[Asked]) -> int:
        made = 0
        for chunk in _chunks(todo, self.options.max_requests, self.options.max_bytes):
            keys = [a.key for a in chunk]
            digest = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:32]
            adopted = await self._adopt(digest, keys)
            if adopted is None:
                data = b"".join(batch_line(a) + b"\n" for a in chunk)
                upload = await self._call(
                    self.client.files.create(
                        file=("judge-batch.jsonl", io.BytesIO(data)), purpose="batch"
                    )
                )
                batch = await self._call(
                    self.client.batches.create(
                        input_file_id=upload.id,
                        endpoint=BATCH_URL,
                        completion_window=self.options.window,  # type: ignore[arg-type]
                        metadata={"judge_chunk": digest},
                    )
                )
                adopted = Submitted(
                    id=batch.id,
                    input_file_id=upload.id,
                    chunk=digest,
                    keys=keys,
                    status=batch.status,
                )
                made += 1
            for key in keys:
                self.state.tries[key] = self.state.tries.get(key, 0) + 1
            self.state.batches.append(adopted)
            self.state.save(self.path)
        return made

    async def _adopt(self, digest: str, keys: list[str]) -> Submitted | None:
        """A batch of exactly these requests that this tool created but did not record (it
        was stopped in between): found by its metadata, so it is not paid for twice."""
        known = {b.id for b in self.state.batches}
        try:
            listed = await self.client.batches.list(limit=100)
        except openai.APIError:
            return None
        for batch in listed.data:
            if batch.id in known or (batch.metadata or {}).get("judge_chunk") != digest:
                continue
            if batch.status in ("failed", "expired", "cancelled"):
                continue
            return Submitted(
                id=batch.id,
                input_file_id=batch.input_file_id,
                chunk=digest,
                keys=keys,
                status=batch.status,
            )
        return None

    async def _settle(self, asked: dict[str, Asked]) -> None:
        """Poll every batch not yet taken in until it ends, then take its replies."""
        open_batches = [b for b in self.state.batches if not b.ingested]
        if not open_batches:
            return
        self.progress.total = sum(len(b.keys) for b in open_batches)
        delay = min(1.0, self.options.poll)
        while True:
            for submitted in open_batches:
                if submitted.ingested:
                    continue
                batch = await self._call(self.client.batches.retrieve(submitted.id))
                counts = batch.request_counts
                submitted.status = batch.status
                if counts is not None:
                    submitted.completed, submitted.failed = counts.completed, counts.failed
                self.progress.batches[submitted.id] = batch.status
                if batch.status in TERMINAL:
                    await self._take(submitted, batch, asked)
                self.state.save(self.path)
            self.progress.done = sum(
                len(b.keys) if b.ingested else b.completed + b.failed for b in open_batches
            )
            if self.on_progress is not None:
                self.on_progress(self.progress)
            if all(b.ingested for b in open_batches):
                return
            await self.sleep(delay)
            delay = min(delay * 2, self.options.poll)

    async def _take(self, submitted: Submitted, batch: Any, asked: dict[str, Asked]) -> None:
        kept: dict[str, str] = {}
        failed: dict[str, str] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await self._call(self.client.files.content(file_id))
            got, bad, (prompt, completion) = await read_batch_output(
                self.judge, content.content, asked, f"batch {submitted.id}"
            )
            kept.update({k: submitted.id for k in got})
            failed.update(bad)
            submitted.prompt_tokens += prompt
            submitted.completion_tokens += completion
        reason = _ended(batch)
        for key in submitted.keys:
            if key in kept:
                self.state.answered[key] = submitted.id
                self.state.failed.pop(key, None)
                if key in self.state.unfinished:
                    self.state.unfinished.remove(key)
            elif key in failed and reason is None:
                self.state.failed[key] = failed[key]
            else:  # the batch ended before answering it
                self.state.failed[key] = (
                    f"batch {submitted.id} {batch.status} before answering it"
                    + (f" ({failed[key]})" if key in failed else f": {reason}" if reason else "")
                )
                if key not in self.state.unfinished:
                    self.state.unfinished.append(key)
        submitted.ingested = True

    async def _call(self, request: Any) -> Any:
        try:
            return await request
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403, 404):
                raise JudgeEndpointError(
                    f"the batch endpoint {self.judge.endpoint_label} refused ({exc.status_code}): "
                    f"{exc.message}"
                ) from None
            raise
        except openai.APIConnectionError as exc:
            raise JudgeEndpointError(f"cannot reach {self.judge.endpoint_label}: {exc}") from None


def _ended(batch: Any) -> str | None:
    """Why a batch ended without answering everything (None: it completed)."""
    if batch.status == "completed":
        return None
    errors = getattr(getattr(batch, "errors", None), "data", None) or []
    messages = [getattr(e, "message", None) for e in errors]
    return "; ".join(m for m in messages if m) or batch.status


def _chunks(todo: list[Asked], max_requests: int, max_bytes: int) -> Iterable[list[Asked]]:
    chunk: list[Asked] = []
    size = 0
    for item in todo:
        length = len(batch_line(item)) + 1
        if chunk and (len(chunk) >= max_requests or size + length > max_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += length
    if chunk:
        yield chunk
