"""Deterministic grading of a case: structure of every call, selection, argument values."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from judge._errors import CaseError
from judge.cases._calls import ShapeError
from judge.cases._case import Case, ExpectedCall
from judge.cases._lean_form import Called
from judge.cases._loading import fallback_id, iter_cases, read_line
from judge.cases._match import Match, with_locale
from judge.cases._shared_tools import SharedTools
from judge.checks._arguments import Problem, show
from judge.checks._assertions import check_assertions
from judge.checks._credit import call_scores
from judge.checks._env import (
    NOT_OBSERVED,
    EnvironmentFactory,
    StateReport,
    load_factory,
    observes_state,
    replay,
)
from judge.checks._evidence import case_evidence
from judge.checks._kinds import FailureKind
from judge.checks._match_targets import unmatched_targets
from judge.checks._matchers import judge_targets
from judge.checks._no_reference import NO_CALL_BEHAVIORS, broken, reply_without_call
from judge.checks._plain import (
    DEFAULT,
    Settings,
    compare,
    in_call_order,
    structure,
    verdicts,
)
from judge.checks._result import CallScores, CaseResult, CheckResults, Failure, JudgedValue
from judge.checks._rules import Rules
from judge.checks._structure import SchemaCache
from judge.checks._trajectory import (
    TrajectoryCall,
    TrajectoryReport,
    message_of,
    trajectory_calls,
)


def check(
    cases: Any,
    *,
    rules: Rules | None = None,
    match: Match | str | dict[str, Any] | None = None,
    env: EnvironmentFactory | str | None = None,
    tools: Any = None,
) -> CheckResults:
    """Grade every case of `cases` (a JSONL path, a DataFrame, or an iterable of dicts or
    `Case`s). A malformed case becomes a result with an `InvalidCase` failure.

    `rules` loosens value matching per tool and argument: `{"get_weather": {"city":
    ArgumentRule(case_sensitive=False)}}`; "*" stands for any tool or any argument.
    `match` grades trajectories: `Match(mode="unordered", args="subset")`, or just `"strict"`.
    `env` (a factory, or `"module:factory"`) requires the reference's final state.
    `tools` (in any form a case's `tools` takes) are offered to every case that has none of
    its own, as `judge check --tools` does; `InputError` when one cannot be read.
    """
    return CheckResults(iter_check(cases, rules=rules, match=match, env=env, tools=tools))


def iter_check(
    cases: Any,
    *,
    rules: Rules | None = None,
    match: Match | str | dict[str, Any] | None = None,
    env: EnvironmentFactory | str | None = None,
    schemas: SchemaCache | None = None,
    tools: Any = None,
) -> Iterator[CaseResult]:
    """Like `check`, one result at a time, so a large file is graded in flat memory.
    `schemas` shares built validators across calls (a long-lived service keeps one)."""
    schemas = SchemaCache() if schemas is None else schemas
    settings = match if match is None or isinstance(match, Match) else Match.model_validate(match)
    factory = load_factory(env) if env is not None else None
    items = iter_cases(cases)
    if tools is not None:
        items = SharedTools.of(tools).offer(items)
    for item in items:
        if isinstance(item, CaseError):
            yield invalid_case_result(item)
        else:
            yield check_case(item, rules=rules, schemas=schemas, match=settings, env=factory)


def invalid_case_result(error: CaseError) -> CaseResult:
    """The result standing in for a case that could not be read."""
    return _invalid(
        error.case_id or fallback_id(error.source, error.line), error.pointer, str(error)
    )


def check_case(
    case: Case | dict[str, Any] | str | bytes,
    *,
    rules: Rules | None = None,
    schemas: SchemaCache | None = None,
    match: Match | None = None,
    env: EnvironmentFactory | None = None,
    whole_path: bool = False,
    reached: Any = NOT_OBSERVED,
) -> CaseResult:
    """Grade one case against its tools and, where given, its `expected_calls`.

    `match` sets how strictly calls must follow the reference (a case's own `match` wins
    field by field); with a trajectory mode every call of the assistant turns counts, not only
    the final response's. `env` replays the reference and the candidate's calls into fresh
    environments and requires the same final state. `whole_path` grades every call of the
    assistant turns even without a mode (an agent run's), paired as without one; `reached` is
    the state an agent run actually ended in, compared with the reference's instead of a
    replay of its calls.

    `case` may be a `Case`, a dict or JSON text, as `check` takes them; one that cannot be
    read gives a result with an `InvalidCase` failure, as in `check`.
    """
    read = case if isinstance(case, Case) else _read_one(case)
    if isinstance(read, CaseError):
        return invalid_case_result(read)
    result = _check_read(read, rules, schemas, match, env, whole_path, reached)
    if any(f.kind is FailureKind.INVALID_CASE for f in result.failures):
        return result
    found = case_evidence(read, result.trajectory is not None)
    return result.model_copy(update=found._asdict())


def _check_read(
    case: Case,
    rules: Rules | None,
    schemas: SchemaCache | None,
    match: Match | None,
    env: EnvironmentFactory | None,
    whole_path: bool,
    reached: Any,
) -> CaseResult:
    schemas = schemas or SchemaCache()
    if env is not None and not observes_state(env):
        env = None  # nothing to snapshot (an MCP server without --mcp-state): no reference
    settings = case.match.merged_over(match) if case.match is not None else match
    if case.meta:
        settings = with_locale(settings, case.meta)
    wrong = unmatched_targets(case, settings) if settings is not None else []
    if wrong:  # a setting that names nothing would pass vacuously
        return _invalid(case.id, *wrong[0], *wrong[1:])
    has_mode = settings is not None and settings.mode is not None
    whole_path = whole_path or has_mode or env is not None
    located = _calls_of(case, whole_path)
    if isinstance(located, CaseResult):
        return located
    calls = [call for call, _ in located]
    tools = {tool.name: tool for tool in case.tools}
    parsed, problems, schema_valid = structure(calls, tools, schemas)

    expected = case.expected_calls
    if expected is None and case.expected_behavior in NO_CALL_BEHAVIORS:
        expected = ()  # no call is the one thing code can check of such a case
    state: StateReport | None = None
    if env is not None and expected is not None:
        replayed = _replay(env, case, expected, calls, parsed, reached)
        if isinstance(replayed, CaseResult):
            return replayed
        state = replayed
        problems.extend(_state_problems(state))

    holds = None
    if case.assert_tools is not None:
        found = check_assertions([c.name for c in calls], case.assert_tools)
        holds = not found
        problems.extend(found)
    path_only = (
        TrajectoryReport(mode=None, args=None, calls=_located(located)) if whole_path else None
    )
    if expected is None:
        passed = False if broken(problems) else holds
        return _result(case, None, schema_valid, None, passed, problems, path_only, holds=holds)
    read = _Read(case, located, calls, parsed, problems, schema_valid, state, holds)
    if env is not None and expected and (settings is None or settings.mode is None):
        return _by_end_state(read, expected, settings or DEFAULT, rules, path_only)
    # (no call expected: every call is unexpected, whatever state it leaves)
    return _by_reference(read, expected, settings or DEFAULT, rules, whole_path)


@dataclass(frozen=True, slots=True)
class _Read:
    """What the checks found of a case before comparing it with its reference: its calls
    (`located`: where each was found), their parsed arguments, the problems so far, whether
    every call is valid, the replayed final state, and whether the tool assertions hold."""

    case: Case
    located: list[tuple[Called, str]]
    calls: list[Called]
    parsed: list[dict[str, Any] | None]
    problems: list[tuple[int | None, Problem]]
    schema_valid: bool | None
    state: StateReport | None
    holds: bool | None


def _calls_of(case: Case, whole_path: bool) -> list[tuple[Called, str]] | CaseResult:
    """The calls graded, with where each was found: every call of the assistant turns for
    `whole_path` (an `InvalidCase` result when the turns cannot be read), else the final
    response's."""
    if not whole_path:
        return [(call, "") for call in case.tool_calls]
    try:
        return list(trajectory_calls(case))
    except ShapeError as exc:
        return _invalid(case.id, exc.pointer, str(exc))


def _replay(
    env: EnvironmentFactory,
    case: Case,
    expected: Sequence[ExpectedCall],
    calls: list[Called],
    parsed: list[dict[str, Any] | None],
    reached: Any,
) -> StateReport | CaseResult:
    """The final states of the reference and the candidate, replayed into `env`'s
    environments; an `InvalidCase` result when the environment fails."""
    try:
        return replay(
            env,
            case,
            expected,
            list(zip([c.name for c in calls], parsed, strict=True)),
            reached,
        )
    except Exception as exc:  # a broken factory or snapshot: this case cannot be graded
        return _invalid(case.id, "", f"the environment failed: {type(exc).__name__}: {exc}")


def _by_end_state(
    read: _Read,
    expected: Sequence[ExpectedCall],
    how: Settings,
    rules: Rules | None,
    path_only: TrajectoryReport | None,
) -> CaseResult:
    """An environment without a match mode: only the end state matters; the pairing gives
    the partial credit alone."""
    case, calls, problems = read.case, read.calls, read.problems
    passed = read.state.equal if read.state is not None else None
    if broken(problems):  # a call broken in itself fails the case, as in every mode
        passed = False
    paired = compare([c.name for c in calls], read.parsed, expected, how, rules)
    needs_judge = False
    if passed and not calls:
        passed, needs_judge = _no_call_reply(case, problems)
    return _result(
        case, None, read.schema_valid, None, passed, problems, path_only, read.state,
        holds=read.holds, scored=paired.scored, needs_judge=needs_judge,
    )  # fmt: skip


def _by_reference(
    read: _Read,
    expected: Sequence[ExpectedCall],
    how: Settings,
    rules: Rules | None,
    whole_path: bool,
) -> CaseResult:
    """The calls paired with the reference calls as the match mode `how` says (a trajectory
    report for `whole_path`), and the verdicts of the pairing."""
    case, calls, problems, state = read.case, read.calls, read.problems, read.state
    after = len(case.messages)  # (the response's calls: one message after the conversation)
    groups = [message_of(source, after) for _, source in read.located] if whole_path else None
    compared = compare([c.name for c in calls], read.parsed, expected, how, rules, groups)
    problems.extend(compared.problems)
    report = None
    if whole_path:
        report = TrajectoryReport(
            mode=how.mode,
            args=how.arguments,
            calls=_located(read.located),
            matched=tuple(sorted(compared.pairs)),
            missing=tuple(compared.missing),
            extra=tuple(compared.extra),
            out_of_order=tuple(compared.out_of_order),
            ignored=tuple(compared.ignored),
        )
    passed: bool | None
    selection, argument_values, passed = verdicts(compared, bool(expected), how, read.schema_valid)
    if state is not None:  # both must hold; a reference that cannot be replayed: unknown
        passed = None if state.equal is None else passed if state.equal else False
    needs_judge = False
    if passed and not calls:
        passed, needs_judge = _no_call_reply(case, problems)
    targets = judge_targets(compared.problems, compared.pairs, read.parsed, expected)
    values = tuple(JudgedValue(call=c, path=p, value=v, expected=w) for c, p, v, w in targets)
    return _result(
        case, selection, read.schema_valid, argument_values, passed, problems, report, state,
        holds=read.holds, scored=compared.scored, needs_judge=needs_judge or bool(values),
    ).model_copy(update={"judge_values": values})  # fmt: skip


def _no_call_reply(
    case: Case, problems: list[tuple[int | None, Problem]]
) -> tuple[bool | None, bool]:
    """`passed` and `needs_judge` of a case passed so far whose reply makes no call, as
    `reply_without_call` says (an `ask` reply with text is the judge's)."""
    response = case.response
    text = None if response is None else response.content or ""
    passed, empty = reply_without_call(case.expected_behavior, text)
    if empty is not None:
        problems.append((None, empty))
    return passed, passed is None and text is not None


def _read_one(data: dict[str, Any] | str | bytes) -> Case | CaseError:
    if isinstance(data, str | bytes):
        return read_line(data.encode() if isinstance(data, str) else data,
                         source="<text>", line=1)  # fmt: skip
    for item in iter_cases([data]):
        return item
    raise AssertionError("one object gives one case")  # pragma: no cover


def _located(located: list[tuple[Called, str]]) -> tuple[TrajectoryCall, ...]:
    return tuple(
        TrajectoryCall(index=i, name=call.name, source=source)
        for i, (call, source) in enumerate(located)
    )


def _state_problems(state: StateReport) -> list[tuple[int | None, Problem]]:
    if state.reference_error is not None:
        return [(None, (FailureKind.INVALID_CASE, "/expected_calls", state.reference_error))]
    problems: list[tuple[int | None, Problem]] = []
    for d in state.diff:
        if d.change == "missing":
            message = f"the reference's state has {show(d.expected)} here; the candidate's none"
        elif d.change == "added":
            message = f"the candidate's state has {show(d.actual)} here; the reference's none"
        else:
            message = f"state is {show(d.actual)}, the reference reaches {show(d.expected)}"
        problems.append((None, (FailureKind.STATE_MISMATCH, d.path, message)))
    return problems


def _invalid(case_id: str, path: str, message: str, *more: tuple[str, str]) -> CaseResult:
    """An `InvalidCase` result: a failure at `path`, and one for each of `more` (path,
    message)."""
    failures = tuple(
        Failure(call=None, kind=FailureKind.INVALID_CASE, path=at, message=said)
        for at, said in ((path, message), *more)
    )
    return CaseResult(
        id=case_id,
        tool_selection=None,
        schema_valid=None,
        argument_values=None,
        passed=None,
        failures=failures,
    )


def _result(
    case: Case,
    selection: bool | None,
    schema_valid: bool | None,
    argument_values: bool | None,
    passed: bool | None,
    problems: list[tuple[int | None, Problem]],
    trajectory: TrajectoryReport | None = None,
    state: StateReport | None = None,
    *,
    holds: bool | None = None,
    scored: tuple[int, ...] | None = None,
    needs_judge: bool = False,
) -> CaseResult:
    """`scored`: the pairing's counts, for `call_scores`."""
    if holds is False:  # `passed` and the tool assertions must both hold
        passed = False
    scores = call_scores(*scored) if scored is not None else None
    failures = tuple(
        Failure(call=call, kind=kind, path=path, message=message)
        for call, (kind, path, message) in in_call_order(problems)
    )
    return CaseResult(
        id=case.id,
        tool_selection=selection,
        schema_valid=schema_valid,
        argument_values=argument_values,
        passed=passed,
        tool_assertions=holds,
        needs_judge=needs_judge and passed is None,
        call_scores=None if scores is None else CallScores(**scores),
        failures=failures,
        trajectory=trajectory,
        final_state=state,
    )
