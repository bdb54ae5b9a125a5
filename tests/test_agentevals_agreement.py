"""agentevals' own trajectory-match test cases, graded by agentevals and by us (issue 51).

Each evaluator call of agentevals' `python/tests/test_trajectory.py` (langchain-ai/agentevals
at 946ad15, agentevals 0.0.9: strict, unordered, subset and superset trajectories, the
`tool_args_match_mode` and `tool_args_match_overrides` cases) is kept here with the score that
test asserts, run through agentevals' `create_trajectory_match_evaluator` in process, translated
into our case format (the candidate's messages with its assistant `tool_calls`, its last
assistant message as the `response`, the reference's calls as `expected_calls`, the tools with
schemas) and graded by `judge.check` with the same settings: the trajectory mode as our
`--match` mode, `tool_args_match_mode` as `args`, the overrides as ours (a mode, a callable,
or dotted key paths as JSON pointers). The two agree on all 64. `VARIANTS` are ours: their
cases changed where the semantics part or might (message grouping under strict, a reference
without calls, first-fit pairing); there, the `KNOWN_DIFFERENCES` must still differ and the
rest agree, so this fails when either side changes.

The messages are agentevals' own, in its order, with the long texts and tool results cut short:
neither checker reads them. The two LangChain-message tests stay LangChain messages for
agentevals; ours reads them as `langchain_core` converts them to OpenAI messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from judge import Match, check

agentevals_match = pytest.importorskip("agentevals.trajectory.match")
lc_messages = pytest.importorskip("langchain_core.messages")
lc_utils = pytest.importorskip("langchain_core.messages.utils")

MODES = ("unordered", "superset", "subset", "strict")
ARGS = ("exact", "ignore", "subset", "superset")

# The tools the cases call, with schemas that list every argument any of them passes (an
# override path must point into the schema's properties).
_STRING = {"type": "string"}
SCHEMAS: dict[str, dict[str, Any]] = {
    "get_weather": {"city": _STRING, "units": _STRING},
    "accuweather_forecast": {"city": _STRING},
    "fetch_user_flight_information": {"user_id": _STRING},
    "search_flights": {
        "start_time": _STRING,
        "departure_airport": _STRING,
        "arrival_airport": _STRING,
    },
    "lookup_policy": {
        "query": _STRING,
        "time": {"type": "object", "properties": {"start": _STRING, "end": _STRING}},
    },
    "get_flight_info": {"flight_no": _STRING, "is_cool": {"type": "boolean"}, "foo": _STRING},
}
TOOLS = [
    {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": properties}},
    }
    for name, properties in SCHEMAS.items()
]


# agentevals' messages, as its tests write them (OpenAI chat messages)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def calls(*made: tuple[str, dict[str, Any]], ids: tuple[str, ...] = ()) -> dict[str, Any]:
    """An assistant message with these tool calls (with ids where agentevals gives them)."""
    tool_calls: list[dict[str, Any]] = []
    for i, (name, arguments) in enumerate(made):
        one: dict[str, Any] = {"function": {"name": name, "arguments": json.dumps(arguments)}}
        if ids:
            one = {"type": "function", "id": ids[i]} | one
        tool_calls.append(one)
    message: dict[str, Any] = {"role": "assistant", "tool_calls": tool_calls}
    return message | ({"content": ""} if ids else {})


def result(text: str = "...", call_id: str | None = None) -> dict[str, Any]:
    return {"role": "tool", "content": text} | ({"tool_call_id": call_id} if call_id else {})


def say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


@dataclass(frozen=True)
class Trial:
    """One agentevals evaluator call and the score its test asserts."""

    outputs: list[Any]
    reference: list[Any]
    mode: str = "strict"
    args: str = "exact"
    overrides: dict[str, Any] = field(default_factory=dict)
    score: bool = True


CASES: list[Any] = []
"""agentevals' own evaluator calls."""
VARIANTS: list[Any] = []
"""Ours: their cases changed where the two semantics part (or might), with the score
agentevals gives."""


def cases(
    name: str,
    outputs: list[Any],
    reference: list[Any],
    scores: dict[str, bool],
    *,
    by: str = "mode",
    into: list[Any] = CASES,
    **settings: Any,
) -> None:
    """One agentevals test, parametrized over `by` (the trajectory mode or the argument mode)
    with the score it asserts for each."""
    for value, score in scores.items():
        chosen: dict[str, Any] = {by: value, **settings}
        trial = Trial(outputs, reference, score=score, **chosen)
        into.append(pytest.param(trial, id=f"{name}-{value}"))


