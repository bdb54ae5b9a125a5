"""`judge check/grade CASES --ray [ADDRESS]`: the same checks and judge on a Ray cluster (a
local one with `--ray` alone), results written as JSON Lines or Parquet in input order; ids
that more than one result holds said on standard error."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO, Any

import click

from judge._errors import InputError
from judge.cases._parquet import is_parquet, output_sink
from judge.checks._summary import Summary


def datasets(paths: tuple[str, ...]) -> list[tuple[Any, dict[str, Any]]]:
    """A Ray Dataset per input, and how to read its rows: the column holding case JSON, or
    the columns of JSON text of a Parquet file; the file names its rows' fallback ids."""
    import ray.data

    from judge.ray import parquet_json_columns

    found: list[tuple[Any, dict[str, Any]]] = []
    for path in paths:
        if path == "-":
            raise InputError("--ray reads files (where the cluster can read them), not stdin")
        full = os.path.abspath(path)
        if is_parquet(path):
            how: dict[str, Any] = {"json_columns": parquet_json_columns(full)}
            found.append((ray.data.read_parquet(full), how | {"source": path}))
        else:  # JSON Lines as text: each line exactly as written (Arrow would reshape it)
            lines = ray.data.read_text(full, drop_empty_lines=True)
            found.append((lines, {"column": "text", "source": path}))
    return found


def start(address: str) -> None:
    import logging

    try:
        import ray
    except ImportError:
        raise InputError("--ray needs Ray: pip install 'tool-call-judge[ray]'") from None
    logging.getLogger("ray").setLevel(logging.ERROR)
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    if not ray.is_initialized():
        ray.init(
            address=None if address == "local" else address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
    import ray.data

    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # results in input order
    context.enable_progress_bars = False


def write_results(
    outputs: list[Any], output: str | None, summary: Summary, command: str = "check"
) -> None:
    """Each result row's JSON to `output` (JSON Lines or Parquet; standard output without
    one), counted in `summary`; ids that more than one row holds said on standard error (the
    driver keeps each id once to find them)."""
    from judge.ray import repeats

    with output_sink(output) as sink:
        repeated = repeats(_written(outputs, sink, summary))
    if repeated:
        click.echo(f"judge {command}: {repeated_message(repeated)}", err=True)


def _written(outputs: list[Any], sink: IO[bytes], summary: Summary) -> Iterator[str]:
    """The id of each result row, once it is written and counted."""
    from judge.checks._result import CaseResult  # the models: only once --ray is asked

    for dataset in outputs:
        for row in dataset.iter_rows():
            line = row["result"].encode()
            summary.add(CaseResult.model_validate_json(line))
            sink.write(line + b"\n")
            yield str(row["id"])


def repeated_message(repeated: dict[str, int], shown: int = 5) -> str:
    """What a run says of the ids that more than one result holds: how many, the first few."""
    named = ", ".join(
        f"{case_id!r} ({count} rows)" for case_id, count in list(repeated.items())[:shown]
    )
    more = f" and {len(repeated) - shown} more" if len(repeated) > shown else ""
    noun = "id is" if len(repeated) == 1 else "ids are"
    return f"{len(repeated)} {noun} held by more than one case: {named}{more}"


def check_on_ray(
    address: str,
    paths: tuple[str, ...],
    output: str | None,
    summary: Summary,
    match: Any,
    env: str | None,
) -> None:
    import judge.ray

    start(address)
    results = [judge.ray.check(ds, match=match, env=env, **how) for ds, how in datasets(paths)]
    write_results(results, output, summary, "check")


def grade_on_ray(
    address: str,
    paths: tuple[str, ...],
    output: str | None,
    summary: Summary,
    judge_options: dict[str, Any],
    calibration: str | None,
    strict: bool,
    force: bool,
) -> None:
    import judge.ray

    start(address)
    results = [
        judge.ray.grade(
            ds, judge=judge_options, calibration=calibration, strict=strict, force=force, **how
        )
        for ds, how in datasets(paths)
    ]
    write_results(results, output, summary, "grade")
