"""`judge check/grade CASES --ray [ADDRESS]`: the same checks and judge on a Ray cluster (a
local one with `--ray` alone), results written as JSON Lines or Parquet in input order."""

from __future__ import annotations

import os
from typing import Any

from judge._errors import InputError
from judge.cases._parquet import is_parquet, output_sink
from judge.checks._summary import Summary


def datasets(paths: tuple[str, ...]) -> list[tuple[Any, dict[str, Any]]]:
    """A Ray Dataset per input, and how to read its rows: the column holding case JSON, or
    the columns of JSON text of a Parquet file."""
    import ray.data

    from judge.ray import parquet_json_columns

    found: list[tuple[Any, dict[str, Any]]] = []
    for path in paths:
        if path == "-":
            raise InputError("--ray reads files (where the cluster can read them), not stdin")
        full = os.path.abspath(path)
        if is_parquet(path):
            found.append(
                (ray.data.read_parquet(full), {"json_columns": parquet_json_columns(full)})
            )
        else:  # JSON Lines as text: each line exactly as written (Arrow would reshape it)
            found.append((ray.data.read_text(full, drop_empty_lines=True), {"column": "text"}))
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


def write_results(outputs: list[Any], output: str | None, summary: Summary) -> None:
    """Each result row's JSON to `output` (JSON Lines or Parquet; standard output without
    one), counted in `summary`."""
    from judge.checks._result import CaseResult  # the models: only once --ray is asked

    with output_sink(output) as sink:
        for dataset in outputs:
            for row in dataset.iter_rows():
                line = row["result"].encode()
                summary.add(CaseResult.model_validate_json(line))
                sink.write(line + b"\n")


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
    write_results(results, output, summary)


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
    write_results(results, output, summary)
