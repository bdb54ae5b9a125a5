"""Checks and judging on a Ray cluster (the `ray` extra: `pip install 'tool-call-judge[ray]'`),
for data past one machine, where it already lives.

    import ray, judge.ray
    cases = ray.data.read_text("s3://bucket/cases/*.jsonl")          # one column of case JSON
    results = judge.ray.check(cases, column="text")                   # map_batches tasks
    graded = judge.ray.grade(cases, column="text", actors=4,
                             judge={"base_url": URL, "model": "gpt-4.1-mini"})

Both take a Ray Dataset of cases, as rows that are case objects or as one column of case JSON
text (`column`), and return a Dataset of results, one row per case: `id`, `passed` and `result`,
the result's JSON exactly as `judge check` / `judge grade` write it (a bad row is an
`InvalidCase` result). Rows that are objects come through Arrow, which gives every row the
union of the fields of all rows, filled with nulls: nested nulls are left out when a row is read
back, so a `null` written inside a nested value is lost. One column of case JSON text (Ray's
`read_text` on JSON Lines) or this package's Parquet (nested fields as JSON text) is exact.

Judging runs in an actor pool: each of `actors` actors holds one `Judge` built from the same
options, with its own bounded concurrency (`judge["concurrency"]`, default 8), so at most
`actors x concurrency` requests are in flight. Every actor's judge has the fingerprint of the
driver's, and the calibration gate is applied once, on the driver, before any request. A judge
endpoint that refuses (a bad key, no credit) fails the cases of the batch that met it with
`judge_error` and the reason; the job goes on.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any

from judge._errors import CaseError
from judge.cases._case import Case
from judge.cases._json import dumps, dumps_line
from judge.cases._lean import read_lean
from judge.cases._loading import read_line
from judge.cases._match import Match
from judge.cases._parquet import decoded_row, json_columns
from judge.checks._check import check_case, invalid_case_result
from judge.checks._env import EnvironmentFactory, load_factory
from judge.checks._outcome import JudgeOutcome
from judge.checks._plain import check_plain
from judge.checks._result import CaseResult
from judge.checks._structure import SchemaCache

if TYPE_CHECKING:
    import pyarrow as pa
    from ray.data import Dataset

    from judge.calibrate._record import CalibrationRecord

SOURCE = "<ray>"
_SCHEMAS = SchemaCache()  # one per worker process: validators built once per schema


def check(
    ds: Dataset,
    *,
    column: str | None = None,
    match: Match | None = None,
    env: str | None = None,
    batch_size: int | None = None,
    json_columns: Collection[str] | None = None,
) -> Dataset:
    """The deterministic checks of every case of `ds`, in `map_batches` tasks (a block at a
    time, unless `batch_size`: rows of mixed shapes cannot always be joined into one Arrow
    batch). `match` and `env` (a `module:callable` factory, loaded in each worker) as
    `judge check --match/--env`. `json_columns`: the columns of object rows that hold JSON
    text (`parquet_json_columns` reads them from this package's Parquet; default: the case's
    object fields)."""
    encoded = set(json_columns) if json_columns is not None else None
    return ds.map_batches(
        functools.partial(_check_batch, column=column, match=match, env=env, encoded=encoded),
        batch_size=batch_size,
        batch_format="pyarrow",
        zero_copy_batch=True,
    )


def grade(
    ds: Dataset,
    *,
    column: str | None = None,
    judge: dict[str, Any] | None = None,
    actors: int = 2,
    batch_size: int = 64,
    num_cpus: float = 0.5,
    calibration: str | None = None,
    strict: bool = False,
    force: bool = False,
    json_columns: Collection[str] | None = None,
) -> Dataset:
    """The checks and the LLM judge on every case of `ds`, in a pool of `actors` actors, each
    holding a `Judge(**judge)` and `num_cpus` of a CPU (a hosted judge mostly waits; give the
    embedded model a whole one or more). With `calibration` (a `judge calibrate` record), the
    gate is
    applied here, once, before any request: `GateRefusal` when it refuses (with `force`, the
    verdicts are marked `trusted: false`)."""
    from ray.data import ActorPoolStrategy

    from judge.calibrate._record import GateRefusal, admit, load_record
    from judge.judging._grade import Judge

    options = dict(judge or {})
    local = Judge(**options)  # built, never entered: its fingerprint and the gate
    trusted: bool | None = None
    record = load_record(calibration) if calibration is not None else None
    if record is not None:
        try:  # as `judge grade --calibration`: the fitted decision, then the gate
            admit(local, record, source=str(calibration), strict=strict)
            trusted = True
        except GateRefusal:
            if not force:
                raise
            trusted = False
    return ds.map_batches(
        _Grade,
        fn_constructor_kwargs={
            "options": options,
            "column": column,
            "fingerprint": local.fingerprint(),
            "trusted": trusted,
            "record": record,
            "encoded": set(json_columns) if json_columns is not None else None,
        },
        batch_size=batch_size,
        batch_format="pyarrow",
        compute=ActorPoolStrategy(size=actors),
        num_cpus=num_cpus,
        zero_copy_batch=True,
    )


def parquet_json_columns(path: str) -> set[str] | None:
    """The columns of JSON text of a Parquet file this package wrote (None: another's)."""
    import pyarrow.parquet as pq

    return json_columns(pq.read_schema(path).metadata)


def items(
    batch: pa.Table, column: str | None, encoded: set[str] | None = None
) -> Iterator[Case | CaseError]:
    """The cases of one batch of rows (or the `CaseError` standing for a bad row, named by
    its position in the batch)."""
    for position, raw in enumerate(_raw_rows(batch, column, encoded), start=1):
        yield _no_case(position) if raw is None else read_line(raw, source=SOURCE, line=position)


def _no_case(position: int) -> CaseError:
    return CaseError("not a case: the row has no case JSON", source=SOURCE, line=position)


def rows(results: list[CaseResult]) -> dict[str, list[Any]]:
    """Result rows: `id`, `passed` and the result's JSON."""
    return _rows([r.to_json_dict() for r in results])


def _rows(found: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {
        "id": [r["id"] for r in found],
        "passed": [r["passed"] for r in found],
        "result": [dumps_line(r)[:-1].decode() for r in found],
    }


def _check_batch(
    batch: pa.Table,
    column: str | None,
    match: Match | None,
    env: str | None,
    encoded: set[str] | None,
) -> dict[str, list[Any]]:
    """The checks of one batch, on `judge check`'s own path: a line in the common form is
    read lean and checked without the models, any other as a `Case`."""
    factory = _factory(env) if env is not None else None
    plain = match is None and factory is None
    found = []
    for position, raw in enumerate(_raw_rows(batch, column, encoded), start=1):
        lean = read_lean(raw) if plain and raw is not None else None
        if lean is not None:
            found.append(check_plain(lean, _SCHEMAS))
            continue
        item = (
            read_line(raw, source=SOURCE, line=position) if raw is not None else _no_case(position)
        )
        result = (
            invalid_case_result(item)
            if isinstance(item, CaseError)
            else check_case(item, match=match, env=factory, schemas=_SCHEMAS)
        )
        found.append(result.to_json_dict())
    return _rows(found)


def _raw_rows(
    batch: pa.Table, column: str | None, encoded: set[str] | None
) -> Iterator[bytes | None]:
    """Each row's case JSON (None: a row with none)."""
    if column is not None:
        for value in batch.column(column).to_pylist():
            if isinstance(value, str):
                value = value.encode()
            yield value if isinstance(value, bytes) else None
        return
    encoded = encoded if encoded is not None else json_columns(batch.schema.metadata)
    for row in batch.to_pylist():
        try:
            yield dumps(decoded_row(row, encoded))
        except ValueError:
            yield None


@functools.cache
def _factory(spec: str) -> EnvironmentFactory:
    return load_factory(spec)


class _Grade:
    """A judging actor: one `Judge`, entered once, on an event loop of its own."""

    def __init__(
        self,
        options: dict[str, Any],
        column: str | None,
        fingerprint: dict[str, Any],
        trusted: bool | None,
        record: CalibrationRecord | None,
        encoded: set[str] | None,
    ) -> None:
        from judge.judging._grade import Judge

        self.column, self.encoded = column, encoded
        self.loop = asyncio.new_event_loop()
        self.judge = Judge(**options)
        if self.judge.fingerprint() != fingerprint:
            raise RuntimeError("this actor's judge differs from the driver's: same options?")
        self.judge.trusted = trusted
        if record is not None:  # the decision the calibration fitted, as on the driver
            from judge.calibrate._record import fit_from

            fit_from(self.judge, record)
        self.loop.run_until_complete(self.judge.__aenter__())

    def __call__(self, batch: pa.Table) -> dict[str, list[Any]]:
        from judge.endpoints._client import JudgeEndpointError

        found = list(items(batch, self.column, self.encoded))
        try:
            graded = list(self.loop.run_until_complete(self.judge.grade(found)))
        except JudgeEndpointError as exc:  # the endpoint refuses: these cases, not the job
            graded = [self._refused(item, exc) for item in found]
        return rows(graded)

    def _refused(self, item: Case | CaseError, exc: Exception) -> CaseResult:
        if isinstance(item, CaseError):
            return invalid_case_result(item)
        outcome = JudgeOutcome(
            status="judge_error",
            error=str(exc),
            samples=self.judge.samples,
            provenance=self.judge.provenance(),
            trusted=self.judge.trusted,
        )
        return self.judge.check(item).model_copy(update={"judge": outcome})

    def __del__(self) -> None:
        try:
            self.loop.run_until_complete(self.judge.aclose())
            self.loop.close()
        except Exception:  # noqa: BLE001, S110 (the actor is going away)
            pass
