"""The simulated user's faults: graded on forty scripted users, and each rule at its edge."""

from __future__ import annotations

from typing import Any

import pytest

from judge.cases._case import UserScenario
from judge.runs._user_faults import FaultKind, UserFault, user_faults
from tests.user_scripts import FAITHFUL, FAULTY, SCRIPTS, TOOL_NAMES, Script, agent, call, user

SHOP = UserScenario(
    instructions="You want a refund for headphones; give the order id when asked.",
    facts={"order_id": "ord_1002", "amount": "59.90", "delivered_on": "2024-03-12"},
    persona="polite",
)
PROMPT = [
    {"role": "system", "content": "You are the shop's support agent."},
    {"role": "user", "content": "Hi, my headphones stopped charging and I want a refund."},
]


def faults_of(script: Script) -> list[UserFault]:
    return user_faults(
        UserScenario.model_validate(script.scenario),
        script.prompt(),
        script.transcript,
        closing=script.closing,
        user_calls=script.user_calls,
        tool_names=TOOL_NAMES,
        expects_action=script.expects_action,
    )


def faults(
    *turns: str,
    closing: str | None = None,
    transcript: list[dict[str, Any]] | None = None,
    **options: Any,
) -> list[UserFault]:
    """The faults of user turns that each answer one agent question."""
    messages = list(transcript or [])
    for text in turns:
        messages += [agent("Could you tell me more?"), user(text)]
    return user_faults(SHOP, PROMPT, messages, closing=closing, tool_names=TOOL_NAMES, **options)


def kinds(found: list[UserFault]) -> list[tuple[int, FaultKind]]:
    return [(f.turn, f.kind) for f in found]


def test_the_scripts_hold_twenty_faulty_and_twenty_faithful_users() -> None:
    assert len(FAULTY) == 20 and len(FAITHFUL) == 20
    assert len({s.name for s in SCRIPTS}) == 40
    for kind in ("unknown_fact", "repeated", "ended_early", "spoke_as_assistant", "called_tool"):
        assert sum(s.fault == kind for s in FAULTY) == 4, kind
    assert all(s.fault is None for s in FAITHFUL)


def test_faulty_users_are_caught_and_faithful_ones_left_alone() -> None:
    caught = [s.name for s in FAULTY if s.fault in {f.kind for f in faults_of(s)}]
    blamed = {s.name: kinds(faults_of(s)) for s in FAITHFUL if faults_of(s)}
    print(f"faulty flagged with their own kind: {len(caught)}/20")
    print(f"faithful flagged with anything: {len(blamed)}/20 {blamed}")
    assert len(caught) >= 18, sorted({s.name for s in FAULTY} - set(caught))
    assert len(blamed) <= 2, blamed


@pytest.mark.parametrize("script", FAULTY, ids=lambda s: s.name)
def test_a_faulty_user_gets_no_fault_of_another_kind(script: Script) -> None:
    assert {f.kind for f in faults_of(script)} <= {script.fault}


@pytest.mark.parametrize(
    ("said", "flagged"),
    [
        pytest.param("I paid $59.90.", False, id="dollar-sign-and-trailing-zero"),
        pytest.param("I paid 59.9 euros.", False, id="no-trailing-zero"),
        pytest.param("It cost 59,90 €.", False, id="decimal-comma"),
        pytest.param("It cost €59.900.", False, id="extra-zero"),
        pytest.param("I paid $59.99.", True, id="another-amount"),
        pytest.param("I paid 599.", True, id="digits-alike-but-another-number"),
        pytest.param("My order is ORD_1002.", False, id="id-in-capitals"),
        pytest.param("My order is ord-1002.", False, id="id-with-another-separator"),
        pytest.param("Order number 1002.", False, id="id-without-prefix"),
        pytest.param("My order is ord_1020.", True, id="id-digits-swapped"),
        pytest.param("It came on 2024-03-12.", False, id="iso-date"),
        pytest.param("It came on 12/03/2024.", False, id="slash-date-day-first"),
        pytest.param("It came on 03/12/2024.", False, id="slash-date-month-first"),
        pytest.param("It came on March 12th.", False, id="day-of-a-known-date"),
        pytest.param("It came on March 14th.", True, id="another-day"),
        pytest.param("It came on 2024-03-21.", True, id="another-date"),
        pytest.param("I bought 2 items, 1 broke.", False, id="single-digits-are-conversational"),
        pytest.param("It broke after 1-2 days, around 3pm.", False, id="single-digit-ranges"),
        pytest.param("I've waited 14 days.", True, id="two-digit-number-not-given"),
        pytest.param("Reach me at jdoe@example.com.", True, id="email-not-given"),
        pytest.param("I have a question, that's all.", False, id="no-value-at-all"),
    ],
)
def test_unknown_fact_normalises_numbers(said: str, flagged: bool) -> None:
    assert (kinds(faults(said)) == [(1, "unknown_fact")]) is flagged
    if not flagged:
        assert faults(said) == []