SF: tuple[str, dict[str, Any]] = ("get_weather", {"city": "SF"})
LONDON: tuple[str, dict[str, Any]] = ("get_weather", {"city": "London"})
SAN_FRANCISCO: tuple[str, dict[str, Any]] = ("get_weather", {"city": "San Francisco"})
BOTH = {mode: True for mode in MODES}

# test_trajectory_match
cases(
    "trajectory_match",
    [user("What is the weather in SF?"), calls(SAN_FRANCISCO), result(), say("80 and sunny.")],
    [user("What is the weather in SF?"), calls(SAN_FRANCISCO), result(), say("80˚, sunny.")],
    BOTH,
)
# test_trajectory_with_different_tool_message_order
cases(
    "different_tool_message_order",
    [user("SF and London?"), calls(SF, LONDON), result(), result(), say("80 and 90.")],
    [user("SF and London?"), calls(LONDON, SF), result(), result(), say("90˚ and 80˚.")],
    BOTH,
)
# test_trajectory_with_different_message_count
cases(
    "different_message_count",
    [user("SF and London?"), calls(SF), result(), calls(LONDON), result(), say("80 and 90.")],
    [user("SF and London?"), calls(LONDON, SF), result(), result(), say("90˚ and 80˚.")],
    {"unordered": True, "superset": True, "subset": True, "strict": False},
)
# test_trajectory_subset_tool_call
cases(
    "subset_tool_call",
    [user("SF and London?"), calls(SF), result(), say("80, and 9000 in London.")],
    [user("SF and London?"), calls(LONDON, SF), result(), result(), say("90˚ and 80˚.")],
    {"unordered": False, "superset": False, "subset": True, "strict": False},
)
# test_exact_matcher_with_different_called_tools
cases(
    "different_called_tools",
    [user("What is the weather in SF?"), calls(SF), result(), say("80 and sunny.")],
    [
        user("What is the weather in SF?"),
        calls(("accuweather_forecast", {"city": "San Francisco"})),
        result(),
        say("80˚ and sunny."),
    ],
    {mode: False for mode in MODES},
)
# test_trajectory_with_extra_tool_calls_and_override
cases(
    "extra_tool_calls_and_override",
    [user("SF and London?"), calls(SAN_FRANCISCO, LONDON), result(), result(), say("80, 90.")],
    [
        user("SF and London?"),
        calls(("get_weather", {"city": "SF and London"})),
        result(),
        say("80 and 90."),
    ],
    {"unordered": False, "superset": True, "subset": False, "strict": False},
    overrides={"get_weather": "ignore"},
)
# test_trajectory_with_subset_tool_calls_and_override
cases(
    "subset_tool_calls_and_override",
    [
        user("SF and London?"),
        calls(("get_weather", {"city": "SF and London"})),
        result(),
        say("80 and 90."),
    ],
    [user("SF and London?"), calls(SAN_FRANCISCO, LONDON), result(), result(), say("80, 90.")],
    {"unordered": False, "superset": False, "subset": True, "strict": False},
    overrides={"get_weather": "ignore"},
)


# test_trajectory_match_with_langchain_messages_and_override / _failure: LangChain messages
def lc_trajectory(name: str, city: str, call_id: str, opening: str) -> list[Any]:
    return [
        lc_messages.HumanMessage(content="What is the weather in SF?"),
        lc_messages.AIMessage(
            content=opening, tool_calls=[{"id": call_id, "name": name, "args": {"city": city}}]
        ),
        lc_messages.ToolMessage(tool_call_id=call_id, content="It's 80 degrees and sunny."),
        lc_messages.AIMessage(content="The weather in SF is 80 degrees and sunny."),
    ]


def either_sf(candidate: dict[str, Any], reference: dict[str, Any]) -> bool:
    return candidate["city"] in ("SF", "San Francisco") and reference["city"] in (
        "SF",
        "San Francisco",
    )


