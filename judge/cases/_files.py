"""Files: the case files this package reads, the files it writes (replaced whole: a crash
midway leaves the old content, never half of the new), and the per-user folder that holds its
cache and the embedded model."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import BinaryIO

from judge._errors import InputError


def write_atomically(path: str | Path, data: bytes, *, durable: bool = False) -> None:
    """Replace `path` with `data` whole. `durable`: on disk (file and folder synced) before
    this returns, so what was acknowledged survives a crash of the machine too."""
    target = Path(path)
    partial = target.with_name(target.name + f".{os.getpid()}.{threading.get_ident()}.partial")
    try:
        with partial.open("wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(partial, target)
        if durable:
            folder = os.open(target.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
    finally:
        partial.unlink(missing_ok=True)


def default_cache_dir() -> Path:
    """`JUDGE_CACHE_DIR`, else the per-user cache folder."""
    if env := os.environ.get("JUDGE_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tool-call-judge"


def open_cases(path: str) -> BinaryIO:
    """A JSONL file opened to read its lines; `InputError` when it cannot be."""
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a JSON Lines file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read cases: {exc.strerror or exc}") from None
