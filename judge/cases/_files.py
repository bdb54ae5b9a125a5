"""Replacing a file whole: a crash midway leaves the old content, never half of the new."""

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