LC_OUTPUTS = lc_trajectory("get_weather", "SF", "1234", "")
cases(
    "langchain_messages_and_override",
    LC_OUTPUTS,
    lc_trajectory("get_weather", "San Francisco", "4321", "Let me check that for you!"),
    BOTH,
    overrides={"get_weather": either_sf},
)
cases(
    "langchain_messages_failure",
    LC_OUTPUTS,
    lc_trajectory("accuweather_forecast", "San Francisco", "4321", "Let me check that for you!"),
    {mode: False for mode in MODES},
)

# The flight agent of test_trajectory_match_with_overrides and _with_nested_field_overrides
FETCH_ID, UPGRADE_ID, OTHER_ID = "d3b6d04c", "4a286aff", "00000000"
REF_UPGRADE_ID, SEARCH_ID = "cb2f81d3", "f6ff5419"


def flight(*middle: dict[str, Any], fetch: dict[str, Any], ending: str) -> list[Any]:
    return [
        user("Hi there, what time is my flight?"),
        calls(("fetch_user_flight_information", fetch), ids=(FETCH_ID,)),
        result("[{...}]", FETCH_ID),
        say("Your flight LX0112 from CDG to BSL is scheduled to depart in an hour."),
        user("Update it to the next flight and bump me to first class if there is availability."),
        *middle,
        say(ending),
    ]


def policies(first: dict[str, Any], second: dict[str, Any], first_id: str) -> list[Any]:
    return [
        calls(("lookup_policy", first), ("lookup_policy", second), ids=(first_id, OTHER_ID)),
        result("...", first_id),
        result("...", OTHER_ID),
    ]


WE_DO_NOT = "The next flight is in 4 hours. We do not allow upgrades. Book it anyway?"
POSSIBLE = "Ok, upgrades to first class are possible. What date would you like?"
SEARCH = {
    "start_time": "2025-03-22T18:34:40Z",
    "departure_airport": "CDG",
    "arrival_airport": "BSL",
}


def upgrade_query(candidate: dict[str, Any], reference: dict[str, Any]) -> bool:
    """agentevals' `lookup_policy_query_matcher`, as its test writes it."""
    if reference.get("query", {}) and "upgrade" in reference.get("query", {}):
        return "upgrade" in candidate.get("query", {})
    return True


OVERRIDES_OUT = flight(
    calls(("search_flights", SEARCH), ids=(SEARCH_ID,)),
    result("[{...}, {...}]", SEARCH_ID),
    *policies({"query": "flight upgrades"}, {"query": "first class"}, UPGRADE_ID),
    fetch={},
    ending=WE_DO_NOT,
)
OVERRIDES_REF = flight(
    *policies({"query": "upgrade to first class"}, {"query": "foo"}, REF_UPGRADE_ID),
    fetch={},
    ending=POSSIBLE,
)
# test_trajectory_match_with_overrides: first without the override, then with it
cases("match_with_overrides-no_override", OVERRIDES_OUT, OVERRIDES_REF, {m: False for m in MODES})
cases(
    "match_with_overrides",
    OVERRIDES_OUT,
    OVERRIDES_REF,
    {"unordered": False, "superset": True, "subset": False, "strict": False},
    overrides={"lookup_policy": upgrade_query},
)

TIME = {"start": "2025-03-22T18:34:40Z", "end": "2025-03-22T20:34:40Z"}
REF_TIME = {"start": "2025-03-22T18:34:40Z", "end": "baz"}
NESTED_OUT = flight(
    *policies(
        {"query": "flight upgrades", "time": TIME},
        {"query": "first class", "time": TIME},
        UPGRADE_ID,
    ),
    fetch={"user_id": "123"},
    ending=WE_DO_NOT,
)
NESTED_REF = flight(
    *policies(
        {"query": "foo", "time": REF_TIME}, {"query": "bar", "time": REF_TIME}, REF_UPGRADE_ID
    ),
    fetch={"user_id": "123"},
    ending=POSSIBLE,
)
# test_trajectory_match_with_nested_field_overrides: without, then with ["time.start"]
cases("nested_field_overrides-no_override", NESTED_OUT, NESTED_REF, {m: False for m in MODES})
cases(
    "nested_field_overrides",
    NESTED_OUT,
    NESTED_REF,
    BOTH,
    overrides={"lookup_policy": ["time.start"]},
)


