"""`judge run --user-model`: the options of the simulated user, and the user model reached
once before any run starts (exit 2 when it cannot be)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import click

from judge.cases._case import Case
from judge.cases._files import default_cache_dir
from judge.cli._common import refuser, stack_options
from judge.endpoints._client import JudgeEndpointError, serving
from judge.endpoints._local import LocalModelError
from judge.endpoints._retry import RetryPolicy
from judge.runs._agent_loop import AgentLoop
from judge.runs._preflight import LOCAL, PreflightError, candidate_endpoint

USER_KEY_ENV = "JUDGE_USER_API_KEY"
"""The user model's key, for an endpoint of its own (OpenRouter's: OPENROUTER_API_KEY)."""
_REACH = RetryPolicy(attempts=2, total_seconds=20.0, base_seconds=0.2, max_wait_seconds=2.0)


_refuse = refuser("judge run")

user_options = stack_options(
    click.option(
        "--user-model",
        help="The model that plays the user of the cases with a `user` scenario, after "
        f"each agent reply in text (default: {LOCAL}, the embedded model, when a case has "
        "a scenario).",
    ),
    click.option(
        "--user-base-url",
        help=f"The user model's endpoint (OpenRouter by default; key: {USER_KEY_ENV}, "
        "else OPENROUTER_API_KEY for OpenRouter).",
    ),
    click.option("--user-temperature", type=click.FloatRange(0, 2), default=0.7, show_default=True),
    click.option(
        "--user-seed",
        type=int,
        default=7,
        show_default=True,
        help="The user model's seed for run 1 (run r: seed + r - 1).",
    ),
    click.option(
        "--user-cache-dir",
        type=click.Path(file_okay=False),
        help="Where user turns are cached (default: the judge's cache folder).",
    ),
)
"""The simulated user's options of `judge run`."""


def with_user(
    loop: AgentLoop | None, options: dict[str, Any], cases: Sequence[Case], timeout: float
) -> AgentLoop | None:
    """The agent loop with the simulated user the options and cases ask for (its settings
    in every record's); the options taken out of `options` whatever they ask."""
    user = make_user(options, cases, loop is not None, timeout)
    if user is None or loop is None:
        return loop
    described = {**loop.described, "user": user.user.described()}
    return replace(loop, user=user, described=described)


def make_user(
    options: dict[str, Any], cases: Sequence[Case], agent_run: bool, timeout: float
) -> Any:
    """The simulated user the options and cases ask for (a `UserSimulator`), or None; exit 2
    when it is asked of a run that is no agent run, or its model cannot be reached."""
    model = options.pop("user_model", None)
    base_url = options.pop("user_base_url", None)
    temperature = options.pop("user_temperature", 0.7)
    seed = options.pop("user_seed", 7)
    cache_dir = options.pop("user_cache_dir", None)
    scenarios = any(case.user is not None for case in cases)
    if base_url is not None and model is None:
        _refuse("--user-base-url: name the model it serves with --user-model")
    if model is None and not (scenarios and agent_run):
        if scenarios:  # a single request per case: nobody to answer
            click.echo("judge run: warning: the cases' user scenarios are played only in "
                       "agent runs (--env, --mcp or --agent)", err=True)  # fmt: skip
        return None
    if not agent_run:
        _refuse("a simulated user talks to an agent: add --env, --mcp or --agent")
    if not scenarios:
        _refuse("--user-model: no case has a `user` scenario to play")
    from judge.judging._cache import VerdictCache
    from judge.runs._user import UserModel, UserSimulator

    model = model or LOCAL
    try:
        key_env = USER_KEY_ENV if os.environ.get(USER_KEY_ENV) else None
        endpoint = candidate_endpoint([model], base_url, key_env)
    except PreflightError as exc:
        _refuse(f"--user-model: {exc}")
    try:
        where, concurrency, waits = asyncio.run(serving(endpoint, 4, timeout))
    except LocalModelError as exc:
        _refuse(f"--user-model {LOCAL}: the embedded model cannot start: {exc}")
    if endpoint is not None:
        asyncio.run(_reach(where, model, waits))
    cache = VerdictCache(cache_dir or default_cache_dir() / "user-turns")
    url = None if endpoint is None else endpoint.base_url
    user = UserModel(model, url, temperature, seed, where.model if endpoint is None else None)
    return UserSimulator(user, where, cache, concurrency=concurrency, timeout=waits)


async def _reach(endpoint: Any, model: str, timeout: float) -> None:
    """One short request to the user model: exit 2 when it cannot be answered."""
    from judge.endpoints._candidates import CandidateClient

    client = CandidateClient(endpoint, concurrency=1, timeout=min(timeout, 30.0), policy=_REACH)
    body = {"model": model, "messages": [{"role": "user", "content": "Say OK."}],
            "max_tokens": 2}  # fmt: skip
    try:
        await client.chat(body)
    except (JudgeEndpointError, Exception) as exc:  # noqa: BLE001 - every failure refuses
        _refuse(f"--user-model {model}: the user model cannot be reached at "
                f"{endpoint.base_url}: {exc}")  # fmt: skip
    finally:
        await client.aclose()
