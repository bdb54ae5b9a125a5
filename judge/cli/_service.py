"""Commands for other harnesses: `judge serve` (the HTTP service) and `judge schema` (the
JSON Schemas of the formats)."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import click

from judge.cli._common import EXIT_UNREADABLE
from judge.cli._judge_options import (
    abstention_options,
    calibration_options,
    judge_for,
    judge_options,
)
from judge.cli._matching import (
    from_traces_option,
    judge_answers_option,
    judge_trajectory_option,
    trajectory_options,
)
from judge.service._schema import SCHEMA_NAMES, SchemaName, json_schema

_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(ctx: click.Context, param: click.Parameter, value: str | int) -> int:
    """Bytes from `1048576`, `512K`, `32M`, `32MiB`, `1G`."""
    found = _SIZE.match(str(value))
    if found is None:
        raise click.BadParameter(f"{value!r} is not a size (e.g. 32M or 1048576)")
    size = int(found[1]) * _UNITS[(found[2] or "").lower()[:1]]
    if size < 1:
        raise click.BadParameter("must be at least 1 byte")
    return size


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@judge_options
@calibration_options
@abstention_options
@click.option(
    "--max-request-bytes",
    callback=parse_size,
    default="32M",
    show_default=True,
    help="Larger request bodies get 413.",
)
@click.option(
    "--max-cases",
    type=click.IntRange(min=1),
    default=10_000,
    show_default=True,
    help="Batches with more cases get 422.",
)
@judge_trajectory_option
@judge_answers_option
@trajectory_options
@from_traces_option
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="info",
    show_default=True,
)
def serve_command(
    host: str,
    port: int,
    calibration: str | None,
    strict: bool,
    force: bool,
    max_request_bytes: int,
    max_cases: int,
    log_level: str,
    from_format: str | None,
    **options: Any,
) -> None:
    """Serve POST /v1/check and /v1/grade (JSON array or NDJSON of cases; results as the CLI
    writes them), GET /v1/rubrics, /healthz and the OpenAPI docs at /docs.

    Set JUDGE_SERVICE_TOKEN to require `Authorization: Bearer <token>` (not on /healthz)."""
    import uvicorn

    from judge.service._app import create_app
    from judge.service._body import Limits
    from judge.service._token import service_token, token_refusal

    if (why := token_refusal(host, service_token(), required=False)) is not None:
        click.echo(f"judge serve: {why}", err=True)
        sys.exit(EXIT_UNREADABLE)
    judge = judge_for("serve", options, calibration=calibration, strict=strict, force=force)
    app = create_app(
        judge=judge,
        limits=Limits(max_request_bytes=max_request_bytes, max_cases=max_cases),
        match=judge.match,
        env=judge.env,
        traces=from_format,
    )
    uvicorn.run(app, host=host, port=port, log_level=log_level)


@click.command("schema")
@click.argument("name", type=click.Choice(SCHEMA_NAMES))
def schema_command(name: SchemaName) -> None:
    """Print the JSON Schema (Draft 2020-12) of a format: `case` (one input line), `result`
    (one line of `judge check` / `judge grade` output) or `calibration` (the record)."""
    click.echo(json.dumps(json_schema(name), indent=2))


COMMANDS = (serve_command, schema_command)
