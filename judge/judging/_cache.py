"""A persistent cache of verdicts (SQLite), keyed by the prompt and the judge's fingerprint."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import threading
from pathlib import Path
from typing import Any

import orjson

from judge.cases._json import dumps

_FILE = "verdicts.sqlite"


def cache_key(parts: dict[str, Any]) -> str:
    """A stable hash of everything that could change a reply."""
    return hashlib.sha256(dumps(parts, sort_keys=True)).hexdigest()


class VerdictCache:
    """Validated replies by key. Only usable verdicts are stored, so a `judge_error` is asked
    again on the next run. Reads and writes run off the event loop."""

    def __init__(self, directory: str | Path) -> None:
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / _FILE
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, value BLOB NOT NULL)"
            )
            self._db.commit()

    async def get(self, key: str) -> Any | None:
        return await asyncio.to_thread(self._get, key)

    async def put(self, key: str, value: Any) -> None:
        await asyncio.to_thread(self._put, key, orjson.dumps(value))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _get(self, key: str) -> Any | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM verdicts WHERE key = ?", (key,)).fetchone()
        return None if row is None else orjson.loads(row[0])

    def _put(self, key: str, value: bytes) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO verdicts VALUES (?, ?)", (key, value))
            self._db.commit()