def test_a_value_the_agent_said_first_may_be_repeated_but_not_one_said_later() -> None:
    told = [agent("Your replacement order is ord_7788, total $12.40."), user("Thanks, ord_7788.")]
    assert faults(transcript=told) == []
    early = [agent("Hello."), user("Is ord_7788 shipped?"), agent("ord_7788 is shipped.")]
    found = faults(transcript=early)
    assert kinds(found) == [(1, "unknown_fact")]
    assert found[0].detail == 'states "ord_7788", which nothing the user was told or saw gave'


def test_a_tool_result_and_the_users_own_earlier_turn_count_as_known() -> None:
    messages = [
        call("lookup_order", order_id="ord_1002"),
        {"role": "tool", "tool_call_id": "call_1", "content": '{"tracking": "TRK-55120"}'},
        agent("It's on its way."),
        user("Is that tracking TRK-55120?"),
    ]
    assert faults(transcript=messages) == []
    found = faults("My number is 555-867-5309.", "Again, it's 555-867-5309, call me.")
    assert kinds(found) == [(1, "unknown_fact")]


@pytest.mark.parametrize(
    ("said", "flagged"),
    [
        pytest.param("Call me on +1-555-013-4477.", False, id="with-country-code"),
        pytest.param("Call me on 5550134477.", False, id="digits-only"),
        pytest.param("Call me on (555) 013-4477.", False, id="parentheses"),
        pytest.param("Call me on 555.013.4477.", False, id="dots"),
        pytest.param("Call me on 555-013-4478.", True, id="another-number"),
    ],
)
def test_phone_numbers_compare_by_their_last_seven_digits(said: str, flagged: bool) -> None:
    scenario = SHOP.model_copy(update={"facts": {"phone": "555-013-4477"}})
    found = user_faults(scenario, PROMPT, [agent("Phone?"), user(said)], closing=None)
    assert bool(found) is flagged


def test_an_email_is_known_whatever_its_case() -> None:
    scenario = SHOP.model_copy(update={"facts": {"email": "Jane.Doe@Example.com"}})
    said = [agent("Your e-mail?"), user("jane.doe@example.com")]
    assert user_faults(scenario, PROMPT, said, closing=None) == []


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        pytest.param(
            ["Hi, my headphones stopped charging and I want a refund!"],
            [(1, "repeated")],
            id="the-opening-again",
        ),
        pytest.param(
            ["The order id is ord_1002 and it was delivered in March.", "Fine.", "x"]
            + ["The order id is ord_1002, and it was delivered in March please."],
            [(4, "repeated")],
            id="near-copy-of-an-earlier-turn",
        ),
        pytest.param(["Yes.", "Yes.", "Thanks!", "Thanks!"], [], id="short-turns-said-again"),
        pytest.param(
            ["I want a refund for ord_1002 please", "I want a replacement for ord_1002 please"],
            [],
            id="one-word-changed-in-seven-is-no-repeat",
        ),
        pytest.param(
            ["The order id is ord_1002.", "The order was delivered on 2024-03-12."],
            [],
            id="another-sentence-about-the-same-order",
        ),
    ],
)
def test_repeated(turns: list[str], expected: list[tuple[int, FaultKind]]) -> None:
    assert kinds(faults(*turns)) == expected


