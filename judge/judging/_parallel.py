"""Work on a stream of items, a bounded number at once, yielding each result as it finishes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


async def in_parallel(
    items: Iterable[tuple[int, T]],
    work: Callable[[T], Awaitable[R]],
    concurrency: int,
) -> AsyncIterator[tuple[int, R]]:
    """`work` on every item, `concurrency` at a time, items read lazily (at most twice that
    many read ahead); yields `(index, result)` in completion order. An error reading the
    items or doing the work is raised here, once the rest is cancelled."""
    inbox: asyncio.Queue[tuple[int, T] | None] = asyncio.Queue(maxsize=concurrency * 2)
    outbox: asyncio.Queue[tuple[int, R] | BaseException | None] = asyncio.Queue()

    async def feed() -> None:
        try:
            for job in items:
                await inbox.put(job)
        except Exception as exc:  # the items cannot be read (a missing file): raised below
            await outbox.put(exc)
        # Not in `finally`: once cancelled, no worker is left to make room in the inbox.
        for _ in range(concurrency):
            await inbox.put(None)

    async def worker() -> None:
        try:
            while (job := await inbox.get()) is not None:
                index, item = job
                await outbox.put((index, await work(item)))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer to raise
            await outbox.put(exc)
        finally:
            await outbox.put(None)

    tasks = [asyncio.create_task(feed())]
    tasks += [asyncio.create_task(worker()) for _ in range(concurrency)]
    running = concurrency
    try:
        while running:
            got = await outbox.get()
            if got is None:
                running -= 1
            elif isinstance(got, BaseException):
                raise got
            else:
                yield got
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