# test_tool_args_match_mode_superset / _subset / _exact (the default trajectory mode: strict)
def flight_info(arguments: dict[str, Any], call_id: str) -> list[Any]:
    return [
        user("Hi there, what time is my flight?"),
        calls(("get_flight_info", arguments), ids=(call_id,)),
        say("Your flight is at 10:00 AM."),
    ]


FLIGHT = {"flight_no": "LX0112"}
cases(
    "tool_args_match_mode_superset",
    flight_info({"is_cool": True, "flight_no": "LX0112"}, "123"),
    flight_info(FLIGHT, "321"),
    {"exact": False, "ignore": True, "subset": False, "superset": True},
    by="args",
)
cases(
    "tool_args_match_mode_subset",
    flight_info(FLIGHT, "123"),
    flight_info({"flight_no": "LX0112", "foo": "bar"}, "321"),
    {"exact": False, "ignore": True, "subset": True, "superset": False},
    by="args",
)
cases(
    "tool_args_match_mode_exact",
    flight_info(FLIGHT, "123"),
    flight_info(FLIGHT, "321"),
    {args: True for args in ARGS},
    by="args",
)


# Variants of their cases, where agentevals' semantics and ours could part

SF_IN_CELSIUS: tuple[str, dict[str, Any]] = ("get_weather", {"city": "SF", "units": "c"})
NO_CALL = [user("What is the weather in SF?"), say("I cannot look up the weather.")]
# the calls of different_message_count, in the candidate's order but in one message
cases(
    "variant-one_message_reference",
    [user("SF and London?"), calls(SF), result(), calls(LONDON), result(), say("80 and 90.")],
    [user("SF and London?"), calls(SF, LONDON), result(), result(), say("80˚ and 90˚.")],
    {"strict": False, "unordered": True},
    into=VARIANTS,
)
# trajectory_match with a text-only assistant message before the call
cases(
    "variant-extra_text_message",
    [user("Weather in SF?"), say("Let me check."), calls(SF), result(), say("80 and sunny.")],
    [user("Weather in SF?"), calls(SF), result(), say("80˚ and sunny.")],
    {"strict": False, "unordered": True},
    into=VARIANTS,
)
# a reference that calls nothing, against a candidate that calls, and one that does not
cases(
    "variant-no_reference_call",
    [user("What is the weather in SF?"), calls(SF), result(), say("80 and sunny.")],
    NO_CALL,
    {"unordered": False, "superset": True, "subset": False, "strict": False},
    into=VARIANTS,
)
cases("variant-no_call_either", NO_CALL, NO_CALL, BOTH, into=VARIANTS)
# two calls where first-fit pairing takes the wrong one: {"city": "SF"} (superset arguments)
# is met by both calls, {"city": "SF", "units": "c"} only by the first
for first_fit in ("superset", "strict"):
    cases(
        "variant-first_fit_pairing-args_superset",
        [user("SF, in Celsius?"), calls(SF_IN_CELSIUS, SF), result(), result(), say("27.")],
        [user("SF, in Celsius?"), calls(SF, SF_IN_CELSIUS), result(), result(), say("27˚.")],
        {first_fit: False},
        args="superset",
        into=VARIANTS,
    )

# Where our semantics knowingly differ from agentevals': case id -> why. Each must still
# differ, so this fails when either side changes.
_GROUPING = (
    "agentevals' strict compares the messages one by one (their number, roles, and the calls "
    "each carries); ours compares the calls, in order between assistant messages: the "
    "reference is a flat list of calls, not a transcript"
)
_FIRST_FIT = (
    "agentevals pairs each reference call with the first call that matches it, so a looser "
    "reference call can take the call a stricter one needed; we pair by an optimal assignment"
)
KNOWN_DIFFERENCES: dict[str, str] = {
    "variant-one_message_reference-strict": _GROUPING,
    "variant-extra_text_message-strict": _GROUPING,
    "variant-no_reference_call-superset": (
        "a reference without calls is vacuously met by any trajectory under agentevals' "
        "superset; for us `expected_calls: []` means no call, under every mode"
    ),
    "variant-first_fit_pairing-args_superset-superset": _FIRST_FIT,
    "variant-first_fit_pairing-args_superset-strict": _FIRST_FIT,
}


# The translation into our case format


def openai_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """The trajectory as OpenAI chat messages (LangChain's converted as LangChain does)."""
    if any(not isinstance(m, dict) for m in messages):
        converted: list[dict[str, Any]] = lc_utils.convert_to_openai_messages(messages)
        return converted
    return [dict(m) for m in messages]