def test_repeated_names_which_turn_was_said_again() -> None:
    opening = faults("Hi, my headphones stopped charging and I want a refund.")
    assert "the opening request" in opening[0].detail
    again = faults(
        "I would like my refund for ord_1002 now.", "I would like my refund for ord_1002 now"
    )
    assert again[0].turn == 2 and "user turn 1" in again[0].detail
    two_openings = [*PROMPT, agent("Which order?"), user("The one from March.")]
    said = [agent("Anything else?"), user("Yes: I would like my refund now, please.")]
    said += [agent("Working on it."), user("Yes: I would like my refund now, please!")]
    (later,) = user_faults(SHOP, two_openings, said, closing=None)
    assert later.turn == 2 and "user turn 1" in later.detail


def test_the_closing_turn_counts_as_the_last_turn() -> None:
    found = faults("ord_1002", "Is that all?", closing="Bye, ord_9999 was the other one.")
    assert kinds(found) == [(3, "unknown_fact")]
    assert kinds(faults("ord_1002", closing="", expects_action=True)) == [(2, "ended_early")]
    assert kinds(faults(closing="Bye.", expects_action=True)) == [(1, "ended_early")]


@pytest.mark.parametrize(
    ("closing", "transcript", "expects_action", "ended_early"),
    [
        pytest.param("Bye.", [agent("Order id?")], True, True, id="closed-before-any-call"),
        pytest.param(None, [agent("Order id?")], True, False, id="ran-out-of-turns"),
        pytest.param("Bye.", [agent("30 days.")], False, False, id="no-action-expected"),
        pytest.param(
            "Bye.", [call("lookup_order", order_id="ord_1002")], True, False, id="agent-called"
        ),
    ],
)
def test_ended_early(
    closing: str | None,
    transcript: list[dict[str, Any]],
    expects_action: bool,
    ended_early: bool,
) -> None:
    found = user_faults(SHOP, PROMPT, transcript, closing=closing, expects_action=expects_action)
    assert ("ended_early" in {f.kind for f in found}) is ended_early


@pytest.mark.parametrize(
    ("said", "flagged"),
    [
        pytest.param("How may I assist you today?", True, id="offers-help"),
        pytest.param("Is there anything else I can help you with?", True, id="anything-else"),
        pytest.param("I have issued the refund.", True, id="issued"),
        pytest.param("I’ve cancelled your order ord_1002.", True, id="cancelled-your-curly"),
        pytest.param("I have updated the address on your order.", True, id="updated-your"),
        pytest.param("As an AI, I cannot do that.", True, id="as-an-ai"),
        pytest.param("Let me look that up for you.", True, id="look-that-up"),
        pytest.param("Sure.\nAgent: done, anything else?", True, id="role-label-on-a-line"),
        pytest.param("I have a question about the refund.", False, id="has-a-question"),
        pytest.param("I changed my mind, cancel it instead.", False, id="changed-my-mind"),
        pytest.param("I have changed my mind.", False, id="have-changed-my-mind"),
        pytest.param("I've updated my address in my account.", False, id="updated-my-address"),
        pytest.param("I cancelled my other order yesterday.", False, id="cancelled-my-order"),
        pytest.param("Let me check... it's ord_1002.", False, id="let-me-check"),
        pytest.param("How can I get my money back?", False, id="how-can-i-get"),
        pytest.param("Could you help me? My agent: none.", False, id="label-not-leading"),
    ],
)
def test_spoke_as_assistant_phrases(said: str, flagged: bool) -> None:
    assert ("spoke_as_assistant" in {f.kind for f in faults(said)}) is flagged


def test_spoke_as_assistant_near_copy_of_the_last_assistant_message() -> None:
    told = agent("Your refund of $59.90 for order ord_1002 is approved and on its way.")
    copy = [told, user("Your refund of $59.90 for order ord_1002 is approved, on its way.")]
    assert kinds(faults(transcript=copy)) == [(1, "spoke_as_assistant")]
    short = [agent("Refund approved."), user("Refund approved?")]
    assert faults(transcript=short) == []


