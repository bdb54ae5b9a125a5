"""The command-line options that set how strictly trajectories are matched (the models load
only when one is given)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, get_args

import click

from judge.cases._form import ARGS_MODES, MATCH_MODES
from judge.cli._common import parse_size, stack_options

if TYPE_CHECKING:
    from judge.cases._match import Match
    from judge.checks._env import EnvironmentFactory
    from judge.traces._documents import Reading

judge_trajectory_option = click.option(
    "--trajectory",
    is_flag=True,
    help="Also judge each case's whole path of calls (needless calls, a write without "
    "confirmation, steps in the wrong order) with the trajectory rubric.",
)

judge_answers_option = click.option(
    "--answers",
    is_flag=True,
    help="Also judge the text a response ends with (when it ends in text) with the answer "
    "rubric: does it answer the request, with only what the conversation and the tool results "
    "support, claiming no action that did not happen (an optional expected_answer is given "
    "as a reference).",
)

_READING = "judge.trace_reading"  # where the trace options are kept in the click context


def _keep(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Keep a trace option in the context, where `trace_reading` finds it."""
    ctx.meta.setdefault(_READING, {})[param.name] = value
    return value


trace_reading_options = stack_options(
    click.option(
        "--encoding-errors",
        type=click.Choice(("strict", "replace")),
        default="strict",
        show_default=True,
        expose_value=False,
        callback=_keep,
        help="Trace files: a record with bytes that are not UTF-8 is skipped with its byte "
        "offset (strict), or read with U+FFFD in their place (replace).",
    ),
    click.option(
        "--max-unpacked",
        metavar="SIZE",
        expose_value=False,
        callback=lambda ctx, param, value: _keep(ctx, param, parse_size(ctx, param, value)),
        help="Trace files: the bytes the compressed members of one log (Inspect .eval "
        "samples) may unpack to in all (256M; judge serve: --max-request-bytes); a member "
        "past it is skipped with the reason, and the members after it. What one record may "
        "take parsed (64 bytes a JSON value) is bounded by it too: 4 times SIZE an Inspect "
        "member, 16 times SIZE a record of another trace file.",
    ),
)


def given_trace_options() -> dict[str, Any]:
    """The trace options given to this command (`encoding_errors`, `max_unpacked`), those
    left out absent."""
    ctx = click.get_current_context(silent=True)
    given = ctx.meta.get(_READING, {}) if ctx is not None else {}
    return {k: v for k, v in given.items() if v is not None}


def trace_reading() -> Reading:
    """How this command reads trace files, from its options."""
    from judge.traces._documents import MAX_UNPACKED, Reading

    given = given_trace_options()
    return Reading(
        errors=given.get("encoding_errors", "strict"),
        max_unpacked=given.get("max_unpacked", MAX_UNPACKED),
    )


from_traces_option = stack_options(
    click.option(
        "--from",
        "from_format",
        type=click.Choice(("otel", "langsmith", "inspect", "openai")),
        help="The inputs are trace files in this format, converted as `judge import` "
        "converts them (one case per LLM call).",
    ),
    trace_reading_options,
)


_matching_options = (
    click.option(
        "--match",
        type=click.Choice(MATCH_MODES),
        help="Grade every call of the trajectory (assistant turns and response) against "
        "expected_calls: strict (same calls, same order; one message's parallel calls in any "
        "order), unordered (same calls), subset (no call outside the reference), superset "
        "(every reference call made), in_order (every reference call made, in order, other "
        "calls between). Under every mode, expected_calls [] allows no call. A case's own "
        "`match` wins.",
    ),
    click.option(
        "--args-match",
        type=click.Choice(ARGS_MODES),
        help="How each call's arguments must match its reference call (default with "
        "--match: exact; without it: every expected argument, extras left to the schema).",
    ),
    click.option(
        "--override",
        "overrides",
        multiple=True,
        metavar="TOOL=SPEC",
        help="Per-tool argument matching: TOOL=MODE, TOOL=PATH,PATH (only these "
        "arguments; names or JSON pointers) or TOOL=module:function (a predicate "
        "f(candidate_args, reference_args) returning True or False; any other answer fails "
        "the call). Repeatable.",
    ),
    click.option(
        "--ignore-tool",
        "ignore_tools",
        multiple=True,
        metavar="NAME",
        help="Leave calls to this tool out of the comparison (read-only tools, say). Repeatable.",
    ),
    click.option(
        "--values",
        "value_defaults",
        multiple=True,
        metavar="KEY=HOW",
        help="How literal expected values compare: strings=exact|casefold|bfcl, "
        "numbers=json|strict (strict: an expected integer takes only an integer); "
        "dates=dmy|mdy: how a $date matcher reads 01/05/2024. "
        "Comma-separated or repeated; a case's own match.values wins; matchers such as "
        '{"$string": "Paris", "case": false} say it for themselves.',
    ),
)

