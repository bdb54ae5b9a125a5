"""A fake OpenAI Batch API on 127.0.0.1, beside the scripted chat completions: `/v1/files`
(upload, content) and `/v1/batches` (create, retrieve, list), each batch going validating ->
in_progress -> its scripted end (completed, expired, failed, cancelled), its lines answered by
the same scripted judge as online requests, with output and error files."""

from __future__ import annotations

import email
import email.policy
import json
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.chat_server import ChatServer, Reply, Seen, answer
from tests.loopback import Answer
from tests.review_helpers import clean_env

Fault = Callable[[dict[str, Any]], str | None]
"""Per input line: None (answered), `error` (an error-file line), `malformed` (a reply that is
not the JSON asked for)."""


class BatchServer(ChatServer):
    def __init__(self, default: Callable[[dict[str, Any]], Reply] = answer) -> None:
        super().__init__(default)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.ends: deque[str] = deque()
        """How the next batches end (default: completed)."""
        self.fault: Fault = lambda line: None
        self.polls_to_finish = 2
        """Retrieves a batch answers in progress before it ends."""
        self.hold = threading.Event()
        self.hold.set()
        """Cleared: every batch stays in progress (to kill a client while it polls)."""
        self.created = 0
        self.unavailable = 0
        """The next status checks answered 503 (a provider's bad minute)."""

    def input_lines(self, batch_id: str) -> list[dict[str, Any]]:
        data = self.files[self.batches[batch_id]["input_file_id"]]
        return [json.loads(line) for line in data.splitlines() if line.strip()]

    async def handle(self, request: Seen) -> Answer:
        path = request.path.split("?")[0].removeprefix("/v1")
        if request.method == "POST" and path == "/files":
            return self._upload(request)
        if request.method == "GET" and path.startswith("/files/") and path.endswith("/content"):
            found = self.files.get(path.split("/")[2])
            return (
                Answer(404, {"error": {"message": "no such file"}})
                if found is None
                else Answer(200, found)
            )
        if request.method == "POST" and path == "/batches":
            return self._create(request.body)
        if request.method == "GET" and path == "/batches":
            data = sorted(self.batches.values(), key=lambda b: b["created_at"], reverse=True)
            return Answer(200, {"object": "list", "data": data, "has_more": False})
        if request.method == "GET" and path.startswith("/batches/"):
            if self.unavailable:
                self.unavailable -= 1
                return Answer(503, {"error": {"message": "try again later"}})
            batch = self.batches.get(path.split("/")[2])
            if batch is None:
                return Answer(404, {"error": {"message": "no such batch"}})
            return Answer(200, self._advance(batch))
        return await super().handle(request)

    def _upload(self, request: Seen) -> Answer:
        head = f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode()
        message = email.message_from_bytes(head + request.body, policy=email.policy.HTTP)
        fields: dict[str, bytes] = {
            str(part.get_param("name", header="content-disposition")): bytes(
                part.get_payload(decode=True)
            )
            for part in message.iter_parts()
        }
        assert fields.get("purpose") == b"batch", fields.get("purpose")
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = fields["file"]
        return Answer(200, _file(file_id, len(fields["file"])))

    def _create(self, body: dict[str, Any]) -> Answer:
        if body.get("input_file_id") not in self.files:
            return Answer(400, {"error": {"message": "no such input file"}})
        assert body["endpoint"] == "/v1/chat/completions" and body["completion_window"] == "24h"
        self.created += 1
        batch_id = f"batch_{self.created}"
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "errors": None,
            "input_file_id": body["input_file_id"],
            "completion_window": body["completion_window"],
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": self.created,
            "metadata": body.get("metadata"),
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "_polls": 0,
            "_end": self.ends.popleft() if self.ends else "completed",
        }
        return Answer(200, _public(self.batches[batch_id]))

    def _advance(self, batch: dict[str, Any]) -> dict[str, Any]:
        if batch["status"] in ("completed", "failed", "expired", "cancelled"):
            return _public(batch)
        batch["_polls"] += 1
        lines = self.input_lines(batch["id"])
        batch["request_counts"]["total"] = len(lines)
        if batch["_polls"] < self.polls_to_finish or not self.hold.is_set():
            batch["status"] = "in_progress"
            return _public(batch)
        self._finish(batch, lines)
        return _public(batch)

    def _finish(self, batch: dict[str, Any], lines: list[dict[str, Any]]) -> None:
        end = batch["_end"]
        batch["status"] = end
        if end == "failed":
            batch["errors"] = {
                "object": "list",
                "data": [{"code": "invalid_request", "message": "the input file was refused"}],
            }
            return
        answered = lines if end == "completed" else lines[: len(lines) // 2]
        output, errors = [], []
        for number, line in enumerate(lines, start=1):
            row_id = f"batch_req_{batch['id']}_{number}"
            if line not in answered:
                errors.append({
                    "id": row_id, "custom_id": line["custom_id"], "response": None,
                    "error": {"code": f"batch_{end}", "message": f"the batch was {end} first"},
                })  # fmt: skip
                continue
            fault = self.fault(line)
            if fault == "error":
                errors.append({
                    "id": row_id, "custom_id": line["custom_id"],
                    "response": {"status_code": 500, "request_id": row_id,
                                 "body": {"error": {"message": "the server had an error"}}},
                    "error": None,
                })  # fmt: skip
                continue
            reply = self._next(line["body"])
            body = reply.body
            if fault == "malformed":
                body = json.loads(json.dumps(body))
                body["choices"][0]["message"]["content"] = '{"verdict": "correct", "reas'
                body["choices"][0]["message"].pop("tool_calls", None)
            output.append({
                "id": row_id, "custom_id": line["custom_id"],
                "response": {"status_code": 200, "request_id": row_id, "body": body},
                "error": None,
            })  # fmt: skip
        batch["request_counts"].update(completed=len(output), failed=len(errors))
        for rows, field in ((output, "output_file_id"), (errors, "error_file_id")):
            if rows:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch[field] = file_id

    @property
    def batch_creations(self) -> int:
        return sum(1 for s in self.seen if s.method == "POST" and s.path.startswith("/v1/batches"))


def _file(file_id: str, size: int) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": 0,
        "filename": "judge-batch.jsonl",
        "purpose": "batch",
        "status": "processed",
    }


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def offline_output(server: BatchServer, input_file: bytes) -> bytes:
    """What an offline batch runner (vLLM's, on a GPU box) writes for an input file: one
    output line per request, answered by the server's scripted judge."""
    rows = []
    for number, raw in enumerate(input_file.splitlines(), start=1):
        line = json.loads(raw)
        reply = server._next(line["body"])
        rows.append({
            "id": f"offline_{number}", "custom_id": line["custom_id"],
            "response": {"status_code": 200, "request_id": f"r{number}", "body": reply.body},
            "error": None,
        })  # fmt: skip
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@contextmanager
def batch_serving() -> Iterator[BatchServer]:
    """A `BatchServer` on a free loopback port, stopped after."""
    running = BatchServer().start()
    try:
        yield running
    finally:
        running.stop()


def judge_on(
    server: BatchServer, tmp_path: Path, *args: str, cache: str = "cache"
) -> subprocess.CompletedProcess[str]:
    """`judge ARGS` as a whole process, its judge (and batches) on `server`."""
    return subprocess.run(
        [sys.executable, "-m", "judge", *args, "--base-url", server.url, "--model", "m",
         "--cache-dir", str(tmp_path / cache)],
        capture_output=True, text=True, env=clean_env(), timeout=300,
    )  # fmt: skip
