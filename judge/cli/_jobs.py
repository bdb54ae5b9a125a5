"""How `judge check` grades a file: in chunks of lines, in this process or (`--jobs N`) in N
worker processes, the results given back in input order. At most two chunks per worker are in
flight, so memory stays flat; a bad line is an `InvalidCase` result in its place either way."""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from judge._errors import JudgeError
from judge.cases._file_form import CaseDocument, CaseInput
from judge.cases._files import open_cases
from judge.cases._parquet import is_parquet
from judge.checks._chunk import check_item, grade_lines
from judge.checks._structure import SchemaCache
from judge.checks._summary import Summary, Tally

if TYPE_CHECKING:
    from concurrent.futures import Future

    from judge.cases._match import Match
    from judge.cases._shared_tools import SharedTools
    from judge.checks._env import EnvironmentFactory

CHUNK_LINES = 1000
STDIN = "<stdin>"
"""The source name of standard input (which workers cannot open, even when it is a file)."""
MANY_LINES = 4000
"""Files past this many lines get every core by default; smaller ones, one process."""


class WorkerFailed(JudgeError):
    """A worker process died: the results it had not sent back are lost, so the run stops."""


@dataclass
class Checked:
    """What grading one chunk of lines gives back."""

    output: bytes
    """The result lines, in input order."""
    summary: Summary
    invalid: list[str] = field(default_factory=list)
    """The message of each `InvalidCase` failure (a line or a case that cannot be read), to
    report as one process does."""
    warnings: list[str] = field(default_factory=list)
    """What the readable cases hold that the format does not know (one message each)."""
    lines: int = 0
    numbers: list[int] = field(default_factory=list)
    """Each result's line number, in output order."""
    ids: list[str] = field(default_factory=list)
    """Each result's case id, in output order."""


def default_jobs(paths: tuple[str, ...]) -> int:
    """Every core this process may use when a file is past `MANY_LINES` lines, else 1 (and 1
    for standard input, which is read as it comes)."""
    if not any(
        path != "-" and not is_parquet(path) and _has_lines(path, MANY_LINES + 1) for path in paths
    ):
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def check_chunk(
    source: str,
    lines: list[tuple[int, bytes]],
    settings: Match | None,
    factory: EnvironmentFactory | None,
    schemas: SchemaCache,
    strict: bool = False,
    shared: SharedTools | None = None,
) -> Checked:
    """Grade numbered non-blank lines of `source`: what a process does with a chunk. With
    `strict`, a case holding a key the format does not know is an `InvalidCase`; `shared`
    tools are offered to each case that has none (`--tools`)."""
    done = Checked(output=b"", summary=Summary(), lines=len(lines))
    plain = settings is None and factory is None  # the response alone, by default
    tally = Tally()

    def whole(number: int, raw: bytes) -> dict[str, Any]:
        return _check_whole(source, number, raw, settings, factory, schemas, done, strict, shared)

    offered = shared.lean() if shared is not None else None
    done.output = grade_lines(lines, schemas, whole, plain, tally, done.numbers, done.ids, offered)
    done.summary.add_tally(tally)
    return done


def _check_whole(
    source: str,
    number: int,
    raw: bytes,
    settings: Match | None,
    factory: EnvironmentFactory | None,
    schemas: SchemaCache,
    done: Checked,
    strict: bool,
    shared: SharedTools | None,
) -> dict[str, Any]:
    """Grade a line read as a `Case` (the models load with the first such line)."""
    from judge._errors import CaseError
    from judge.cases._case import Case
    from judge.cases._loading import read_line
    from judge.checks._mcp import McpServer
    from judge.cli._common import invalid_messages

    warned = len(done.warnings)
    item = read_line(raw, source=source, line=number, strict=strict, warn=done.warnings.append)
    if shared is not None:  # before the server's: a case with the shared tools keeps them
        item = shared.offered_to(item)
    if isinstance(factory, McpServer) and isinstance(item, Case):  # offered the server's tools
        try:
            item = factory.offered_to(item)
        except ValueError as exc:
            item = CaseError(
                str(exc), source=source, line=number, case_id=item.id, pointer="/tools"
            )
    if len(done.warnings) > warned:
        done.summary.unknown_fields += 1
    result = check_item(item, match=settings, env=factory, schemas=schemas)
    done.invalid += invalid_messages(result)
    return result.to_json_dict()


