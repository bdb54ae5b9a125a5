"""The options that fix a judge, and the judge they describe (past the calibration gate):
shared by every command that runs one."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

import click

from judge._errors import JudgeError
from judge.checks._outcome import DEFAULT_SEED
from judge.cli._common import (
    EXIT_GATE,
    EXIT_UNREADABLE,
    stack_options,
    strict_interval_option,
)
from judge.cli._matching import trajectory_from

if TYPE_CHECKING:
    from judge.calibrate._record import CalibrationRecord
    from judge.judging._grade import Judge

# The options that fix a judge; shared by every command that runs one.
judge_options = stack_options(
    click.option(
        "--model",
        help="Judge model (`local` for the embedded one; default: "
        "JUDGE_MODEL, or the provider's default).",
    ),
    click.option(
        "--base-url",
        help="Any OpenAI-compatible endpoint (default: "
        "JUDGE_BASE_URL; OPENROUTER_API_KEY selects OpenRouter, OPENAI_API_KEY "
        "OpenAI; none: the embedded judge).",
    ),
    click.option(
        "--rubrics",
        type=click.Path(file_okay=False, exists=True),
        help="A folder of your own rubrics (*.j2), one per dimension.",
    ),
    click.option(
        "--aligned",
        type=click.Path(dir_okay=False),
        help="A spec from `judge align` (aligned.json): your labelling policy and labelled "
        "examples in the prompts of the dimensions it chose them for.",
    ),
    click.option(
        "--samples",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="Ask N times; report the majority verdict and the flip rate.",
    ),
    click.option(
        "--concurrency",
        type=click.IntRange(min=1),
        default=8,
        show_default=True,
        help="Requests in flight at once.",
    ),
    click.option("--temperature", type=float, default=0.0, show_default=True),
    click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True),
    click.option("--reasoning-effort", help="Passed through to the provider."),
    click.option("--extra-body", help="JSON object of provider fields, passed through."),
    click.option(
        "--response-format",
        default="auto",
        show_default=True,
        type=click.Choice(["auto", "json_schema", "json_object", "tool"]),
        help="How to ask for structured output (auto: json_schema, stepping "
        "down when the endpoint refuses it).",
    ),
    click.option(
        "--timeout",
        type=float,
        default=120.0,
        show_default=True,
        help="Seconds before one request is abandoned (and retried); the embedded "
        "model is waited for at least 900.",
    ),
    click.option(
        "--cache-dir",
        type=click.Path(file_okay=False),
        help="Where verdicts are cached (default: JUDGE_CACHE_DIR, else the user cache folder).",
    ),
    click.option("--no-cache", is_flag=True, help="Neither read nor write the cache."),
    click.option(
        "--escalate-model",
        help="A second judge for the verdicts this one abstains on (--abstain-below or "
        "--coverage): its verdicts replace them. Key: JUDGE_ESCALATE_API_KEY, else the "
        "usual rules for its host.",
    ),
    click.option("--escalate-base-url", help="The escalation judge's endpoint."),
    click.option(
        "--no-logprobs",
        is_flag=True,
        help="Do not ask for token logprobs (verdicts then carry no confidence, unless "
        "from --samples). Asked by default; an endpoint that refuses them is asked without.",
    ),
    click.option(
        "--judge-broken",
        is_flag=True,
        help="Ask the judge about calls that already failed structurally too.",
    ),
    click.option(
        "--probe",
        type=click.Path(dir_okay=False),
        help="A probe from `judge local train`: the embedded judge decides with it, on its "
        "hidden state (default: the probe shipped with the judge, where one ships: `judge "
        "local status` says).",
    ),
    click.option(
        "--no-probe",
        is_flag=True,
        help="The embedded judge decides by its rubrics' weights, without a probe.",
    ),
)


# --calibration, --strict-interval and --force: the gate of every command that runs a judge.
_CALIBRATION = click.option(
    "--calibration",
    type=click.Path(dir_okay=False),
    help="A record from `judge calibrate`: refuse (exit 3) a judge that differs from "
    "the calibrated one or whose kappa is under the record's threshold.",
)
_STRICT_INTERVAL = "With --calibration: the kappa's 95% interval lower bound must clear it."
_FORCE = click.option(
    "--force",
    is_flag=True,
    help="With --calibration: run anyway, every verdict marked trusted: false.",
)
calibration_options = stack_options(
    _CALIBRATION,
    strict_interval_option(_STRICT_INTERVAL),
    _FORCE,
)
"""For `run` and `serve`, where `--strict` was this option's former name."""
grade_calibration_options = stack_options(
    _CALIBRATION,
    click.option("--strict-interval", "strict", is_flag=True, help=_STRICT_INTERVAL),
    _FORCE,
)
"""For `judge grade`, whose `--strict` is about reading cases (and, with --calibration, for
one release still about the interval too)."""