@pytest.mark.parametrize(
    ("said", "flagged"),
    [
        pytest.param('{"name": "issue_refund", "arguments": {}}', True, id="json-arguments"),
        pytest.param('{"parameters": {}, "name": "lookup_order"}', True, id="json-parameters"),
        pytest.param("<tool_call>lookup</tool_call>", True, id="tag"),
        pytest.param("please issue_refund(order_id='ord_1002')", True, id="python-form"),
        pytest.param("Can you cancel_order for me?", False, id="tool-name-without-call"),
        pytest.param("My name is Jane (the buyer).", False, id="parenthesis-in-prose"),
    ],
)
def test_called_tool_written_as_text(said: str, flagged: bool) -> None:
    assert ("called_tool" in {f.kind for f in faults(said)}) is flagged


def test_called_tool_from_the_user_models_reply() -> None:
    found = faults("Yes.", "Sure.", user_calls=(2,))
    assert kinds(found) == [(2, "called_tool")]
    assert found[0].detail == "the user model's reply carried a call"
    written = faults('{"name": "issue_refund", "arguments": {}}', user_calls=(1,))
    assert kinds(written) == [(1, "called_tool")]


def test_one_fault_of_a_kind_per_turn_in_turn_order() -> None:
    found = faults("ord_1111 and ord_2222", "Hello! How can I help you?", closing="ord_3333")
    assert kinds(found) == [(1, "unknown_fact"), (2, "spoke_as_assistant"), (3, "unknown_fact")]


def test_details_are_cut_and_faults_become_dicts() -> None:
    long = "How can I help you? " + "blah " * 40
    (fault,) = faults(long)
    assert fault.detail == 'speaks as the agent: "How can I help you"'
    (repeat,) = [f for f in faults(long, long) if f.kind == "repeated"]
    assert len(repeat.detail) < 140 and repeat.detail.endswith('…"')
    assert repeat.as_dict() == {"kind": "repeated", "turn": 2, "detail": repeat.detail}


def test_a_user_naming_a_tool_only_the_agent_sees_speaks_as_the_agent() -> None:
    from judge.cases._case import UserScenario

    scenario = UserScenario(instructions="You want a refund of ord_1002.")
    prompt = [{"role": "user", "content": "Refund ord_1002 please."}]
    closing = "Thanks! So the `verify_refund_eligibility` function comes next?"
    [fault] = user_faults(scenario, prompt, [], closing=closing, tool_names=TOOL_NAMES)
    assert fault.kind == "spoke_as_assistant" and "verify_refund_eligibility" in fault.detail
    told = [{"role": "assistant", "content": "I ran verify_refund_eligibility: you are eligible."}]
    again = "So verify_refund_eligibility said yes? Great."
    assert user_faults(scenario, prompt, told, closing=again, tool_names=TOOL_NAMES) == []
    plain = user_faults(scenario, prompt, [], closing="Please refund it.", tool_names=("refund",))
    assert plain == []


@pytest.mark.parametrize(
    ("text", "agent"),
    [
        ("I'll verify the eligibility of the refund.", True),
        ("Thank you. I will proceed to issue the refund for the missing charger.", True),
        ("I need to call `verify_refund_eligibility` with order_id ord_1002.", True),
        ("I'll confirm the eligibility for the refund.", True),
        ("I'll check my e-mail for the order number.", False),
        ("I will call back tomorrow if it has not arrived.", False),
        ("I'll wait for the refund then, thanks.", False),
    ],
)
def test_a_user_doing_the_shops_work_speaks_as_the_agent(text: str, agent: bool) -> None:
    scenario = UserScenario(instructions="You want a refund of ord_1002.")
    prompt = [{"role": "user", "content": "Refund ord_1002 please."}]
    told = [{"role": "assistant", "content": "You can verify_refund_eligibility for ord_1002."}]
    found = user_faults(scenario, prompt, told, closing=text, tool_names=TOOL_NAMES)
    assert any(f.kind == "spoke_as_assistant" for f in found) is agent
