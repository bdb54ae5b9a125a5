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
Rows with one column of text that is not a case field (`read_text`'s `text`, `from_items`'s
`item`) are read as that column's case JSON without `column`: text that is not JSON, or JSON
that is not an object, is an `InvalidCase` result saying so.

A case without an `id` (or `name`) gets `<source> task <t>:<n>`: the `n`th row that Ray task
`t` of the map read (`source` defaults to `<ray>`; Ray numbers the tasks of an operator
uniquely, and each task counts its own rows, as Ray's own `random_sample` keys its state), so
no two rows of a dataset share one, and a rerun of the same read gives the same ids. A bad row
is named by the same place. Two rows with the same explicit id are not changed:
`repeated_ids(results)` finds them, and `judge check/grade --ray` says so on standard error.

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
import uuid
from collections.abc import Collection, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from judge._errors import CaseError
from judge.cases._case import Case
from judge.cases._json import DecodeError, dumps, dumps_line, json_kind, loads
from judge.cases._loading import parse_case, read_line
from judge.cases._match import Match
from judge.cases._parquet import decoded_row, json_columns
from judge.checks._check import invalid_case_result
from judge.checks._chunk import check_item, check_lines
from judge.checks._env import EnvironmentFactory, load_factory
from judge.checks._outcome import JudgeOutcome
from judge.checks._result import CaseResult
from judge.checks._structure import SchemaCache
from judge.checks._verdict import with_judge

if TYPE_CHECKING:
    import pyarrow as pa
    from ray.data import Dataset

    from judge.calibrate._record import CalibrationRecord

SOURCE = "<ray>"
_SCHEMAS = SchemaCache()  # one per worker process: validators built once per schema
_CASE_FIELDS = frozenset(Case.model_fields) | {"name"}
"""A row's only column named so is that field of the case, not case JSON."""
_ROWS_READ = "judge.rows_read"  # the rows a Ray task has read so far, in its TaskContext
_JSON_NOUNS = {
    "an array": "a JSON array",
    "a string": "a JSON string",
    "a number": "a JSON number",
    "a boolean": "a JSON boolean",
    "null": "JSON null",
}


def check(
    ds: Dataset,
    *,
    column: str | None = None,
    match: Match | None = None,
    env: str | None = None,
    batch_size: int | None = None,
    json_columns: Collection[str] | None = None,
    source: str = SOURCE,
) -> Dataset:
    """The deterministic checks of every case of `ds`, in `map_batches` tasks (a block at a
    time, unless `batch_size`: rows of mixed shapes cannot always be joined into one Arrow
    batch). `match` and `env` (a `module:callable` factory, loaded in each worker) as
    `judge check --match/--env`. `json_columns`: the columns of object rows that hold JSON
    text (`parquet_json_columns` reads them from this package's Parquet; default: the case's
    object fields). `source` names the rows in fallback ids and errors (module docstring)."""
    encoded = set(json_columns) if json_columns is not None else None
    return ds.map_batches(
        functools.partial(
            _check_batch, column=column, match=match, env=env, encoded=encoded, source=source
        ),
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
    source: str = SOURCE,
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
            "source": source,
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


def repeated_ids(results: Dataset) -> dict[str, int]:
    """The ids that more than one result row of `results` (what `check` or `grade` returned)
    holds, with how many rows: the `id` column streamed to the driver, which keeps each id
    once (this runs the results' pipeline again unless they are materialized)."""
    return repeats(row["id"] for row in results.select_columns(["id"]).iter_rows())


def repeats(ids: Iterable[Any]) -> dict[str, int]:
    """The ids that occur more than once in `ids`, with how many times, in the order they
    first repeat."""
    seen: set[str] = set()
    repeated: dict[str, int] = {}
    for value in ids:
        case_id = str(value)
        if case_id in seen:
            repeated[case_id] = repeated.get(case_id, 1) + 1
        else:
            seen.add(case_id)
    return repeated


def items(
    batch: pa.Table, column: str | None, encoded: set[str] | None = None, source: str = SOURCE
) -> Iterator[Case | CaseError]:
    """The cases of one batch of rows (or the `CaseError` standing for a bad row), each named
    by its place in the dataset (module docstring)."""
    where, first = _place(batch.num_rows, source)
    text = _text_column(batch) if column is None else None
    for line, raw in enumerate(_raw_rows(batch, column or text, encoded), start=first):
        yield _read(raw, source=where, line=line, text=text)


def _place(rows: int, source: str) -> tuple[str, int]:
    """Where a batch of `rows` rows is: `<source> task <t>` and the number of its first row
    among those the task read (Ray's TaskContext, where Ray's own map functions keep their
    per-task state). Outside a Ray task, a batch with a name of its own."""
    try:
        from ray.data._internal.execution.interfaces.task_context import TaskContext

        context = TaskContext.get_current()
    except (ImportError, AttributeError):  # not in a Ray task, or a Ray without it
        context = None
    state = getattr(context, "kwargs", None)
    if context is None or not isinstance(state, dict):
        return f"{source} batch {uuid.uuid4().hex[:12]}", 1
    read = int(state.get(_ROWS_READ, 0))
    state[_ROWS_READ] = read + rows
    return f"{source} task {context.task_idx}", read + 1


def _text_column(batch: pa.Table) -> str | None:
    """The name of a batch's only column when it holds text that must be case JSON (not a
    case field's own column, such as `id` or `response`)."""
    import pyarrow as pa

    if batch.num_columns != 1:
        return None
    field = batch.schema.field(0)
    kind = field.type
    text = pa.types.is_string(kind) or pa.types.is_large_string(kind)
    binary = pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
    if field.name in _CASE_FIELDS or not (text or binary or pa.types.is_null(kind)):
        return None
    return str(field.name)


def _read(raw: bytes | None, *, source: str, line: int, text: str | None) -> Case | CaseError:
    """The case of one row's JSON; `text`: the row's only column, which had to hold it."""
    if raw is None:
        return CaseError("not a case: the row has no case JSON", source=source, line=line)
    if text is None:
        return read_line(raw, source=source, line=line)
    try:
        data = loads(raw)
    except DecodeError as exc:
        return CaseError(
            f"column {text!r} holds text that is not JSON: {exc}", source=source, line=line
        )
    if not isinstance(data, dict):
        noun = _JSON_NOUNS.get(json_kind(data), "JSON")
        return CaseError(
            f"column {text!r} holds {noun}, not a case object", source=source, line=line
        )
    try:
        return parse_case(data, source=source, line=line)
    except CaseError as exc:
        return exc


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
    source: str = SOURCE,
) -> dict[str, list[Any]]:
    """The checks of one batch, on `judge check`'s own path: a line in the common form is
    read lean and checked without the models, any other as a `Case`."""
    factory = _factory(env) if env is not None else None
    where, first = _place(batch.num_rows, source)
    text = _text_column(batch) if column is None else None

    def whole(line: int, raw: bytes | None) -> dict[str, Any]:
        item = _read(raw, source=where, line=line, text=text)
        return check_item(item, match=match, env=factory, schemas=_SCHEMAS).to_json_dict()

    numbered = enumerate(_raw_rows(batch, column or text, encoded), start=first)
    plain = match is None and factory is None
    return _rows([data for _, data in check_lines(numbered, _SCHEMAS, whole, plain=plain)])


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
        source: str = SOURCE,
    ) -> None:
        from judge.judging._grade import Judge

        self.column, self.encoded, self.source = column, encoded, source
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

        found = list(items(batch, self.column, self.encoded, self.source))
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
        return with_judge(self.judge.check(item), outcome)

    def __del__(self) -> None:
        try:
            self.loop.run_until_complete(self.judge.aclose())
            self.loop.close()
        except Exception:  # noqa: BLE001, S110 (the actor is going away)
            pass
