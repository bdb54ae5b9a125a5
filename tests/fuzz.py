"""Seeded mutations of a valid input, for the readers' fuzz tests: byte flips, truncation,
wrong-typed values at random JSON pointers, lines dropped, doubled or replaced by garbage;
and a bound on the time and the memory (tracemalloc's peak) a fuzz loop may take."""

from __future__ import annotations

import copy
import json
import random
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

ODD_VALUES: tuple[Any, ...] = (
    None, True, False, 0, -1, 1.5, 2**70, -(2**64), "", "12x", "\ud800", "\x00", "é" * 3,
    [], {}, [[[[]]]], {"a": None}, [1, "a", None], float("nan"), float("inf"), "x" * 5000,
)  # fmt: skip
"""What a wrong-typed value is drawn from: every JSON kind, and what JSON cannot hold."""


def flip(data: bytes, rng: random.Random) -> bytes:
    """Up to eight bytes set to random values."""
    if not data:
        return bytes([rng.randrange(256)])
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every JSON pointer in `value`, as path parts (the root's is `()`)."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*path, index))


def retyped(value: Any, rng: random.Random) -> tuple[Any, tuple[Any, ...]]:
    """A copy of `value` with the value at one random pointer replaced by an odd one, and
    that pointer's path."""
    found = copy.deepcopy(value)
    path = rng.choice(list(paths(found)))
    odd = rng.choice(ODD_VALUES)
    if not path:
        return odd, path
    target = found
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = odd
    return found, path


def json_bytes(value: Any) -> bytes:
    """JSON as a careless writer writes it: NaN and Infinity as literals, lone surrogates
    escaped."""
    return json.dumps(value).encode()


def mutated_lines(data: bytes, rng: random.Random) -> bytes:
    """JSON Lines with one random mutation: bytes flipped, cut short, one line's value at a
    random pointer retyped, a line dropped, doubled or replaced by garbage."""
    lines = data.splitlines()
    how = rng.randrange(6)
    if how == 0:
        return flip(data, rng)
    if how == 1:
        return truncate(data, rng)
    at = rng.randrange(len(lines))
    if how == 2:
        lines[at] = json_bytes(retyped(json.loads(lines[at]), rng)[0])
    elif how == 3:
        del lines[at]
    elif how == 4:
        lines.insert(at, lines[rng.randrange(len(lines))])
    else:
        lines[at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    return b"\n".join(lines) + b"\n"


@dataclass
class Budget:
    """How long a fuzz loop runs, and how much Python memory it may hold at its peak."""

    seconds: float
    peak_bytes: int
    rounds: int = 0
    peak: int = 0

    def more(self) -> bool:
        self.rounds += 1
        return time.monotonic() < self._deadline

    @contextmanager
    def running(self) -> Iterator[Budget]:
        self._deadline = time.monotonic() + self.seconds
        tracemalloc.start()
        try:
            yield self
        finally:
            self.peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        assert self.peak < self.peak_bytes, f"peak memory {self.peak} bytes"
        assert self.rounds > 10, f"only {self.rounds} rounds in {self.seconds} s"
