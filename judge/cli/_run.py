"""`judge run`: the same cases, with the same settings, sent to several candidate models."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from judge.checks._mcp import McpServer
from judge.cli._batch import Batching, batch_options, cost_lines, progress_printer
from judge.cli._common import (
    EXIT_UNREADABLE,
    fresh_option,
    refuser,
    require_files,
    shared_tools,
    stack_options,
    tools_option,
)
from judge.cli._matching import (
    agent_trajectory_options,
)
from judge.cli._paths import refuse_overlaps
from judge.cli._run_user import user_options, with_user
from judge.cli._runs import (
    JUDGE_CHOICE,
    REPORT_OPTIONS,
    calls_in_text,
    closing_judge,
    finish_run,
    load_run_cases,
    read_records,
    report_runs,
    run_judge,
    server_tools,
    store_records,
    trajectory_or_exit,
)
from judge.cli._runs_labels import Gate, refuse_before_run
from judge.endpoints._endpoint import OPENROUTER_URL
from judge.judging._resume import resumed_line
from judge.runs._agent import load_agent
from judge.runs._comparable import nothing_to_compare
from judge.runs._preflight import LOCAL, PreflightError, Requested, candidate_endpoint, preflight
from judge.runs._records import RunRecord, compact
from judge.runs._runner import AgentLoop, Grader, Runner, check_resumable

if TYPE_CHECKING:
    from judge.checks._env import EnvironmentFactory
    from judge.endpoints._batch import BatchState
    from judge.endpoints._endpoint import Endpoint
    from judge.runs._records import Key
    from judge.runs._runner import OnRecord, Plan

_refuse = refuser("judge run")


_run_options = stack_options(
    click.option(
        "--models",
        required=True,
        help="Comma-separated candidate models as the endpoint names them; `local`: the "
        "embedded model; MODEL@PROVIDER: that model served by that provider only (OpenRouter), "
        "to compare providers.",
    ),
    click.option(
        "--runs",
        "--repeats",
        "runs",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="Run every case this many times per model (pass^k over them).",
    ),
    click.option(
        "--base-url", help=f"The candidates' OpenAI-compatible endpoint [{OPENROUTER_URL}]."
    ),
    click.option(
        "--api-key-env",
        metavar="NAME",
        help="The environment variable holding the endpoint's key (default: OPENROUTER_API_KEY "
        "for OpenRouter, none elsewhere).",
    ),
    click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False),
        help="Append one line per response here as each finishes. Rerun with the same file "
        "to resume it: the (model, case, run) already answered are not asked again while "
        "their case is unchanged (its content hash; failed requests and changed cases are, "
        "the new line replacing the old), stored responses without a usable verdict are "
        "judged (with --judge), and a file run with other settings is refused (default: "
        "standard output).",
    ),
    fresh_option,
    click.option(
        "--reasoning-effort",
        default="low",
        show_default=True,
        help="reasoning.effort for every candidate; `off` sends no reasoning field.",
    ),
    click.option(
        "--provider", metavar="SLUG", help="Pin one provider: order [SLUG], no fallbacks."
    ),
    click.option(
        "--temperature",
        type=float,
        default=0.0,
        show_default=True,
        help="Sent only when every candidate supports it.",
    ),
    click.option(
        "--seed",
        type=int,
        help="Run r gets SEED + r - 1; sent only when every candidate supports it.",
    ),
    click.option(
        "--concurrency",
        type=click.IntRange(min=1),
        default=8,
        show_default=True,
        help="Requests in flight at once to the candidates, and to the judge (with --judge).",
    ),
    click.option(
        "--timeout",
        type=float,
        default=120.0,
        show_default=True,
        help="Seconds before one request is abandoned (and retried); the embedded model is "
        "waited for at least 900.",
    ),
    click.option(
        "--no-preflight",
        is_flag=True,
        help="Skip GET /models (an endpoint without it): tools unchecked, temperature left out.",
    ),
    click.option(
        "--max-steps",
        type=click.IntRange(min=1),
        default=8,
        show_default=True,
        help="With --env or --agent: requests per agent run before it stops as StepLimit.",
    ),
    click.option(
        "--agent",
        metavar="MODULE:CALLABLE",
        help="Run your own agent: `await agent(case, chat)` (or with `env=`), where "
        "`chat(messages, tools=...)` asks the current candidate; it returns the transcript.",
    ),
    agent_trajectory_options,
    tools_option,
    stack_options(*JUDGE_CHOICE),
    stack_options(*REPORT_OPTIONS),
    batch_options,
    click.option(
        "--price-per-mtok",
        type=float,
        help="With --batch: USD per million tokens, to show the batches' cost online and at "
        "the batch price.",
    ),
    user_options,
)


@click.command("run")
@click.argument("cases", type=click.Path(dir_okay=False))
@_run_options
def run_command(
    cases: str,
    models: str,
    runs: int,
    base_url: str | None,
    api_key_env: str | None,
    output: str | None,
    fresh: bool,
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
    fail_if_worse: str | None,
    metric: str,
    labels: str | None,
    assume_random: bool,
    price_per_mtok: float | None,
    tools_file: str | None,
    **judging: Any,
) -> None:
    """Run every model of --models on CASES (--runs times each), with the same settings for
    all, grade every response, and compare the models. With --batch, through the endpoint's
    Batch API (about half the price; a rerun resumes the same batches).

    With --env (the built-in loop) or --agent, each run is an agent run of several steps: the
    candidate's calls are executed in a fresh environment and answered, until it answers in
    text or --max-steps is reached; the whole transcript is graded."""
    require_files((cases,))
    refuse_overlaps()
    batching = Batching.take(judging)
    env_spec = judging["env"]  # before the trajectory options are taken out of `judging`
    match, factory = trajectory_or_exit(judging, "run", agent_runs=True)
    loop = _loop(env_spec, factory, agent, max_steps)
    _refuse_max_steps(loop)
    names = list(dict.fromkeys(m.strip() for m in models.split(",") if m.strip()))
    if not names:
        raise click.BadParameter("name at least one model", param_hint="--models")
    if batching is not None:
        _refuse_batching(batching, names, loop, output)
    loaded = load_run_cases(cases, "run", shared_tools(tools_file, "run"))
    loaded = server_tools(factory, loaded, "run")
    gate = Gate("run", fail_if_worse, metric, labels, assume_random)
    refuse_before_run(gate, dict.fromkeys(names, {c.id for c in loaded}))
    if loop is not None:  # an agent run grades something, or is refused before any request
        nothing = nothing_to_compare(loaded, match, judged=bool(judging.get("use_judge")))
        if nothing is not None:
            _refuse(nothing)
    loop = with_user(loop, judging, loaded, timeout)
    endpoint = _endpoint(names, base_url, api_key_env)
    requested = Requested(
        reasoning_effort=None if reasoning_effort.lower() == "off" else reasoning_effort,
        provider=provider,
        temperature=temperature,
        seed=seed,
    )
    resuming = output is not None and os.path.exists(output) and not fresh
    done = {r.key: r for r in read_records(output, "run")} if output and resuming else {}
    run = _Run(names, requested, endpoint, preflight=not no_preflight, timeout=timeout,
               key_hint=api_key_env or "OPENROUTER_API_KEY", concurrency=concurrency,
               loop=loop, output=output, resuming=resuming, done=done, fresh=fresh)  # fmt: skip
    compared = None if isinstance(factory, McpServer) and not factory.fresh else factory
    judge = run_judge(
        judging, concurrency, "run", match=match, env=compared, agent_runs=loop is not None
    )
    grader = Grader(judge, text_calls=calls_in_text(judging), match=match, env=compared)
    records = finish_run(closing_judge(run.go(loaded, runs, grader, batching), judge), "run")
    if run.spent and run.spent[0].batches:
        lines = cost_lines(run.spent[0], price_per_mtok, batching.discount if batching else 0.5)
        click.echo("\n".join(lines), err=True)
    report_runs(records, report_format, html, sys.stdout if output else sys.stderr, gate)


def _refuse_max_steps(loop: AgentLoop | None) -> None:
    """Exit 2 for a --max-steps given on the command line to a run that is no agent run."""
    given = click.get_current_context().get_parameter_source("max_steps")
    if loop is None and given == click.core.ParameterSource.COMMANDLINE:
        _refuse("--max-steps is for agent runs: add --env or --agent")


def _refuse_batching(
    batching: Batching, names: list[str], loop: AgentLoop | None, output: str | None
) -> None:
    """Exit 2 when `--batch` cannot run with the other options."""
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
        _refuse(refused)


def _endpoint(names: list[str], base_url: str | None, api_key_env: str | None) -> Endpoint | None:
    """The endpoint of the hosted candidates (exit 2 when its key is missing)."""
    try:
        return candidate_endpoint(names, base_url, api_key_env)
    except PreflightError as exc:
        _refuse(str(exc))


@dataclass
class _Run:
    """What `judge run` asks of the candidates, and where it stores their records."""

    names: list[str]
    requested: Requested
    endpoint: Endpoint | None
    preflight: bool
    """Read the endpoint's GET /models (not --no-preflight)."""
    timeout: float
    key_hint: str
    concurrency: int
    loop: AgentLoop | None
    output: str | None
    resuming: bool
    """`output` exists already: the run resumes it."""
    done: dict[Key, RunRecord]
    """The records `output` holds, by key."""
    fresh: bool = False
    """--fresh: `output` and its batches' state are replaced, none of it resumed."""
    spent: list[BatchState] = field(default_factory=list)
    """With --batch: the batches' state, for their cost."""

    async def go(
        self, cases: list[Any], runs: int, grader: Grader, batching: Batching | None
    ) -> list[RunRecord]:
        """The settings agreed with the endpoint, then every record asked (or read back from
        the batches), stored as it finishes."""
        agreed = await preflight(
            self.names,
            self.requested,
            endpoint=self.endpoint,
            check=self.preflight,
            timeout=self.timeout,
            key_hint=self.key_hint,
        )
        for warning in agreed.warnings:
            click.echo(f"judge run: warning: {warning}", err=True)
        check_resumable(self.done.values(), agreed, self.output or "", self.loop)
        if self.output and (self.resuming or (self.fresh and os.path.exists(self.output))):
            compact(self.output, self.done.values())  # drop a line cut short: appends stay clean
        if self.output and self.fresh:  # its answered requests would be recorded by no one
            Path(f"{self.output}.batch.json").unlink(missing_ok=True)
        runner = Runner(
            agreed,
            endpoint=self.endpoint,
            grader=grader,
            concurrency=self.concurrency,
            timeout=self.timeout,
            key_hint=self.key_hint,
            loop=self.loop,
        )
        async with runner:
            plan = runner.plan(cases, self.names, runs, self.done)
            if self.resuming:
                said = resumed_line(plan.kept, len(self.done), plan.changed, "records")
                click.echo(f"judge run: {said}", err=True)
            start = (
                self._batched(runner, plan, batching)
                if batching is not None
                else lambda on: runner.run(plan, on_record=on)
            )
            return await store_records(self.output, self.done, plan.total, "run", start)

    def _batched(
        self, runner: Runner, plan: Plan, batching: Batching
    ) -> Callable[[OnRecord], Awaitable[None]]:
        """`--batch`: the run through the endpoint's Batch API, its state kept beside the
        runs file."""

        async def batched(on: OnRecord) -> None:
            state = await runner.run_batched(
                plan,
                on_record=on,
                state_path=f"{self.output}.batch.json",
                options=batching.options(),
                discount=batching.discount,
                on_progress=progress_printer("run"),
            )
            self.spent.append(state)

        return batched


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
    if isinstance(factory, McpServer):
        described |= {
            "mcp": factory.described(),
            "mcp_state": factory.state_uri,
            "mcp_timeout": factory.timeout,
            "mcp_start_timeout": factory.start_timeout,
        }
        if factory.env:  # the names only: a value may be a key
            described["mcp_env"] = sorted(factory.env)
    return AgentLoop(env=factory, agent=loaded, max_steps=max_steps, described=described)


COMMANDS = (run_command,)
