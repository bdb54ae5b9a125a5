"""Grounding: which argument values the conversation never mentions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from judge import load_cases
from judge.checks._grounding import unmentioned_values as ungrounded_values
from tests.helpers import WEATHER, call, case, tool

ANY = {"type": "object"}


def ungrounded(arguments: dict[str, Any], said: str, **extra: Any) -> list[tuple[str, Any]]:
    data = case(
        [call("f", arguments)],
        tools=[tool("f", ANY)],
        messages=[{"role": "user", "content": said}],
        **extra,
    )
    [loaded] = load_cases([data])
    return [(u.path, u.value) for u in ungrounded_values(loaded)]


@pytest.mark.parametrize(
    ("arguments", "said", "found"),
    [
        pytest.param({"city": "Paris"}, "weather in paris?", [], id="case-insensitive"),
        pytest.param({"city": "New York"}, "weather in new\n york", [], id="spaces-collapsed"),
        pytest.param({"city": "Lyon"}, "weather in Paris", [("/city", "Lyon")], id="invented"),
        pytest.param({"days": 5}, "the next 5 days", [], id="number-said"),
        pytest.param({"days": 5}, "the next 15 days", [("/days", 5)], id="number-inside-another"),
        pytest.param({"amount": 20.0}, "refund 20 dollars", [], id="float-written-as-int"),
        pytest.param(
            {"flag": True, "empty": "", "none": None},
            "x",
            [],
            id="booleans-empty-and-null-are-not-evidence",
        ),
        pytest.param(
            {"to": ["ann@x.io", "bob@x.io"]},
            "mail ann@x.io",
            [("/to/1", "bob@x.io")],
            id="inside-a-list",
        ),
        pytest.param(
            {"a/b": {"c": "zz"}}, "nothing", [("/a~1b/c", "zz")], id="nested-with-pointer-escape"
        ),
    ],
)
def test_ungrounded_values(
    arguments: dict[str, Any], said: str, found: list[tuple[str, Any]]
) -> None:
    assert ungrounded(arguments, said) == found


def test_tool_results_ground_values_but_assistant_text_does_not() -> None:
    messages = [
        {"role": "user", "content": "refund my last order"},
        {"role": "assistant", "content": "Is it ord_9?"},
        {"role": "tool", "content": '{"last_order": "ord_7"}'},
    ]
    data = case(
        [call("f", {"order": "ord_7"}), call("f", {"order": "ord_9"})],
        tools=[tool("f", ANY)],
        messages=messages,
    )
    [loaded] = load_cases([data])
    assert [(u.call, u.value) for u in ungrounded_values(loaded)] == [(1, "ord_9")]


def test_unparseable_arguments_are_skipped() -> None:
    data = case([call("f", "{bad")], tools=[tool("f", ANY)])
    [loaded] = load_cases([data])
    assert ungrounded_values(loaded) == ()


def test_the_users_numbers_and_quoted_phrases_that_no_call_holds() -> None:
    from judge.cases._case import Case
    from judge.checks._grounding import unused_user_values

    said = 'Book 2 seats for "Hamlet" at 7.30, 1,200 points, and "Macbeth"'
    arguments = {"seats": 2, "show": "hamlet", "time": "7.3"}
    data = case([call("book", arguments)]) | {"messages": [{"role": "user", "content": said}]}
    assert unused_user_values(Case.model_validate(data)) == ("1,200", "Macbeth")
    no_call = case([]) | {"messages": [{"role": "user", "content": said}]}
    assert unused_user_values(Case.model_validate(no_call)) == ()


def test_numbers_of_an_answer_that_nothing_before_it_holds() -> None:
    from judge.checks._grounding import failed_tool_results, unsupported_numbers

    [case] = list(load_cases([{
        "id": "a",
        "messages": [
            {"role": "user", "content": "Balance of CHK-8820, and flights on 2025-04-02?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
             "function": {"name": "balance", "arguments": '{"account": "CHK-8820"}'}}]},
            {"role": "tool", "tool_call_id": "c1",
             "content": '{"balance": 1240.55, "at": "09:30"}'},
            {"role": "tool", "tool_call_id": "c2", "content": '{"error": "offline"}'},
            {"role": "tool", "tool_call_id": "c3", "content": "Error: timed out"},
            {"role": "tool", "tool_call_id": "c4", "content": {"error": "quota"}},
            {"role": "tool", "tool_call_id": "c5", "content": {"error": None, "ok": True}},
        ],
        "tools": [],
        "response": {"role": "assistant", "content": "CHK-8820 holds $1,240.55 as of 9:30; "
                     "the flight on April 2 costs $148 and leaves at 9:30."},
    }]))  # fmt: skip
    # 1,240.55 is 1240.55, 9 is 09, 2 is in the date; only 148 appears nowhere before
    assert unsupported_numbers(case) == ("148",)
    assert failed_tool_results(case) == 3  # an object result is read as it is


def test_the_word_margin_of_the_called_tool_over_the_closest_other() -> None:
    from judge.checks._grounding import word_margin

    tools = [
        {"type": "function", "function": {"name": "get_weather", "description": "Forecast"}},
        {"type": "function", "function": {"name": "bookFlight", "description": "Book seats"}},
        {"type": "function", "function": {"name": "cancel_flight"}},
    ]
    said = [{"role": "user", "content": "Please book 2 seats on the flight to Paris"}]

    def margin(*names: str) -> int:
        [loaded] = load_cases([case([call(n, {}) for n in names], tools=tools, messages=said)])
        return word_margin(loaded)

    # book, seats, flight: 3 words against cancel_flight's 1 (stop words and case left out)
    assert margin("bookFlight") == 2
    assert margin("cancel_flight") == -2
    assert margin("get_weather") == -3
    assert margin("bookFlight", "get_weather") == -3  # the least over the calls
    assert margin() == 0
    loud = [{"role": "user", "content": "book book flights seats seat booking now"}]
    [loaded] = load_cases([case([call("bookFlight", {})], tools=tools, messages=loud)])
    assert word_margin(loaded) == 2  # stems: booking is book, flights is flight
    said = [{"role": "user", "content": "book seats on a flight, then cancel the flight"}]
    trip = {"name": "book_trip", "description": "Book seats on a flight, then a hotel, then a car"}
    trip_tool = [{"type": "function", "function": trip}]
    [loaded] = load_cases([case([call("get_weather", {})], tools=tools + trip_tool, messages=said)])
    assert word_margin(loaded) == -3  # 0 against book_trip's 4 (book, seats, flight, then)
    unsaid = [{"role": "system", "content": "book flights"}]
    [loaded] = load_cases([case([call("bookFlight", {})], tools=tools, messages=unsaid)])
    assert word_margin(loaded) == 0  # no user message: no evidence


def test_calls_that_repeat_an_earlier_call_exactly() -> None:
    from judge.checks._grounding import repeated_calls

    def repeats(calls: list[dict[str, Any]], earlier: list[dict[str, Any]] | None = None) -> int:
        said: list[dict[str, Any]] = [{"role": "user", "content": "weather in Paris"}]
        if earlier:
            said += [
                {"role": "assistant", "content": None, "tool_calls": list(earlier)},
                {"role": "tool", "tool_call_id": "c_get_weather", "content": "sunny"},
            ]
        [loaded] = load_cases([case(calls, messages=said)])
        return repeated_calls(loaded)

    paris = call("get_weather", {"city": "Paris", "days": 2})
    assert repeats([paris]) == 0
    assert repeats([paris, call("get_weather", {"days": 2, "city": "Paris"})]) == 1  # key order
    assert repeats([paris, call("get_weather", {"city": "Rome", "days": 2})]) == 0
    for other in (2.0, True, "2"):  # equal in Python, not in JSON: a different call
        assert repeats([paris, call("get_weather", {"city": "Paris", "days": other})]) == 0
    assert repeats([paris, call("get_time", {"city": "Paris", "days": 2})]) == 0
    assert repeats([paris], earlier=[paris]) == 1  # asked again after its result came back
    as_object = {"name": "get_weather", "arguments": {"days": 2, "city": "Paris"}}
    parsed = {**paris, "function": as_object}
    assert repeats([paris], earlier=[parsed]) == 1  # history may hold its arguments parsed
    assert repeats([call("get_weather", "{bad"), call("get_weather", "{worse")]) == 0
    assert repeats([call("get_weather", "{bad"), call("get_weather", "{bad")]) == 1
    assert repeats([paris] * 6) == 3  # clipped
    failed = [
        {"role": "user", "content": "weather in Paris"},
        {"role": "assistant", "content": None, "tool_calls": [paris]},
        {"role": "tool", "tool_call_id": "c_get_weather", "content": '{"error": "timeout"}'},
    ]
    [loaded] = load_cases([case([paris], messages=failed)])
    assert repeated_calls(loaded) == 0  # a retry after an error is no repeat
    done = [*failed[:2], {"role": "tool", "tool_call_id": "c_get_weather", "content": "sunny"}]
    [loaded] = load_cases([case([paris], messages=[*done, {"role": "user", "content": "thanks"}])])
    assert repeated_calls(loaded) == 1  # an earlier turn's call, made again after "thanks"
    odd = [
        {"role": "user", "content": "weather in Paris"},
        {"role": "assistant", "content": None, "tool_calls": [{"function": "get_weather"}, 3]},
        {"role": "assistant", "content": None, "tool_calls": 3},
    ]
    [loaded] = load_cases([case([paris], messages=odd)])
    assert repeated_calls(loaded) == 0  # malformed history is read past, not a crash
    block = {"type": "tool_use", "id": "t1", "name": "get_weather",
             "input": {"days": 2, "city": "Paris"}}  # fmt: skip
    anthropic = [failed[0], {"role": "assistant", "content": [block]}]
    [loaded] = load_cases([case([paris], messages=anthropic)])
    assert repeated_calls(loaded) == 1  # history in any provider's shape


def test_required_values_the_conversation_never_gave() -> None:
    from judge.checks._grounding import guessed_required

    def guessed(arguments: dict[str, Any], said: str = "weather in Paris") -> int:
        messages = [{"role": "user", "content": said}]
        [loaded] = load_cases([case([call("get_weather", arguments)], messages=messages)])
        return guessed_required(loaded)

    assert guessed({"city": "Paris", "days": 9}) == 0  # days is optional: perhaps a default
    assert guessed({"city": "Lyon", "days": 9}) == 1  # city is required and nobody said Lyon
    assert guessed({"city": "Lyon"}, said="weather please") == 1
    assert guessed({"city": "Paris"}, said="weather please") == 1
    assert guessed({}, said="weather please") == 0  # nothing made up, nothing counted


def test_how_well_the_best_tool_fits_a_reply_without_calls() -> None:
    from judge.checks._grounding import best_fit

    tools = [
        {"type": "function", "function": {"name": "get_weather", "description": "The forecast"}},
        {"type": "function", "function": {"name": "book_flight", "description": "Book seats"}},
    ]

    def fit(said: str) -> int:
        messages = [{"role": "user", "content": said}]
        [loaded] = load_cases([case([], tools=tools, messages=messages)])
        return best_fit(loaded)

    assert fit("What is the forecast for the weather in Paris?") == 2  # weather, forecast
    assert fit("Book two seats on a flight") == 3  # book, seats, flight (two is no stop word)
    assert fit("Tell me a joke") == 0  # no tool fits: declining may be right
    many = " ".join(["book seats flight"] * 3) + " " + "booking"
    assert fit(many) == 3  # stems, each counted once
    words = "alpha bravo charlie delta echo foxtrot golf hotel"
    wide = [{"type": "function", "function": {"name": "spell", "description": words}}]
    [loaded] = load_cases([case([], tools=wide, messages=[{"role": "user", "content": words}])])
    assert best_fit(loaded) == 6  # clipped


def test_options_the_user_did_not_say_where_they_said_another() -> None:
    from judge.checks._grounding import unsaid_options

    units = {"type": "string", "enum": ["celsius", "fahrenheit"]}
    rooms = {"type": "string", "enum": ["living_room", "bedroom", "all"]}
    schema = {"type": "object", "properties": {"unit": units, "room": rooms}}
    tools = [tool("set_heat", schema), tool("get_weather", WEATHER)]

    def unsaid(said: str, *arguments: dict[str, Any]) -> tuple[int, ...]:
        calls = [call("set_heat", a) for a in arguments]
        messages = [{"role": "user", "content": said}]
        [loaded] = load_cases([case(calls, tools=tools, messages=messages)])
        return unsaid_options(loaded)

    assert unsaid("Heat to 70 in Fahrenheit", {"unit": "celsius"}) == (1,)
    assert unsaid("Heat to 70 in Fahrenheit", {"unit": "fahrenheit"}) == (0,)
    assert unsaid("Heat to 20 degrees", {"unit": "celsius"}) == (0,)  # no option said
    assert unsaid("Heat the living room", {"room": "bedroom"}) == (1,)  # options as words
    assert unsaid("Heat the living room", {"room": "living_room"}) == (0,)
    # Another call uses the option said: each call has its own, no contradiction.
    both = unsaid(
        "Heat the bedroom and the living room", {"room": "bedroom"}, {"room": "living_room"}
    )
    assert both == (0, 0)
    assert unsaid("Heat all of it in celsius", {"room": "bedroom", "unit": "celsius"}) == (0,)
    assert unsaid("Heat in celsius, the bedroom", {"unit": "fahrenheit", "room": "bedroom"}) == (1,)
    weather = [call("get_weather", {"city": "Paris", "units": "f"})]
    messages = [{"role": "user", "content": "weather in Paris in c please"}]
    [loaded] = load_cases([case(weather, messages=messages)])
    assert unsaid_options(loaded) == (1,)


def test_values_of_a_record_that_fits_the_user_worse_than_another() -> None:
    from judge.checks._grounding import other_records

    listed: Any = (
        '[{"id": "TOR-71", "name": "Marco Rossi"}, {"id": "TOR-72", "name": "Maria Russo"}]'
    )

    def picked(request_id: str, said: str = "Approve Marco's time-off request") -> tuple[int, ...]:
        messages = [
            {"role": "user", "content": said},
            {"role": "assistant", "content": None, "tool_calls": [call("list_requests", {})]},
            {"role": "tool", "tool_call_id": "c_list_requests", "content": listed},
        ]
        approve = [call("approve", {"request_id": request_id})]
        [loaded] = load_cases([case(approve, tools=[tool("approve")], messages=messages)])
        return other_records(loaded)

    assert picked("TOR-72") == (1,)  # Maria's, where the user named Marco
    assert picked("TOR-71") == (0,)
    assert picked("TOR-72", said="Approve Maria Russo's request") == (0,)
    assert picked("TOR-72", said="Approve the second request") == (0,)  # nothing to tell them by
    assert picked("TOR-99") == (0,)  # from no record
    listed = (
        '[{"id": "TOR-71", "name": "Marco Rossi", "state": "pending"},'
        ' {"id": "TOR-72", "name": "Maria Russo", "state": "pending"}]'
    )
    assert picked("pending") == (0,)  # a value both records have tells them apart from none
    assert picked("TOR-72") == (1,)
    records = [{"id": "TOR-71", "name": "Marco Rossi"}, {"id": "TOR-72", "name": "Maria Russo"}]
    as_text = json.dumps(records)
    for given in (records, {"requests": records}, [{"type": "text", "text": as_text}]):
        listed = given  # already parsed, or in text parts
        assert picked("TOR-72") == (1,)
    for content in ("not json", "7", '{"a": [1, 2]}', "[" * 5000):
        listed = content
        assert picked("TOR-72") == (0,)  # no list of records: no evidence, no crash
