"""`judge local`: the embedded default judge (its model, its runtime, its probe)."""

from __future__ import annotations

import sys

import click

from judge._errors import JudgeError
from judge.cli._common import EXIT_UNREADABLE
from judge.cli._train import probe_status, train_command


@click.group("local")
def local_group() -> None:
    """The embedded default judge (no key, no network)."""


@local_group.command("status")
@click.option("--start", is_flag=True, help="Also start the server, to check that it runs.")
def local_status(start: bool) -> None:
    """Show the model path, its hash check, and whether the server runs."""
    from judge.endpoints import _local

    if start:
        try:
            _local.local_endpoint()
        except JudgeError as exc:
            click.echo(f"judge local status: {exc}", err=True)
    for key, value in _local.status().items():
        click.echo(f"{key}: {value}")
    click.echo(f"probe: {probe_status()}")
    if start:
        _local.stop_local_server()


@local_group.command("setup")
def local_setup() -> None:
    """Assemble and check the model file now (otherwise done on first use)."""
    from judge.endpoints import _local

    try:
        path = _local.assemble_model()
    except JudgeError as exc:
        click.echo(f"judge local setup: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    click.echo(f"model ready: {path} (sha256 {_local.MODEL_SHA256})")


@local_group.command("build")
@click.option("--force", is_flag=True, help="Rebuild even if the runtime already uses this CPU.")
def local_build(force: bool) -> None:
    """Rebuild llama.cpp for this CPU (AVX-512 and the like), about 8 minutes on two cores."""
    from judge.endpoints import _local, _runtime

    try:
        click.echo(_runtime.rebuild(_local.FIX, force=force, say=click.echo))
    except JudgeError as exc:
        click.echo(f"judge local build: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)


local_group.add_command(train_command)


COMMANDS = (local_group,)