_REPLAY_HELP = (
    "Replay the reference and the candidate's calls into fresh environments made by this "
    "factory (or path/to/file.py:factory) and require the same final state. Alone, only the "
    "end state decides; with --match, both must hold."
)


def seconds_option(name: str, help: str, default: float = 60.0) -> Callable[..., Any]:
    """An option of a positive number of seconds (an MCP server's bounds)."""
    return click.option(
        name,
        type=click.FloatRange(min=0, min_open=True),
        default=default,
        show_default=True,
        help=help,
    )


def mcp_env_option(server: str) -> Callable[..., Any]:
    """`--mcp-env KEY=VALUE` (repeatable), for the server that option `server` starts."""
    return click.option(
        "--mcp-env",
        metavar="KEY=VALUE",
        multiple=True,
        help=f"A variable set for the {server} server over the environment it inherits "
        "(judge's, as the shell command would have it); repeatable.",
    )


_mcp_options = (
    click.option(
        "--mcp",
        "mcp_command",
        metavar="COMMAND",
        help="An MCP server as the environment, in place of --env: this command started over "
        "stdio, a fresh process for every environment (so runs never share state).",
    ),
    mcp_env_option("--mcp"),
    click.option(
        "--mcp-url",
        metavar="URL",
        help="A running MCP server over streamable HTTP as the environment (one server for "
        "everything: its state is read, not compared).",
    ),
    click.option(
        "--mcp-state",
        metavar="URI",
        help="The server's resource whose JSON is the state compared (the final state).",
    ),
    seconds_option(
        "--mcp-timeout",
        "Seconds an MCP request (a tool call, a state read, tools/list) may take before it fails.",
    ),
    seconds_option(
        "--mcp-start-timeout",
        "Seconds an MCP server may take to start and answer initialize (apart from "
        "--mcp-timeout, so that a short bound on a hung tool leaves a slow start alone).",
    ),
)


def trajectory_options_with(*, env_help: str) -> Callable[..., Any]:
    """The trajectory options, with a command's own account of what --env does in it."""
    return stack_options(
        *_matching_options,
        click.option("--env", metavar="MODULE:FACTORY", help=env_help),
        *_mcp_options,
    )


# --env where the calls to grade are already made: check, grade, probe, serve.
trajectory_options = trajectory_options_with(env_help=_REPLAY_HELP)
# --env in `judge run`: the candidates run as agents in the environment.
agent_trajectory_options = trajectory_options_with(
    env_help="Make each run an agent run: a fresh environment from this factory (or "
    "path/to/file.py:factory) executes the candidate's calls and the results are sent back, "
    "until it answers in text or --max-steps is reached (with --agent: the environment your "
    "agent is given). The state the run ends in must equal the reference calls' replayed in "
    "another fresh one; alone, only that end state decides; with --match, both must hold."
)
# --env in `judge regrade`: an agent run's state is the one recorded, not a replay.
regrade_trajectory_options = trajectory_options_with(
    env_help="Replay the reference's calls in a fresh environment from this factory (or "
    "path/to/file.py:factory) and require its final state: of an agent run, the state it "
    "ended in as recorded; of a single response, its calls replayed in another. Alone, only "
    "the end state decides; with --match, both must hold."
)


