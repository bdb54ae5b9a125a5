"""`judge sample`: a stratified, seeded sample of cases to label by hand, or a draw to label
for `judge estimate` that records each case's inclusion probability."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from click.core import ParameterSource

from judge._errors import JudgeError
from judge.cli._common import EXIT_UNREADABLE
from judge.cli._paths import refuse_overlaps


@click.command("sample")
@click.argument("cases", type=click.Path(exists=True, dir_okay=False))
@click.option("--n", "size", type=click.IntRange(min=1), default=100, show_default=True)
@click.option(
    "--stratify",
    default="tool,expected_behavior,failure",
    show_default=True,
    help="Comma-separated: tool, expected_behavior, failure, label, meta.KEY, and judge "
    "(uncertain / decided / not judged, from --results).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--results",
    type=click.Path(exists=True, dir_okay=False),
    help="`judge grade` results of CASES: what the judge did with each (for --stratify judge "
    "and --uncertain).",
)
@click.option(
    "--uncertain",
    is_flag=True,
    help="Draw only from the cases the judge abstained on (needs --results): review first.",
)
@click.option(
    "--for-estimate",
    type=click.IntRange(min=1),
    help="Draw this many cases to label for `judge estimate`, recording each one's inclusion "
    "probability: uniformly, or --active; stratified only where --stratify is given (each "
    "case's stratum in meta.stratum, at least two cases per stratum).",
)
@click.option("--active", is_flag=True, help="--for-estimate: favour what the judge is unsure of.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False))
def sample_command(
    cases: str,
    size: int,
    stratify: str,
    seed: int,
    results: str | None,
    uncertain: bool,
    for_estimate: int | None,
    active: bool,
    output: str,
) -> None:
    """Draw a stratified, seeded sample of CASES to label by hand (rare strata kept)."""
    fields = [f.strip() for f in stratify.split(",") if f.strip()]
    from judge.calibrate._sample import draw, judged_states, read_lines

    if uncertain and results is None or active and results is None:
        flag = "--uncertain" if uncertain else "--active"
        click.echo(f"judge sample: {flag} needs --results (judge grade output)", err=True)
        sys.exit(EXIT_UNREADABLE)
    if active and for_estimate is None or uncertain and for_estimate:
        click.echo("judge sample: --active goes with --for-estimate, --uncertain not", err=True)
        sys.exit(EXIT_UNREADABLE)
    refuse_overlaps()
    try:
        if for_estimate:
            return _for_estimate(
                cases, results if active else None, for_estimate, seed, fields, output
            )
        raw, loaded = read_lines(cases)
        judged = judged_states(results) if results else None
        if uncertain and judged is not None:
            kept = [i for i, c in enumerate(loaded) if judged.get(c.id) == "uncertain"]
            raw, loaded = [raw[i] for i in kept], [loaded[i] for i in kept]
        drawn = draw(loaded, size, fields, seed, judged)
    except (JudgeError, ValueError) as exc:
        click.echo(f"judge sample: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    if drawn.left_out:
        click.echo(
            f"judge sample: warning: {drawn.strata} strata for --n {size}: {drawn.left_out} "
            "strata have no case in the sample (raise --n, or stratify by fewer fields)",
            err=True,
        )
    Path(output).write_bytes(b"".join(raw[i] + b"\n" for i in drawn.indices))
    click.echo(f"{len(drawn.indices)} of {len(loaded)} cases -> {output}")


def _for_estimate(
    cases: str, results: str | None, n: int, seed: int, fields: list[str], output: str
) -> None:
    """`--for-estimate`: stratified only where --stratify was given on the command line."""
    from judge.calibrate._for_estimate import sample_for_estimate

    given = click.get_current_context().get_parameter_source("stratify")
    strata = fields if given == ParameterSource.COMMANDLINE else []
    text, note = sample_for_estimate(cases, results, n, seed, strata)
    Path(output).write_bytes(text)
    click.echo(f"{note} -> {output}")


COMMANDS = (sample_command,)
