"""The files this package writes: replaced whole (a crash midway leaves the old content, never
half of the new), and the per-user folder that holds its cache and the embedded model."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: str | Path, data: bytes) -> None:
    target = Path(path)
    partial = target.with_name(target.name + f".{os.getpid()}.partial")
    try:
        partial.write_bytes(data)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def default_cache_dir() -> Path:
    """`JUDGE_CACHE_DIR`, else the per-user cache folder."""
    if env := os.environ.get("JUDGE_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tool-call-judge"