def match_settings(
    mode: str | None,
    args_match: str | None,
    overrides: tuple[str, ...],
    ignore_tools: tuple[str, ...],
    value_defaults: tuple[str, ...] = (),
) -> Match | None:
    """The run's match settings from the options, or None when none was given."""
    if not (mode or args_match or overrides or ignore_tools or value_defaults):
        return None
    from judge.cases._match import Match, parse_override

    given: dict[str, Any] = {}
    if mode is not None:
        given["mode"] = mode
    if args_match is not None:
        given["args"] = args_match
    if overrides:
        given["overrides"] = dict(parse_override(text) for text in overrides)
    if ignore_tools:
        given["ignore_tools"] = ignore_tools
    if value_defaults:
        given["values"] = _values(value_defaults)
    return Match(**given)


def _choices(annotation: Any) -> tuple[str, ...]:
    """The strings a `Literal` (or an optional one) allows."""
    found: list[str] = []
    for arg in get_args(annotation):
        found.extend(_choices(arg) if get_args(arg) else [arg] if isinstance(arg, str) else [])
    return tuple(found)


def _values(given: tuple[str, ...]) -> dict[str, str]:
    """`--values strings=casefold,numbers=strict` as `Match.values` reads it; ValueError for
    a setting it has not."""
    from judge.cases._match import ValueDefaults

    told: dict[str, str] = {}
    for text in ",".join(given).split(","):
        key, sep, how = (part.strip() for part in text.partition("="))
        choices = ValueDefaults.model_fields.get(key)
        allowed = _choices(choices.annotation) if choices is not None else ()
        if not sep or how not in allowed:
            raise ValueError(
                f"--values {text.strip()!r}: expected strings=exact|casefold|bfcl, "
                "numbers=json|strict or dates=dmy|mdy"
            )
        told[key] = how
    return told


def trajectory_from(
    options: dict[str, Any], *, agent_runs: bool = False
) -> tuple[Match | None, EnvironmentFactory | None]:
    """Take the trajectory options out of a command's keyword arguments: the match settings
    and the environment factory. Raises ValueError for an override or factory that cannot be
    loaded."""
    settings = match_settings(
        options.pop("match"),
        options.pop("args_match"),
        options.pop("overrides"),
        options.pop("ignore_tools"),
        options.pop("value_defaults", ()),
    )
    env = options.pop("env")
    server = mcp_server(options, agent_runs=agent_runs)
    if env and server is not None:
        raise ValueError("--env and --mcp/--mcp-url are two environments: give one")
    if server is not None:
        return settings, server
    if not env:
        return settings, None
    from judge.checks._env import load_factory

    return settings, load_factory(env)


def mcp_server(options: dict[str, Any], *, agent_runs: bool = False) -> Any:
    """Take the MCP options out of a command's keyword arguments: the `McpServer` they name,
    or None. Raises ValueError for options that do not make one (a running server's URL where
    calls are replayed: each replay needs a fresh server)."""
    command, url = options.pop("mcp_command", None), options.pop("mcp_url", None)
    if url is not None and not agent_runs:
        raise ValueError(
            "--mcp-url is for agent runs (judge run): replaying calls needs a fresh server "
            "for each side, --mcp COMMAND"
        )
    state, timeout = options.pop("mcp_state", None), options.pop("mcp_timeout", 60.0)
    start_timeout, env = options.pop("mcp_start_timeout", 60.0), options.pop("mcp_env", ())
    if command is None and url is None:
        if state is not None:
            raise ValueError("--mcp-state reads a server's resource: add --mcp or --mcp-url")
        if env:
            raise ValueError("--mcp-env sets the environment of a server: add --mcp COMMAND")
        return None
    from judge.checks._mcp import McpServer, McpStartError

    server = McpServer.of(command, url, state, timeout, start_timeout=start_timeout, env=env)
    try:
        server.listed_tools()  # started once now: a server that cannot start stops the command
    except McpStartError as exc:
        raise ValueError(str(exc)) from None
    return server