# Abstention: the verdicts a judge is not sure of become `uncertain`.
abstention_options = stack_options(
    click.option(
        "--abstain-below",
        type=click.FloatRange(0, 1),
        help="Verdicts whose confidence is under this (or that carry none) are `uncertain`: "
        "never correct or incorrect, counted apart, outside the pass rate.",
    ),
    click.option(
        "--coverage",
        type=click.FloatRange(0, 1, min_open=True),
        help="With --calibration: abstain below the calibrated confidence that keeps this "
        "share of verdicts, per dimension.",
    ),
)


def judge_kwargs(options: dict[str, Any]) -> dict[str, Any]:
    """The `Judge(...)` arguments the judge options give (but the escalation judge)."""
    options = dict(options)
    extra = options.pop("extra_body")
    try:
        extra_body = json.loads(extra) if extra else None
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"--extra-body is not JSON: {exc}") from None
    options.pop("escalate_model", None)
    options.pop("escalate_base_url", None)
    no_cache = options.pop("no_cache")
    logprobs = not options.pop("no_logprobs", False)
    probe, no_probe = options.pop("probe", None), options.pop("no_probe", False)
    if probe and no_probe:
        raise click.BadParameter("--probe and --no-probe exclude each other")
    options["probe"] = None if no_probe else (probe or "default")
    return {"extra_body": extra_body, "cache": not no_cache, "logprobs": logprobs, **options}


def make_judge(options: dict[str, Any]) -> Judge:
    escalate = options.get("escalate_model"), options.get("escalate_base_url")
    kwargs = judge_kwargs(options)
    no_cache, logprobs = not kwargs["cache"], kwargs["logprobs"]
    options = {
        k: v for k, v in kwargs.items() if k not in ("extra_body", "cache", "logprobs", "probe")
    }
    from judge.endpoints._endpoint import provider_of
    from judge.judging._aligned import prompts_only
    from judge.judging._grade import Judge  # the OpenAI SDK: only for commands that judge

    escalation = None
    if any(escalate):
        if options.get("abstain_below") is None:
            raise click.BadParameter(
                "the escalation judge answers the verdicts the first abstains on: "
                "add --abstain-below (or --coverage with --calibration)"
            )
        key = os.environ.get("JUDGE_ESCALATE_API_KEY") or None
        if key is None and escalate[1] and provider_of(escalate[1]) == "custom":
            key = "not-needed"  # never the first judge's JUDGE_API_KEY, sent to another host
        escalation = Judge(
            model=escalate[0],
            base_url=escalate[1],
            api_key=key,
            cache=not no_cache,
            cache_dir=options.get("cache_dir"),
            timeout=options.get("timeout", 120.0),
            temperature=options.get("temperature", 0.0),
            seed=options.get("seed", DEFAULT_SEED),
            concurrency=options.get("concurrency", 8),
            logprobs=logprobs,
            aligned=prompts_only(options.get("aligned")),  # the user's policy, examples too
        )
    return Judge(escalation=escalation, **kwargs)