def reference_calls(messages: list[Any]) -> list[dict[str, Any]]:
    return [
        {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
        for m in openai_messages(messages)
        for c in m.get("tool_calls") or ()
    ]


def our_case(trial: Trial, id_: str) -> dict[str, Any]:
    """The candidate's messages (every call with an id, every tool result answering its call),
    its last assistant message as the response, the reference's calls as `expected_calls`."""
    *history, last = openai_messages(trial.outputs)
    assert last["role"] == "assistant" and not last.get("tool_calls")
    messages: list[dict[str, Any]] = []
    pending: list[str] = []
    for m, message in enumerate(history):
        message = dict(message)
        if message.get("tool_calls"):
            message["tool_calls"] = [
                {"type": "function", "id": c.get("id") or f"call_{m}_{i}"} | c
                for i, c in enumerate(message["tool_calls"])
            ]
            pending = [c["id"] for c in message["tool_calls"]]
        elif message["role"] == "tool" and not message.get("tool_call_id"):
            message["tool_call_id"] = pending.pop(0)
        messages.append(message)
    return {
        "id": id_,
        "messages": messages,
        "tools": TOOLS,
        "response": {"content": last.get("content")},
        "expected_calls": reference_calls(trial.reference),
    }


def pointer(dotted: str) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in dotted.split("."))


def our_override(override: Any) -> Any:
    """agentevals' override as ours: a mode or a callable as it is, dotted key paths as JSON
    pointers."""
    if isinstance(override, list):
        return [pointer(path) for path in override]
    return override


def theirs(trial: Trial) -> bool:
    evaluator: Callable[..., dict[str, Any]] = agentevals_match.create_trajectory_match_evaluator(
        trajectory_match_mode=trial.mode,
        tool_args_match_mode=trial.args,
        tool_args_match_overrides=trial.overrides or None,
    )
    return bool(evaluator(outputs=trial.outputs, reference_outputs=trial.reference)["score"])


def ours(trial: Trial, id_: str) -> tuple[bool | None, list[str]]:
    match = Match(
        mode=trial.mode,  # type: ignore[arg-type]
        args=trial.args,  # type: ignore[arg-type]
        overrides={tool: our_override(o) for tool, o in trial.overrides.items()},
    )
    [graded] = list(check([our_case(trial, id_)], match=match))
    return graded.passed, [f"{f.kind.value} (call {f.call}): {f.message}" for f in graded.failures]


@pytest.mark.parametrize("trial", CASES + VARIANTS)
def test_agentevals_and_we_agree(trial: Trial, request: pytest.FixtureRequest) -> None:
    id_ = request.node.callspec.id
    their_score = theirs(trial)
    assert their_score is trial.score, "agentevals no longer scores the case as it did"
    passed, failures = ours(trial, id_)
    if id_ in KNOWN_DIFFERENCES:
        assert passed is (not their_score), f"no longer differs: {KNOWN_DIFFERENCES[id_]}"
    else:
        assert passed is their_score, failures


def test_the_cases_are_agentevals_test_suite() -> None:
    ids = [p.id for p in CASES]
    assert len(ids) == len(set(ids)) == 64  # every evaluator call of its test_trajectory.py
    assert not set(KNOWN_DIFFERENCES) & set(ids)  # on its own cases, we agree
    variants = [p.id for p in VARIANTS]
    assert len(set(ids + variants)) == len(ids + variants)
    assert set(KNOWN_DIFFERENCES) <= set(variants)
    both = [p.values[0].score for p in CASES]
    assert 0 < both.count(False) < len(both)  # passes and failures both


def test_a_dotted_path_is_refused_not_vacuous() -> None:
    """agentevals' `time.start` is a dotted key path; ours must be the pointer `/time/start`
    (the translation above): the dotted form is an error naming it, never a silent pass."""
    trial = Trial(NESTED_OUT, NESTED_REF, overrides={"lookup_policy": ["time.start"]})
    match = Match(mode="strict", overrides={"lookup_policy": ["time.start"]})
    [graded] = list(check([our_case(trial, "dotted")], match=match))
    assert graded.passed is None
    assert [f.kind.value for f in graded.failures] == ["InvalidCase"]
    assert "did you mean '/time/start'?" in graded.failures[0].message
