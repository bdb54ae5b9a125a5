"""Commands for other harnesses: `judge serve` (the HTTP service) and `judge schema` (the
JSON Schemas of the formats)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from judge.cli._common import EXIT_UNREADABLE, parse_size, shared_tools, tools_option
from judge.cli._judge_options import (
    abstention_options,
    calibration_options,
    judge_for,
    judge_options,
)
from judge.cli._matching import (
    from_traces_option,
    given_trace_options,
    judge_answers_option,
    judge_trajectory_option,
    trajectory_options,
)
from judge.service._schema import SCHEMA_NAMES, SchemaName, json_schema

allow_host_option = click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Without JUDGE_SERVICE_TOKEN, answer requests addressed to NAME too (a name a proxy "
    "forwards as Host); loopback names always are. Repeat for more.",
)


@click.command("serve")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; any but loopback needs JUDGE_SERVICE_TOKEN.",
)
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
@tools_option
@from_traces_option
@allow_host_option
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
    tools_file: str | None,
    allow_hosts: tuple[str, ...],
    **options: Any,
) -> None:
    """Serve POST /v1/check and /v1/grade (JSON array or NDJSON of cases; results as the CLI
    writes them), GET /v1/rubrics, /healthz and the OpenAPI docs at /docs.

    Set JUDGE_SERVICE_TOKEN to require `Authorization: Bearer <token>` (not on /healthz);
    without it, only loopback addresses are served, and only requests addressed to a loopback
    name (or --allow-host) are answered."""
    import uvicorn

    from judge.service._app import create_app

    token = _token_for(host)
    tools = shared_tools(tools_file, "serve")
    judge = judge_for("serve", options, calibration=calibration, strict=strict, force=force)
    app = create_app(
        judge=judge,
        limits=_limits(max_request_bytes, max_cases),
        match=judge.match,
        env=judge.env,
        traces=from_format,
        tools=tools,
        token=token,
        hosts=allow_hosts,
    )
    uvicorn.run(app, host=host, port=port, log_level=log_level)


def _token_for(host: str) -> str | None:
    """`JUDGE_SERVICE_TOKEN`; exit 2 where `host` is beyond loopback and the token is missing
    or short (as `judge review` refuses)."""
    from judge.service._token import service_token, token_refusal

    token = service_token()
    if (why := token_refusal(host, token)) is not None:
        if token is None:
            why += " so that only those who hold it can check and grade on it"
        click.echo(f"judge serve: {why}", err=True)
        sys.exit(EXIT_UNREADABLE)
    return token


def _limits(max_request_bytes: int, max_cases: int) -> Any:
    """What one request may hold, and how its trace data is read (`--from`)."""
    from judge.service._body import Limits

    given = given_trace_options()
    return Limits(
        max_request_bytes=max_request_bytes,
        max_cases=max_cases,
        max_unpacked_bytes=given.get("max_unpacked"),
        encoding_errors=given.get("encoding_errors") or "strict",
    )


@click.command("schema")
@click.argument("name", type=click.Choice(SCHEMA_NAMES))
def schema_command(name: SchemaName) -> None:
    """Print the JSON Schema (Draft 2020-12) of a format: `case` (one input line), `result`
    (one line of `judge check` / `judge grade` output), `run` (one line of a `judge run`
    runs file) or `calibration` (the record)."""
    click.echo(json.dumps(json_schema(name), indent=2))


COMMANDS = (serve_command, schema_command)