def judge_for(
    command: str,
    options: dict[str, Any],
    *,
    calibration: str | None = None,
    strict: bool = False,
    force: bool = False,
) -> Judge:
    """The judge that the judge options and the trajectory options describe, past the
    calibration gate when a record is given (exit 2 on bad options, 3 when refused)."""
    abstain_below = options.pop("abstain_below", None)
    coverage = options.pop("coverage", None)
    if coverage is not None and (calibration is None or abstain_below is not None):
        click.echo(
            f"judge {command}: --coverage reads its cut from a --calibration record "
            "(and replaces --abstain-below)",
            err=True,
        )
        sys.exit(EXIT_UNREADABLE)
    record = read_record(calibration, force=force, command=command) if calibration else None
    cut: float | dict[str, float] | None = abstain_below
    if record is not None and abstain_below is None:
        if coverage is None and record.coverage is not None:
            coverage = record.coverage  # gated at that coverage: abstain as it was measured
            click.echo(
                f"judge {command}: {calibration} was gated at coverage {coverage:.0%}: "
                "abstaining as it did (--coverage or --abstain-below to choose)",
                err=True,
            )
        if coverage is not None:
            cut = coverage_cuts(record, coverage, calibration or "", command)
    try:
        match, env = trajectory_from(options)
        judge = make_judge({**options, "match": match, "env": env, "abstain_below": cut})
    except (JudgeError, ValueError) as exc:
        click.echo(f"judge {command}: {exc}", err=True)
        sys.exit(EXIT_UNREADABLE)
    if calibration is not None:
        judge.trusted = record is not None and gate(
            judge, record, calibration, strict=strict, force=force, command=command
        )
    return judge


def coverage_cuts(
    record: CalibrationRecord, coverage: float, path: str, command: str
) -> dict[str, float]:
    """Per dimension, the calibrated confidence under which verdicts are abstained from, so
    that `coverage` of them are kept (on the calibration's held-out verdicts)."""
    missing = [d for d in ("selection", "arguments") if d not in record.confidence]
    if missing:
        click.echo(
            f"judge {command}: --coverage: {path} holds no calibrated confidence for "
            f"{', '.join(missing)} (its judge gave none): calibrate a judge whose verdicts "
            "carry one, or use --abstain-below",
            err=True,
        )
        sys.exit(EXIT_UNREADABLE)
    return {name: stats.cut(coverage) for name, stats in record.confidence.items()}


def read_record(path: str, *, force: bool, command: str) -> CalibrationRecord | None:
    """The calibration record; an unreadable one refuses the judge (exit 3), or with
    --force runs it untrusted (None)."""
    from judge.calibrate._record import GateRefusal, load_record

    try:
        return load_record(path)
    except GateRefusal as exc:
        _refused(exc, force=force, command=command)
        return None


def gate_judge(judge: Judge, path: str, *, strict: bool, force: bool, command: str) -> bool:
    """Whether the judge's verdicts are trusted; exits 3 when the record refuses it."""
    record = read_record(path, force=force, command=command)
    return record is not None and gate(
        judge, record, path, strict=strict, force=force, command=command
    )


def gate(
    judge: Judge,
    record: CalibrationRecord,
    path: str,
    *,
    strict: bool,
    force: bool,
    command: str,
) -> bool:
    """Apply what the record fitted for this judge, then whether it passes the record's
    gate: True, or exit 3 (with --force: False, running untrusted)."""
    from judge.calibrate._record import GateRefusal, admit

    try:
        admit(judge, record, source=path, strict=strict)
    except GateRefusal as exc:
        _refused(exc, force=force, command=command)
        return False
    return True


def _refused(exc: Exception, *, force: bool, command: str) -> None:
    if not force:
        click.echo(f"judge {command}: refused: {exc}", err=True)
        sys.exit(EXIT_GATE)
    click.echo(f"judge {command}: --force: running untrusted: {exc}", err=True)
