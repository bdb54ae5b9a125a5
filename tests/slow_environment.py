"""An environment whose `spin` tool takes `seconds` of CPU (pure Python, as a check is) before it
answers, and whose other tools answer at once: a check as slow as a test needs, however fast
the checks themselves become. `--env tests/slow_environment.py:make_environment`."""

from __future__ import annotations

import time
from typing import Any


class SlowEnvironment:
    def call(self, name: str, arguments: dict[str, Any]) -> str:
        end = time.thread_time() + (float(arguments.get("seconds", 0)) if name == "spin" else 0)
        while time.thread_time() < end:  # CPU time: threads that share the GIL share no more
            pass
        return "done"

    def snapshot(self) -> dict[str, Any]:
        return {}


def make_environment() -> SlowEnvironment:
    return SlowEnvironment()