class InProcess:
    """The chunks of a stream graded here, one after the other."""

    def __init__(
        self,
        settings: Match | None,
        factory: EnvironmentFactory | None,
        strict: bool = False,
        shared: SharedTools | None = None,
    ) -> None:
        self._settings, self._factory, self._schemas = settings, factory, SchemaCache()
        self._strict, self._shared = strict, shared

    def __enter__(self) -> InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def check(self, stream: CaseInput, source: str) -> Iterator[Checked]:
        """Each chunk of `stream`'s lines, graded, in input order."""
        for chunk in _chunks(stream):
            yield self.check_work(source, chunk)

    def check_work(self, source: str, work: list[tuple[int, bytes]] | Span) -> Checked:
        """One chunk of lines, or a span of the file `source`, graded here."""
        lines = _span_lines(source, work) if isinstance(work, Span) else work
        return check_chunk(
            source, lines, self._settings, self._factory, self._schemas, self._strict, self._shared
        )


class Workers:
    """A pool of worker processes, each set up once with the command's trajectory options;
    with `local` (the options hold no environment of the user's, whose code could stop the
    process), this process grades too, as one of the `jobs`, while the workers are busy."""

    def __init__(
        self,
        jobs: int,
        options: dict[str, Any],
        strict: bool = False,
        local: InProcess | None = None,
        shared: SharedTools | None = None,
    ) -> None:
        from concurrent.futures import ProcessPoolExecutor  # only when there are workers
        from multiprocessing import get_context

        self.jobs = jobs
        self._local = local
        self._workers = jobs - 1 if local is not None else jobs
        # On Linux the workers are forked, now: copies of this process with its modules
        # imported (a spawned one takes 0.2 s to import them), made before any thread of it
        # exists (the progress bar's, the pool's own) to be copied mid-lock. Elsewhere fork is
        # not safe: they are spawned, and import afresh.
        start = "fork" if sys.platform == "linux" else "spawn"
        self._pool = ProcessPoolExecutor(
            self._workers,
            mp_context=get_context(start),
            initializer=_start,
            initargs=(options, strict, shared),
        )
        self._pool.submit(int)  # with fork, the first submit starts every worker

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(cancel_futures=True)

    def check(self, stream: CaseInput, source: str) -> Iterator[Checked]:
        """Each chunk of `stream`'s lines, graded, in input order. Each worker has two chunks
        in flight; this process grades the next chunk itself while they are busy, and holds at
        most `AHEAD` chunks a job."""
        from concurrent.futures import Future
        from concurrent.futures.process import BrokenProcessPool

        pending: deque[Future[Checked] | Checked] = deque()
        # A file a worker can open is sent as spans of bytes, which it reads itself; a pipe,
        # line by line; a file that is one JSON document, case by case.
        spans = source != STDIN and getattr(stream, "name", None) == source
        if isinstance(stream, CaseDocument) or not (spans and stream.seekable()):
            works: Iterator[Span | list[tuple[int, bytes]]] = _chunks(stream)
        else:
            works = _spans(stream)
        try:
            for work in works:
                busy = sum(isinstance(p, Future) and not p.done() for p in pending)
                if self._local is not None and busy >= 2 * self._workers:
                    pending.append(self._local.check_work(source, work))
                elif isinstance(work, Span):
                    pending.append(self._pool.submit(_check_span, source, work))
                else:
                    pending.append(self._pool.submit(_check_in_worker, source, work))
                while pending and (_ready(pending[0]) or len(pending) >= AHEAD * self.jobs):
                    yield _result(pending.popleft())
            while pending:
                yield _result(pending.popleft())
        except BrokenProcessPool as exc:  # killed (out of memory?), or could not start
            raise WorkerFailed(f"a worker process stopped: {exc}") from None


AHEAD = 8
"""Chunks held a job (graded, or in flight) before the oldest is waited for: a worker starting
up (a fresh interpreter, about 0.2 s) keeps this process grading meanwhile."""


