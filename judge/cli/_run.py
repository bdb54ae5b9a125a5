"""Commands of the multi-model runner: `judge run`, `judge compare`, `judge regrade`."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from judge._errors import InputError, JudgeError
from judge.cases._loading import load_cases
from judge.cli._batch import Batching, batch_options, cost_lines, progress_printer
from judge.cli._common import (
    EXIT_ENDPOINT,
    EXIT_UNREADABLE,
    progress_bar,
    require_files,
    stack_options,
)
from judge.cli._judge_options import calibration_options, gate_judge
from judge.cli._matching import (
    agent_trajectory_options,
    regrade_trajectory_options,
    trajectory_from,
)
from judge.endpoints._candidates import CandidateEndpointError
from judge.endpoints._client import JudgeEndpointError
from judge.endpoints._endpoint import OPENROUTER_URL
from judge.judging._grade import Judge

if TYPE_CHECKING:
    from judge.cases._match import Match
    from judge.checks._env import EnvironmentFactory
from judge.runs._agent import load_agent
from judge.runs._compare import compare_runs
from judge.runs._preflight import LOCAL, PreflightError, Requested, candidate_endpoint, preflight
from judge.runs._records import Key, RunRecord, compact, read_runs
from judge.runs._report import print_comparison, render_comparison
from judge.runs._runner import AgentLoop, Grader, Runner, check_resumable

_report_options: list[Callable[..., Any]] = [
    click.option(
        "--format",
        "report_format",
        type=click.Choice(["table", "json"]),
        default="table",
        show_default=True,
        help="How to print the comparison.",
    ),
    click.option(
        "--html",
        type=click.Path(dir_okay=False),
        help="Also write the comparison as an HTML report with a plot per metric.",
    ),
]
_judge_choice: list[Callable[..., Any]] = [
    click.option("--judge", "use_judge", is_flag=True, help="Grade with the LLM judge too."),
    click.option(
        "--judge-model",
        help="The judge's model (default: JUDGE_MODEL, else the embedded judge).",
    ),
    click.option("--judge-base-url", help="The judge's endpoint (default: JUDGE_BASE_URL)."),
    calibration_options,
    click.option(
        "--calls-from-content",
        is_flag=True,
        help="Read tool calls written as JSON text in the reply for every model (always "
        "done for `local`).",
    ),
]


@click.command("run")
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option(
    "--models",
    required=True,
    help="Comma-separated candidate models as the endpoint names them; `local`: the "
    "embedded model.",
)
@click.option("--runs", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--base-url", help=f"The candidates' OpenAI-compatible endpoint [{OPENROUTER_URL}].")
@click.option(
    "--api-key-env",
    metavar="NAME",
    help="The environment variable holding the endpoint's key (default: OPENROUTER_API_KEY "
    "for OpenRouter, none elsewhere).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Append one line per response here as each finishes. Rerun with the same file "
    "to resume it: the (model, case, run) already answered are not asked again (failed "
    "requests are), stored responses without a usable verdict are judged (with --judge), and "
    "a file run with other settings is refused (default: standard output).",
)
@click.option(
    "--reasoning-effort",
    default="low",
    show_default=True,
    help="reasoning.effort for every candidate; `off` sends no reasoning field.",
)
@click.option("--provider", metavar="SLUG", help="Pin one provider: order [SLUG], no fallbacks.")
@click.option(
    "--temperature",
    type=float,
    default=0.0,
    show_default=True,
    help="Sent only when every candidate supports it.",
)
@click.option(
    "--seed",
    type=int,
    help="Run r gets SEED + r - 1; sent only when every candidate supports it.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Requests in flight at once to the candidates, and to the judge (with --judge).",
)
@click.option(
    "--timeout",
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds before one request is abandoned (and retried); the embedded model is "
    "waited for at least 900.",
)
@click.option(
    "--no-preflight",
    is_flag=True,
    help="Skip GET /models (an endpoint without it): tools unchecked, temperature left out.",
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="With --env or --agent: requests per agent run before it stops as StepLimit.",
)
@click.option(
    "--agent",
    metavar="MODULE:CALLABLE",
    help="Run your own agent: `await agent(case, chat)` (or with `env=`), where "
    "`chat(messages, tools=...)` asks the current candidate; it returns the transcript.",
)
@agent_trajectory_options
@stack_options(*_judge_choice)
@stack_options(*_report_options)
@batch_options
@click.option(
    "--price-per-mtok",
    type=float,
    help="With --batch: USD per million tokens, to show the batches' cost online and at "
    "the batch price.",
)
def run_command(
    cases: str,
    models: str,
    runs: int,
    base_url: str | None,
    api_key_env: str | None,
    output: str | None,
    reasoning_effort: str,
    provider: str | None,
    temperature: float,
    seed: int | None,
    concurrency: int,
    timeout: float,
    no_preflight: bool,
    max_steps: int,
    agent: str | None,
    report_format: str,
    html: str | None,
    price_per_mtok: float | None,
    **judging: Any,
) -> None:
    """Run every model of --models on CASES (--runs times each), with the same settings for
    all, grade every response, and compare the models. With --batch, through the endpoint's
    Batch API (about half the price; a rerun resumes the same batches).

    With --env (the built-in loop) or --agent, each run is an agent run of several steps: the
    candidate's calls are executed in a fresh environment and answered, until it answers in
    text or --max-steps is reached; the whole transcript is graded."""
    require_files((cases,))
    batching = Batching.take(judging)
    env_spec = judging["env"]
    match, factory = _trajectory(judging, "run")
    loop = _loop(env_spec, factory, agent, max_steps)
    given = click.get_current_context().get_parameter_source("max_steps")
    if loop is None and given == click.core.ParameterSource.COMMANDLINE:
        click.echo("judge run: --max-steps is for agent runs: add --env or --agent", err=True)
        sys.exit(EXIT_UNREADABLE)
    names = list(dict.fromkeys(m.strip() for m in models.split(",") if m.strip()))
    if not names:
        raise click.BadParameter("name at least one model", param_hint="--models")
    if batching is not None:
        refused = (
            "--batch-file and --batch-results are for judge grade"
            if batching.file or batching.results
            else "a batch holds single requests: agent runs (--env, --agent) take several steps"
            if loop is not None
            else "the embedded model has no Batch API"
            if LOCAL in names
            else "--batch keeps its state beside the runs file: give -o FILE"
            if output is None
            else None
        )
        if refused is not None:
            click.echo(f"judge run: {refused}", err=True)
            sys.exit(EXIT_UNREADABLE)
    loaded = _load(cases, "run")
    try:
        endpoint = candidate_endpoint(names, base_url, api_key_env)
    except PreflightError as exc:
        click.echo(f"judge run: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    requested = Requested(
        reasoning_effort=None if reasoning_effort.lower() == "off" else reasoning_effort,
        provider=provider,
        temperature=temperature,
        seed=seed,
    )
    key_hint = api_key_env or "OPENROUTER_API_KEY"
    resuming = output is not None and os.path.exists(output)
    done = {r.key: r for r in _read(output, "run")} if output and resuming else {}
    judge = _judge(
        judging, concurrency, "run", match=match, env=factory, agent_runs=loop is not None
    )

    async def go() -> list[RunRecord]:
        agreed = await preflight(
            names,
            requested,
            endpoint=endpoint,
            check=not no_preflight,
            timeout=timeout,
            key_hint=key_hint,
        )
        for warning in agreed.warnings:
            click.echo(f"judge run: warning: {warning}", err=True)
        check_resumable(done.values(), agreed, output or "", loop)
        if output and resuming:
            compact(output, done.values())  # drop a line cut short, so appending stays clean
        runner = Runner(
            agreed,
            endpoint=endpoint,
            grader=Grader(judge, text_calls=_text_calls(judging), match=match, env=factory),
            concurrency=concurrency,
            timeout=timeout,
            key_hint=key_hint,
            loop=loop,
        )
        async with runner:
            plan = runner.plan(loaded, names, runs, done)
            if batching is None:
                return await _store(
                    output, done, plan.total, "run", lambda on: runner.run(plan, on_record=on)
                )

            async def batched(on: Callable[[RunRecord], None]) -> None:
                state = await runner.run_batched(
                    plan,
                    on_record=on,
                    state_path=f"{output}.batch.json",
                    options=batching.options(),
                    discount=batching.discount,
                    on_progress=progress_printer("run"),
                )
                spent.append(state)

            return await _store(output, done, plan.total, "run", batched)

    spent: list[Any] = []
    records = _finish(_closing(go(), judge), "run")
    if spent and spent[0].batches:
        lines = cost_lines(spent[0], price_per_mtok, batching.discount if batching else 0.5)
        click.echo("\n".join(lines), err=True)
    _report(records, report_format, html, sys.stdout if output else sys.stderr)


@click.command("compare")
@click.argument("runs_file", metavar="RUNS", type=click.Path(dir_okay=False))
@stack_options(*_report_options)
def compare_command(runs_file: str, report_format: str, html: str | None) -> None:
    """Compare the models of a runs file (from `judge run`): pass rates with 95% intervals,
    the breakdown, pass^k / pass@k, spend, latency and paired differences."""
    require_files((runs_file,))
    _report(_read(runs_file, "compare"), report_format, html, sys.stdout)


@click.command("regrade")
@click.argument("runs_file", metavar="RUNS", type=click.Path(dir_okay=False))
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the regraded runs file here, overwritten (default: RUNS, rewritten in place).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Judge requests in flight at once.",
)
@regrade_trajectory_options
@stack_options(*_judge_choice)
@stack_options(*_report_options)
def regrade_command(
    runs_file: str,
    cases: str,
    output: str | None,
    concurrency: int,
    report_format: str,
    html: str | None,
    **judging: Any,
) -> None:
    """Grade the stored responses of RUNS again against CASES (after fixing an expected call,
    or with --judge), without asking any candidate again."""
    require_files((runs_file, cases))
    loaded = {case.id: case for case in _load(cases, "regrade")}
    records = _read(runs_file, "regrade")
    missing = sorted({r.case_id for r in records} - loaded.keys())
    if missing:
        click.echo(
            f"judge regrade: kept as they were, not in {cases}: {', '.join(missing)}", err=True
        )
    match, factory = _trajectory(judging, "regrade")
    agent_runs = any(r.transcript is not None for r in records)
    judge = _judge(judging, concurrency, "regrade", match=match, env=factory, agent_runs=agent_runs)
    grader = Grader(judge, text_calls=_text_calls(judging), match=match, env=factory)
    todo = [(r, loaded[r.case_id]) for r in records if r.case_id in loaded and r.error is None]
    target = output or runs_file
    compact(target, records)  # the regraded records are appended: a later line replaces one

    async def go() -> list[RunRecord]:
        return await _store(
            target,
            {},
            len(todo),
            "regrade",
            lambda on: grader.grade_all(todo, on_record=on, concurrency=concurrency),
        )

    graded = _finish(_closing(go(), judge), "regrade")
    _report(graded, report_format, html, sys.stdout)


COMMANDS = (run_command, compare_command, regrade_command)


def _read(path: str, command: str) -> list[RunRecord]:
    """The records of a runs file; exits 2 when it is not one (or, to compare or regrade,
    holds none)."""
    try:
        records = read_runs(path)
    except InputError as exc:
        click.echo(f"judge {command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    if not records and command != "run":
        click.echo(f"judge {command}: {path}: no run records", err=True)
        sys.exit(EXIT_UNREADABLE)
    return records


def _load(path: str, command: str) -> list[Any]:
    try:
        loaded = load_cases(path)
    except InputError as exc:
        click.echo(f"judge {command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    for error in loaded.errors:
        click.echo(f"judge {command}: skipped {error}", err=True)
    counts = Counter(case.id for case in loaded)
    twice = sorted(case_id for case_id, n in counts.items() if n > 1)
    if twice:
        click.echo(
            f"judge {command}: {path}: case ids must be unique: {', '.join(twice)}", err=True
        )
        sys.exit(EXIT_UNREADABLE)
    if not loaded:
        click.echo(f"judge {command}: {path}: no case to run", err=True)
        sys.exit(EXIT_UNREADABLE)
    return list(loaded)


def _trajectory(options: dict[str, Any], command: str) -> tuple[Match | None, Any]:
    """The --match settings and the --env factory (exits 2 when one cannot be loaded)."""
    try:
        return trajectory_from(options)
    except ValueError as exc:
        click.echo(f"judge {command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)


def _loop(
    env: str | None, factory: EnvironmentFactory | None, agent: str | None, max_steps: int
) -> AgentLoop | None:
    """The agent loop the options ask for, or None for one request per job."""
    if factory is None and agent is None:
        return None
    loaded = None
    if agent is not None:
        try:
            loaded = load_agent(agent)
        except ValueError as exc:
            click.echo(f"judge run: --agent: {exc}", err=True)
            sys.exit(EXIT_UNREADABLE)
    described: dict[str, Any] = {"max_steps": max_steps, "env": env, "agent": agent}
    return AgentLoop(env=factory, agent=loaded, max_steps=max_steps, described=described)


def _judge(
    options: dict[str, Any],
    concurrency: int,
    command: str,
    *,
    match: Match | None = None,
    env: EnvironmentFactory | None = None,
    agent_runs: bool = False,
) -> Judge | None:
    """The judge asked for (--judge), past the calibration gate when a record is given. It
    judges the answers responses end with, and agent runs' whole paths (the trajectory
    rubric)."""
    calibration = options["calibration"]
    if not options["use_judge"]:
        if calibration:
            click.echo(f"judge {command}: --calibration gates the judge: add --judge", err=True)
            sys.exit(EXIT_UNREADABLE)
        return None
    model = options["judge_model"]
    base_url = options["judge_base_url"]
    if not (model or base_url or os.environ.get("JUDGE_MODEL") or os.environ.get("JUDGE_BASE_URL")):
        model = "local"  # never a paid judge picked silently from the candidates' key
    try:
        judge = Judge(
            model=model,
            base_url=base_url,
            concurrency=concurrency,
            match=match,
            env=env,
            trajectory=agent_runs,
            answers=True,
        )
    except JudgeError as exc:
        click.echo(f"judge {command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    if calibration:
        judge.trusted = gate_judge(
            judge, calibration, strict=options["strict"], force=options["force"], command=command
        )
    return judge


def _text_calls(options: dict[str, Any]) -> frozenset[str] | None:
    return None if options["calls_from_content"] else frozenset({LOCAL})


async def _store(
    output: str | None,
    done: dict[Key, RunRecord],
    total: int,
    label: str,
    start: Callable[[Callable[[RunRecord], None]], Awaitable[None]],
) -> list[RunRecord]:
    """Append each record as it is finished (flushed: a finished response is never lost);
    then, finished or stopped, compact the file (a later line replaces an earlier one)."""
    kept = dict(done)
    sink: IO[bytes] = open(output, "ab") if output else sys.stdout.buffer  # noqa: SIM115
    try:
        with progress_bar(label, total, sys.stderr.isatty()) as step:

            def on_record(record: RunRecord) -> None:
                sink.write(record.line())
                sink.flush()
                kept[record.key] = record
                step(1)

            await start(on_record)
    finally:
        if output:
            sink.close()
            kept = {r.key: r for r in read_runs(output)}
            compact(output, kept.values())
    return list(kept.values())


async def _closing(work: Awaitable[list[RunRecord]], judge: Judge | None) -> list[RunRecord]:
    try:
        return await work
    finally:
        if judge is not None:
            await judge.aclose()


def _finish(work: Coroutine[Any, Any, list[RunRecord]], command: str) -> list[RunRecord]:
    try:
        return asyncio.run(work)
    except PreflightError as exc:
        click.echo(f"judge {command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    except JudgeEndpointError as exc:
        stored = (
            ""
            if isinstance(exc, CandidateEndpointError)
            else "\nthe finished records are stored, checked but not judged where the judge "
            f"refused: run `judge {command}` again with --judge to judge them"
        )
        click.echo(f"judge {command}: {exc}{stored}", err=True)
        sys.exit(EXIT_ENDPOINT)


def _report(records: list[RunRecord], fmt: str, html: str | None, stream: IO[str]) -> None:
    comparison = compare_runs(records)
    if fmt == "json":
        stream.write(json.dumps(comparison.to_dict(), indent=2) + "\n")
    else:
        print_comparison(comparison, stream)
    if html:
        Path(html).write_text(render_comparison(comparison), encoding="utf-8")
