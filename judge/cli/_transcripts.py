"""`judge transcripts`: the agent runs of a runs file as cases, one per run."""

from __future__ import annotations

import click

from judge.cases._files import write_atomically
from judge.cases._json import dumps
from judge.cli._common import refuser
from judge.cli._paths import refuse_overlaps
from judge.cli._runs import load_run_cases, read_records

_refuse = refuser("judge transcripts")


@click.command("transcripts")
@click.argument("runs_file", type=click.Path(dir_okay=False))
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
def transcripts_command(runs_file: str, cases: str, output: str) -> None:
    """Write the agent runs of RUNS_FILE (from `judge run --env/--mcp/--agent`, with or
    without a simulated user) as cases, one per run (not the failed runs, nor those whose
    simulated user broke its scenario): the whole conversation, the last reply as the
    response, CASES' expectations, tools and scenario kept, the run's outcome in meta.run
    (ids CASE::MODEL::RUN); CASES' labels are not carried over (they judged the case's own
    response, not the run's). `judge check`, `judge grade`, `judge review`, labels and
    `judge estimate` read them as any cases."""
    from judge.runs._transcripts import as_case

    refuse_overlaps()
    records = read_records(runs_file, "transcripts")
    by_id = {case.id: case for case in load_run_cases(cases, "transcripts")}
    missing = sorted({r.case_id for r in records} - by_id.keys())
    if missing:
        _refuse(f"{runs_file}: runs of cases {', '.join(missing[:5])} are not in {cases}")
    found = [as_case(r, by_id[r.case_id]) for r in records]
    written = [case for case in found if case is not None]
    if not written:
        _refuse(f"{runs_file}: no agent run with a transcript to write")
    try:
        write_atomically(output, b"".join(dumps(case) + b"\n" for case in written))
    except OSError as exc:
        _refuse(f"{output}: cannot write: {exc.strerror or exc}")
    skipped = len(found) - len(written)
    said = f" ({skipped} runs left out: failed, no transcript, or user_error)" if skipped else ""
    click.echo(f"judge transcripts: {len(written)} cases written to {output}{said}", err=True)


COMMANDS = (transcripts_command,)