def _ready(item: Future[Checked] | Checked) -> bool:
    return isinstance(item, Checked) or item.done()


def _result(item: Future[Checked] | Checked) -> Checked:
    return item if isinstance(item, Checked) else item.result()


_worker: dict[str, Any] = {}


def _start(options: dict[str, Any], strict: bool, shared: SharedTools | None) -> None:
    # The options were checked by the parent already: in a worker they load the same way.
    from judge.cli._matching import trajectory_from

    settings, factory = trajectory_from(dict(options))
    _worker.update(
        settings=settings, factory=factory, schemas=SchemaCache(), strict=strict, shared=shared
    )


def _check_in_worker(source: str, lines: list[tuple[int, bytes]]) -> Checked:
    return check_chunk(source, lines, **_worker)


@dataclass(frozen=True)
class Span:
    """Whole lines of a file: bytes `start` to `end`, the first being line `first`."""

    start: int
    end: int
    first: int


def _check_span(source: str, span: Span) -> Checked:
    return check_chunk(source, _span_lines(source, span), **_worker)


def _span_lines(source: str, span: Span) -> list[tuple[int, bytes]]:
    """The numbered non-blank lines of a span of a file."""
    with open_cases(source) as handle:  # InputError when moved or removed meanwhile
        handle.seek(span.start)
        block = handle.read(span.end - span.start)
    lines = block.split(b"\n")  # as a file's lines are: on line feeds only
    return [(span.first + i, raw) for i, raw in enumerate(lines) if raw and not raw.isspace()]


def _spans(stream: BinaryIO) -> Iterator[Span]:
    """Spans of `CHUNK_LINES` lines each (blank lines too), found by counting line ends: each
    block's once, and line by line only in a block where a span ends."""
    start = stream.tell()
    offset, first, seen = start, 1, 0
    while block := stream.read(1 << 20):
        at, left = 0, block.count(b"\n")
        while seen + left >= CHUNK_LINES:
            for _ in range(CHUNK_LINES - seen):
                at = block.index(b"\n", at) + 1
            left -= CHUNK_LINES - seen
            yield Span(start, offset + at, first)
            start, first, seen = offset + at, first + CHUNK_LINES, 0
        seen += left
        offset += len(block)
    if offset > start:
        yield Span(start, offset, first)


def _chunks(stream: CaseInput) -> Iterator[list[tuple[int, bytes]]]:
    """The numbered non-blank lines of `stream`, `CHUNK_LINES` at a time (a file's read through
    a memory map: about half the cost of reading it line by line); of a file that is one JSON
    document, its cases, each numbered by the line it starts on."""
    if isinstance(stream, CaseDocument):
        numbered: Iterable[tuple[int, bytes]] = stream.numbered()
    else:
        numbered = enumerate(_mapped_lines(stream) or _read_lines(stream), start=1)
    chunk: list[tuple[int, bytes]] = []
    for number, raw in numbered:
        if raw and not raw.isspace():  # a line end stays: JSON readers take it as whitespace
            chunk.append((number, raw))
            if len(chunk) == CHUNK_LINES:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def _read_lines(stream: BinaryIO) -> Iterator[bytes]:
    yield from stream


def _mapped_lines(stream: BinaryIO) -> Iterator[bytes] | None:
    """The lines of the rest of a regular file, without their line feeds; None for a pipe or
    anything else that cannot be mapped."""
    import mmap

    try:
        start = stream.tell()
        mapped = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError, AttributeError):  # a pipe, an empty file, not a file
        return None
    return _lines_of(mapped, start)


def _lines_of(mapped: Any, start: int) -> Iterator[bytes]:
    with mapped:
        find, at = mapped.find, start
        while (end := find(b"\n", at)) >= 0:
            yield mapped[at:end]
            at = end + 1
        if at < len(mapped):
            yield mapped[at:]


def _has_lines(path: str, n: int) -> bool:
    """Whether the file has at least `n` lines (reading no further than that)."""
    seen = 0
    try:
        with open(path, "rb") as handle:
            while block := handle.read(1 << 20):
                seen += block.count(b"\n")
                if seen >= n:
                    return True
    except OSError:
        return False
    return False
