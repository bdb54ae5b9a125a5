"""Provider batches: requests sent through the OpenAI Batch API (which OpenAI serves, and vLLM
and other OpenAI-compatible servers implement) as input files, polled until they end, their
replies read back line by line.

A small state file holds the batches submitted, their status and the request keys in each,
so a killed process polls the same batches again instead of paying twice; a batch created but
not yet recorded is found again by its metadata. A request whose batch ended (expired,
cancelled, failed) before answering it is submitted once more; one whose reply was unusable
once more too when `retry="batch"`; after that it is given up, with the reason. One whose
reply line cannot be read is given up at once (`judge.endpoints._batch_output`).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from judge._errors import InputError
from judge.cases._files import write_atomically
from judge.cases._json import dumps
from judge.endpoints._batch_client import BATCH_URL, BatchClient
from judge.endpoints._batch_output import Accept, Output, read_output
from judge.endpoints._endpoint import Endpoint

MAX_REQUESTS = 50_000
"""Requests per batch (OpenAI's limit)."""
MAX_BYTES = 200 * 1024 * 1024
"""Bytes per batch input file (OpenAI's limit)."""
TERMINAL = frozenset(("completed", "failed", "expired", "cancelled"))
_GONE = frozenset(("failed", "expired", "cancelled"))  # a batch not worth adopting
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
    """What the state file holds."""

    version: int = 1
    endpoint: str | None = None
    """The endpoint the batches were submitted to."""
    batches: list[Submitted] = Field(default_factory=list)
    answered: dict[str, str] = Field(default_factory=dict)
    """Request key -> the batch (or file) whose reply was kept."""
    failed: dict[str, str] = Field(default_factory=dict)
    """Request key -> why its last batch gave no usable reply."""
    unfinished: set[str] = Field(default_factory=set)
    """Failed keys whose batch ended (expired, cancelled, failed) before answering them."""
    unreadable: set[str] = Field(default_factory=set)
    """Failed keys whose reply line could not be read: given up at once (that reply was
    paid for), never asked again."""
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

    def given_up(self, retry: Retry) -> dict[str, str]:
        """Request key -> why: the requests whose batch tries are spent (an ended batch's,
        twice; with `retry="batch"`, any twice), and those whose reply could not be read."""
        return {
            key: why
            for key, why in self.failed.items()
            if key in self.unreadable
            or (self.tries.get(key, 0) >= TRIES and (key in self.unfinished or retry == "batch"))
        }

    @property
    def usage(self) -> tuple[int, int, int]:
        """(requests answered, prompt tokens, completion tokens) over every batch."""
        return (
            sum(b.completed for b in self.batches),
            sum(b.prompt_tokens for b in self.batches),
            sum(b.completion_tokens for b in self.batches),
        )


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
    """What the batches have done so far, for a progress display."""

    total: int = 0
    done: int = 0
    batches: dict[str, str] = field(default_factory=dict)
    """Batch id -> status."""
    problems: list[str] = field(default_factory=list)
    """Every output line that could not be read so far (`batch ... file:line at ...: why`)."""


def batch_line(key: str, body: dict[str, Any]) -> bytes:
    """One line of a batch input file; `custom_id` is the request's stable key."""
    return dumps({"custom_id": key, "method": "POST", "url": BATCH_URL, "body": body})


def write_batch_file(path: str | Path, requests: Mapping[str, dict[str, Any]]) -> int:
    """A batch input file of these requests (key -> body), for a runner elsewhere."""
    write_atomically(path, b"".join(batch_line(k, b) + b"\n" for k, b in requests.items()))
    return len(requests)


class BatchRun:
    """The batches of one output file: submit, poll, read the replies, submit again what
    needs it."""

    def __init__(
        self,
        endpoint: Endpoint,
        state_path: str | Path,
        options: BatchOptions | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.endpoint = endpoint
        self.path = Path(state_path)
        self.options = options or BatchOptions()
        self.on_progress = on_progress
        self.sleep = sleep
        self.state = BatchState.load(self.path)
        if self.state.endpoint not in (None, endpoint.base_url):
            raise InputError(
                f"{self.path} holds batches of {self.state.endpoint}, not {endpoint.base_url}: "
                "write to another -o, or remove it to submit again"
            )
        self.state.endpoint = endpoint.base_url
        self.progress = Progress()
        self.submitted = 0
        """Batches created by this run (0: a resumed run found its batches)."""

    async def run(
        self, requests: Mapping[str, dict[str, Any]], accept: Accept, answered: Iterable[str]
    ) -> BatchState:
        """Until every request (key -> body) but those `answered` already has a reply or is
        given up: wait for the batches in the state file, then submit what is left."""
        skip = set(answered)
        client = BatchClient(self.endpoint, timeout=120.0)
        try:
            while True:
                await self._settle(client, requests, accept)
                todo = self._todo(requests, skip)
                if not todo:
                    return self.state
                await self._submit(client, todo, requests)
        finally:
            await client.aclose()

    def _todo(self, requests: Mapping[str, dict[str, Any]], skip: set[str]) -> list[str]:
        state, pending = self.state, self.state.pending()
        todo = []
        for key in requests:
            if key in skip or key in state.answered or key in pending or key in state.unreadable:
                continue
            tries = state.tries.get(key, 0)
            again = key in state.unfinished or self.options.retry == "batch"
            if tries == 0 or (tries < TRIES and again):
                todo.append(key)
        return todo

    async def _submit(
        self, client: BatchClient, todo: list[str], requests: Mapping[str, dict[str, Any]]
    ) -> None:
        lines = {key: batch_line(key, requests[key]) for key in todo}
        unrecorded = await self._unrecorded(client)
        for keys in _chunks(lines, self.options.max_requests, self.options.max_bytes):
            digest = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:32]
            found = unrecorded.get(digest)
            submitted = None if found is None else found.model_copy(update={"keys": keys})
            if submitted is None:
                upload = await client.upload(b"".join(lines[k] + b"\n" for k in keys))
                batch = await client.create(upload, digest, self.options.window)
                submitted = Submitted(
                    id=batch.id,
                    input_file_id=upload,
                    chunk=digest,
                    keys=keys,
                    status=batch.status,
                )
                self.submitted += 1
            for key in keys:
                self.state.tries[key] = self.state.tries.get(key, 0) + 1
            self.state.batches.append(submitted)
            self.state.save(self.path)

    async def _unrecorded(self, client: BatchClient) -> dict[str, Submitted]:
        """Batches this tool created but did not record (it was stopped in between), by the
        digest of their requests in their metadata: adopted, so none is paid for twice."""
        known = {b.id for b in self.state.batches}
        found = {}
        for batch in await client.recent():
            digest = (batch.metadata or {}).get("judge_chunk")
            if digest and batch.id not in known and batch.status not in _GONE:
                found[digest] = Submitted(
                    id=batch.id,
                    input_file_id=batch.input_file_id,
                    chunk=digest,
                    keys=[],
                    status=batch.status,
                )
        return found

    async def _settle(
        self, client: BatchClient, requests: Mapping[str, dict[str, Any]], accept: Accept
    ) -> None:
        """Poll every batch not yet read until it ends, then read its replies."""
        open_batches = [b for b in self.state.batches if not b.ingested]
        if not open_batches:
            return
        self.progress.total = sum(len(b.keys) for b in open_batches)
        delay = min(1.0, self.options.poll)
        while True:
            for submitted in open_batches:
                if submitted.ingested:
                    continue
                batch = await client.retrieve(submitted.id)
                if batch is None:
                    self._lost(submitted)
                    self.state.save(self.path)
                    continue
                counts = batch.request_counts
                seen = (submitted.status, submitted.completed, submitted.failed)
                submitted.status = batch.status
                if counts is not None:
                    submitted.completed, submitted.failed = counts.completed, counts.failed
                self.progress.batches[submitted.id] = batch.status
                if batch.status in TERMINAL:
                    await self._read(client, submitted, batch, requests, accept)
                if submitted.ingested or seen != (
                    submitted.status, submitted.completed, submitted.failed
                ):  # fmt: skip
                    self.state.save(self.path)  # only what changed: a poll writes nothing
            self.progress.done = sum(
                len(b.keys) if b.ingested else b.completed + b.failed for b in open_batches
            )
            if self.on_progress is not None:
                self.on_progress(self.progress)
            if all(b.ingested for b in open_batches):
                return
            await self.sleep(delay)
            delay = min(delay * 2, self.options.poll)

    def _lost(self, submitted: Submitted) -> None:
        """A recorded batch the endpoint no longer knows: its requests count as unfinished."""
        submitted.status, submitted.ingested = "lost", True
        self.progress.batches[submitted.id] = "lost"
        for key in submitted.keys:
            if key not in self.state.answered:
                self.state.failed[key] = f"batch {submitted.id} is gone at the endpoint (404)"
                self.state.unfinished.add(key)

    async def _read(
        self,
        client: BatchClient,
        submitted: Submitted,
        batch: Any,
        requests: Mapping[str, dict[str, Any]],
        accept: Accept,
    ) -> None:
        parts: list[tuple[str, Output]] = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                content = await client.content(file_id)
                source = f"batch {submitted.id} file {file_id}"
                parts.append((source, await read_output(content, requests, accept, source,
                                                        submitted.id)))  # fmt: skip
        if parts and submitted.keys and not any(p.answering for _, p in parts):
            raise InputError(_no_line(submitted, parts, self.path))  # read again on a rerun
        found = Output()
        for _, part in parts:
            found.kept |= part.kept
            found.failed.update(part.failed)
            found.unreadable.update(part.unreadable)
            self.progress.problems.extend(str(p) for p in part.problems)
            submitted.prompt_tokens += part.prompt_tokens
            submitted.completion_tokens += part.completion_tokens
        reason = _ended(batch)
        state = self.state
        for key in submitted.keys:
            if key in found.kept:
                state.answered[key] = submitted.id
                state.failed.pop(key, None)
                state.unfinished.discard(key)
            elif key in found.unreadable:  # a reply paid for, unreadable: not paid again
                state.failed[key] = found.unreadable[key]
                state.unreadable.add(key)
                state.unfinished.discard(key)
            elif key in found.failed and reason is None:  # answered, unusably: a try spent
                state.failed[key] = found.failed[key]
                state.unfinished.discard(key)
            else:  # the batch ended before answering it
                why = f"batch {submitted.id} {batch.status} before answering it"
                if key in found.failed:
                    why += f" ({found.failed[key]})"
                elif reason and reason != batch.status:
                    why += f": {reason}"
                state.failed[key] = why
                state.unfinished.add(key)
        submitted.ingested = True


def _no_line(submitted: Submitted, parts: list[tuple[str, Output]], state: Path) -> str:
    """Why a batch's files answer none of its requests: nothing is taken from them, so a
    rerun reads them again (a download cut short, say) instead of submitting anew."""
    said = "; ".join(f"{source}: {part.lines_said()}" for source, part in parts)
    return (
        f"batch {submitted.id}: no line of its files answers one of its requests ({said}); "
        f"run again to read them again, or remove {state} to submit anew"
    )


def _ended(batch: Any) -> str | None:
    """Why a batch ended without answering everything (None: it completed)."""
    if batch.status == "completed":
        return None
    errors = getattr(getattr(batch, "errors", None), "data", None) or []
    messages = [getattr(e, "message", None) for e in errors]
    return "; ".join(m for m in messages if m) or batch.status


def _chunks(lines: Mapping[str, bytes], max_requests: int, max_bytes: int) -> Iterable[list[str]]:
    chunk: list[str] = []
    size = 0
    for key, line in lines.items():
        length = len(line) + 1
        if chunk and (len(chunk) >= max_requests or size + length > max_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append(key)
        size += length
    if chunk:
        yield chunk
