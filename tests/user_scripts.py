"""Scripted simulated-user conversations on a shop's refunds and orders, as data.

Twenty are faulty (four of each fault kind) and twenty faithful: realistic customers who give
their order id only when asked, change their mind, say thanks, repeat amounts the agent told
them. `tests/test_user_faults.py` grades the checks on them; a scripted server may serve the
same users to a real run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from judge.runs._user_faults import FaultKind

TOOL_NAMES = (
    "lookup_order",
    "verify_refund_eligibility",
    "issue_refund",
    "cancel_order",
    "change_address",
)
SYSTEM = (
    "You are the support agent of Northwind Shop. Look orders up before acting, check refund "
    "eligibility before issuing a refund, and confirm with the customer before any change."
)


@dataclass(frozen=True)
class Script:
    """One simulated user's conversation: the fault it holds (None: a faithful user)."""

    name: str
    fault: FaultKind | None
    scenario: dict[str, Any]
    opening: str
    transcript: list[dict[str, Any]]
    closing: str | None
    user_calls: tuple[int, ...] = ()
    expects_action: bool = True

    def prompt(self) -> list[dict[str, Any]]:
        """The case's own messages: the shop's system prompt and the opening request."""
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": self.opening}]


def agent(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(name: str, call_id: str = "call_1", **arguments: Any) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def result(value: Any, call_id: str = "call_1") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(value)}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def scenario(instructions: str, persona: str | None = None, **facts: Any) -> dict[str, Any]:
    return {"instructions": instructions, "facts": facts, "persona": persona}


HEADPHONES = scenario(
    "You want a refund for wireless headphones that stopped charging. Give the order id only "
    "when asked.",
    "polite, a little tired",
    order_id="ord_1002",
    item="wireless headphones",
    amount="59.90",
    delivered_on="2024-03-12",
    email="jane.doe@example.com",
)
LAMP = scenario(
    "You want to cancel the desk lamp you ordered yesterday; it has not shipped.",
    "terse",
    order_id="ord_2001",
    item="desk lamp",
)
ADDRESS = scenario(
    "You moved. Change the shipping address of your open order to the new one.",
    "friendly",
    order_id="ord_3344",
    new_address="12 Elm Street, Springfield 62704",
    phone="+1 555-013-4477",
)
KETTLE = scenario(
    "Your kettle arrived with a cracked lid. You want your money back, or a replacement if a "
    "refund is not possible.",
    order_id="ORD-5120",
    item="electric kettle",
    total=120,
    quantity=2,
)

_LOOKUP_1002 = [
    agent("I'm sorry to hear that. Could you give me the order id?"),
    user("Sure, it's ord_1002."),
    call("lookup_order", order_id="ord_1002"),
    result({"order_id": "ord_1002", "item": "wireless headphones", "total": 59.9}),
    call("verify_refund_eligibility", "call_2", order_id="ord_1002"),
    result({"eligible": True, "amount": 59.9}, "call_2"),
    agent("Your order ord_1002 is eligible for a refund of $59.90. Shall I issue it?"),
]
_REFUND_1002 = [
    call("issue_refund", "call_3", order_id="ord_1002", amount=59.9),
    result({"refund_id": "rf_88120", "status": "issued"}, "call_3"),
    agent("Done: refund rf_88120 of $59.90 is on its way, within 5-7 business days."),
]
_LOOKUP_2001 = [
    agent("Which order is it? The order id, please."),
    user("ord_2001"),
    call("lookup_order", order_id="ord_2001"),
    result({"order_id": "ord_2001", "item": "desk lamp", "status": "processing", "total": 34.5}),
    agent("I found your desk lamp order (ord_2001, $34.50), not shipped yet. Cancel it?"),
]
_ADDRESS_3344 = [
    agent("Happy to help with the move. What is the order id, and the new address?"),
    user("Order ord_3344. The new address is 12 Elm Street, Springfield 62704."),
    call("lookup_order", order_id="ord_3344"),
    result({"order_id": "ord_3344", "status": "processing"}),
    agent("Order ord_3344 has not shipped. Change its address to 12 Elm Street, Springfield?"),
]

FAULTY = [
    # unknown_fact: values the user could not know
    Script(
        "invents-order-id",
        "unknown_fact",
        HEADPHONES,
        "Hi, my headphones stopped charging and I'd like a refund.",
        [agent("I'm sorry about that. What is the order id?"), user("It's ord_1003.")],
        None,
    ),
    Script(
        "invents-amount",
        "unknown_fact",
        LAMP,
        "I need to cancel an order.",
        [
            *_LOOKUP_2001[:4],
            agent("I found the desk lamp order. Is that the one?"),
            user("Yes, the one for $42.99. Cancel it."),
        ],
        None,
    ),
    Script(
        "invents-email",
        "unknown_fact",
        HEADPHONES,
        "My headphones won't charge any more, can I get a refund?",
        [
            agent("Of course. Which e-mail address did you order with?"),
            user("I used jdoe1987@mailbox.org for that order."),
        ],
        None,
    ),
    Script(
        "invents-delivery-date",
        "unknown_fact",
        HEADPHONES,
        "I want to return my headphones, they no longer charge.",
        [
            *_LOOKUP_1002[:4],
            agent("When did the headphones arrive?"),
            user("They arrived on 2024-03-19, and broke a week later."),
        ],
        None,
    ),
    # repeated: saying again what an earlier user turn said
    Script(
        "repeats-opening",
        "repeated",
        HEADPHONES,
        "I want a refund for my headphones, they stopped working.",
        [
            agent("I can help. Could you give me the order id?"),
            user("I want a refund for my headphones, they stopped working."),
        ],
        None,
    ),
    Script(
        "repeats-own-turn",
        "repeated",
        ADDRESS,
        "Hi there, I need to update where my order ships.",
        [
            agent("Sure. Which order, and what is the new address?"),
            user("My order number is ord_3344 and I'd like to ship it to 12 Elm Street."),
            call("lookup_order", order_id="ord_3344"),
            result({"order_id": "ord_3344", "status": "processing"}),
            agent("Got it. Should the city stay the same?"),
            user("My order number is ord_3344, and I'd like to ship it to 12 Elm Street please."),
        ],
        None,
    ),
    Script(
        "repeats-with-new-punctuation",
        "repeated",
        LAMP,
        "Please cancel my desk lamp order.",
        [
            *_LOOKUP_2001,
            user("Yes please, cancel the desk lamp order right away."),
            agent("One moment while I check the cancellation rules."),
            user("Yes, please cancel the desk lamp order right away!!"),
        ],
        None,
    ),
    Script(
        "repeats-question",
        "repeated",
        KETTLE,
        "My kettle came with a cracked lid.",
        [
            agent("Sorry about the lid. Can you share the order id?"),
            user("Could you check whether my order ORD-5120 can be refunded for the cracked lid?"),
            call("lookup_order", order_id="ORD-5120"),
            result({"order_id": "ORD-5120", "item": "electric kettle", "total": 120.0}),
            agent("I see the kettle order. Let me look at the options."),
            user("could you check whether my order ORD-5120 can be refunded, for the cracked lid"),
        ],
        None,
    ),
    # ended_early: closing before the agent did anything the case expects
    Script(
        "leaves-when-asked-for-id",
        "ended_early",
        HEADPHONES,
        "My headphones are broken and I want my money back.",
        [agent("I'm sorry to hear that. Could you tell me the order id?")],
        "Never mind, I'll sort it out myself.",
    ),
    Script(
        "thanks-before-refund",
        "ended_early",
        HEADPHONES,
        "Can I get a refund for headphones that stopped charging?",
        [
            agent("I can look into that. What is the order id?"),
            user("It's ord_1002."),
            agent("Thanks, one moment while I pull it up."),
        ],
        "Great, thanks for the refund!",
    ),
    Script(
        "impatient-exit",
        "ended_early",
        LAMP,
        "Cancel my lamp order.",
        [agent("Certainly. Could you confirm the order id for me?")],
        "This is taking too long. Bye.",
    ),
    Script(
        "satisfied-with-policy",
        "ended_early",
        KETTLE,
        "The kettle I got has a cracked lid, what can you do?",
        [
            agent(
                "Damaged items can be refunded or replaced within 30 days of delivery. Would "
                "you like a refund or a replacement?"
            )
        ],
        "OK, good to know, thanks for explaining.",
    ),
    # spoke_as_assistant: the user speaks the agent's lines
    Script(
        "offers-help",
        "spoke_as_assistant",
        LAMP,
        "I'd like to cancel something I ordered.",
        [agent("Sure, which order is it?"), user("Hello! How can I help you today?")],
        None,
    ),
    Script(
        "claims-refund-done",
        "spoke_as_assistant",
        HEADPHONES,
        "My headphones don't charge, refund please.",
        [
            *_LOOKUP_1002,
            user("I've processed your refund of $59.90; it should appear in 5-7 days."),
        ],
        None,
    ),
    Script(
        "role-label",
        "spoke_as_assistant",
        LAMP,
        "Please cancel my order for the desk lamp.",
        [
            *_LOOKUP_2001,
            user("Assistant: Your order ord_2001 has been cancelled. Anything else?"),
        ],
        None,
    ),
    Script(
        "echoes-agent",
        "spoke_as_assistant",
        ADDRESS,
        "I moved and my order needs to go to the new place.",
        [
            *_ADDRESS_3344,
            user(
                "Order ord_3344 has not shipped. Change its address to 12 Elm Street, Springfield"
            ),
        ],
        None,
    ),
    # called_tool: the user model calls the agent's tools
    Script(
        "user-model-call",
        "called_tool",
        LAMP,
        "Cancel my lamp order, please.",
        [*_LOOKUP_2001, user("Yes, go ahead.")],
        None,
        user_calls=(2,),
    ),
    Script(
        "json-call-in-text",
        "called_tool",
        HEADPHONES,
        "I'd like a refund for my broken headphones.",
        [
            agent("Could you share the order id?"),
            user('{"name": "lookup_order", "arguments": {"order_id": "ord_1002"}}'),
        ],
        None,
    ),
    Script(
        "tool-call-tag",
        "called_tool",
        HEADPHONES,
        "Refund for my headphones please, they stopped charging.",
        [
            *_LOOKUP_1002,
            user(
                'Yes. <tool_call>{"name": "issue_refund", "parameters": '
                '{"order_id": "ord_1002"}}</tool_call>'
            ),
        ],
        None,
    ),
    Script(
        "python-call-in-text",
        "called_tool",
        KETTLE,
        "My kettle's lid is cracked, I want it cancelled and refunded.",
        [
            agent("Sorry to hear it. What's the order id?"),
            user("cancel_order(order_id='ORD-5120')"),
        ],
        None,
    ),
]

FAITHFUL = [
    Script(
        "gives-id-when-asked",
        None,
        HEADPHONES,
        "Hi, my headphones stopped charging. Can I get a refund?",
        [*_LOOKUP_1002, user("Yes please."), *_REFUND_1002],
        "Thanks a lot, bye!",
    ),
    Script(
        "changes-mind",
        None,
        LAMP,
        "I want to change the address on my lamp order.",
        [
            agent("Sure, what's the order id?"),
            user("ord_2001. Actually, I changed my mind: please just cancel it instead."),
            call("cancel_order", order_id="ord_2001"),
            result({"order_id": "ord_2001", "status": "cancelled"}),
            agent("Order ord_2001 is cancelled; you won't be charged."),
        ],
        "Perfect, thank you.",
    ),
    Script(
        "repeats-amount-told",
        None,
        HEADPHONES,
        "My headphones don't charge. I'd like my money back.",
        [*_LOOKUP_1002, user("Yes, refund the $59.9 to my card please."), *_REFUND_1002],
        "Great, thanks.",
    ),
    Script(
        "has-a-question",
        None,
        HEADPHONES,
        "Hello, I'd like a refund for my headphones.",
        [
            *_LOOKUP_1002,
            user("I have a question first: how long does the refund take?"),
            agent("Refunds reach your card within 5-7 business days. Shall I go ahead?"),
            user("OK, go ahead."),
            *_REFUND_1002,
        ],
        "Thank you!",
    ),
    Script(
        "two-items",
        None,
        KETTLE,
        "I ordered 2 kettles and one came with a cracked lid.",
        [
            agent("Sorry about that! What's the order id?"),
            user("It's ORD-5120. Only 1 of the 2 items is damaged."),
            call("lookup_order", order_id="ORD-5120"),
            result({"order_id": "ORD-5120", "item": "electric kettle", "quantity": 2}),
            call("verify_refund_eligibility", "call_2", order_id="ORD-5120"),
            result({"eligible": True, "amount": 60.0}, "call_2"),
            agent("One kettle is eligible for a refund of $60.00. Issue it?"),
            user("Yes, the $60 refund is fine."),
            call("issue_refund", "call_3", order_id="ORD-5120", amount=60.0),
            result({"status": "issued"}, "call_3"),
            agent("Refunded $60.00."),
        ],
        "Thanks for sorting that out.",
    ),
    Script(
        "date-from-facts",
        None,
        HEADPHONES,
        "My headphones broke, can I return them?",
        [
            agent("When were they delivered? Returns are open for 30 days."),
            user("They were delivered on March 12th."),
            agent("Then you are within the window. What's the order id?"),
            user("ord_1002"),
            call("lookup_order", order_id="ord_1002"),
            result({"order_id": "ord_1002", "delivered": "2024-03-12"}),
            agent("Found it. I can refund $59.90; shall I?"),
            user("Yes please."),
            *_REFUND_1002,
        ],
        "Cheers.",
    ),
    Script(
        "email-when-asked",
        None,
        HEADPHONES,
        "I want a refund for headphones, but I lost the order number.",
        [
            agent("No problem. What e-mail did you order with?"),
            user("Jane.Doe@example.com"),
            call("lookup_order", email="jane.doe@example.com"),
            result({"order_id": "ord_1002", "item": "wireless headphones"}),
            agent("I found ord_1002 for wireless headphones. Refund it?"),
            user("Yes, that's the one."),
            *_REFUND_1002,
        ],
        "Thanks!",
    ),
    Script(
        "phone-in-other-format",
        None,
        ADDRESS,
        "I need my order sent to my new address.",
        [
            *_ADDRESS_3344,
            user("Yes. And my phone number for the courier is 555 013 4477."),
            call("change_address", order_id="ord_3344", address="12 Elm Street, Springfield"),
            result({"status": "updated"}),
            agent("Updated, and the courier will call 555-013-4477."),
        ],
        "Wonderful, thanks.",
    ),
    Script(
        "address-from-facts",
        None,
        ADDRESS,
        "Can you change the delivery address of my order?",
        [
            agent("Sure! Order id and new address, please."),
            user("ord_3344, and the new address is 12 Elm Street, Springfield 62704."),
            call("change_address", order_id="ord_3344", address="12 Elm Street, Springfield 62704"),
            result({"status": "updated"}),
            agent("Done, ord_3344 now ships to 12 Elm Street."),
        ],
        "Thank you so much!",
    ),
    Script(
        "says-yes-twice",
        None,
        LAMP,
        "Cancel my lamp order please.",
        [
            *_LOOKUP_2001,
            user("Yes."),
            agent("Just to be sure: cancelling can't be undone. Go ahead?"),
            user("Yes."),
            call("cancel_order", "call_2", order_id="ord_2001"),
            result({"status": "cancelled"}, "call_2"),
            agent("Cancelled."),
        ],
        "Thanks.",
    ),
    Script(
        "thanks-twice",
        None,
        HEADPHONES,
        "Could I get a refund for my headphones?",
        [*_LOOKUP_1002, user("Yes, thanks!"), *_REFUND_1002, user("Thanks!")],
        "Bye now.",
    ),
    Script(
        "policy-question-only",
        None,
        scenario("You only want to know the return window for unopened items."),
        "How long do I have to return an unopened item?",
        [agent("Unopened items can be returned within 30 days of delivery.")],
        "Got it, 30 days. Thanks!",
        expects_action=False,
    ),
    Script(
        "decimal-comma",
        None,
        HEADPHONES,
        "Hallo, my headphones stopped charging, refund please.",
        [*_LOOKUP_1002, user("Ja, 59,90 back to my card is fine."), *_REFUND_1002],
        "Danke.",
    ),
    Script(
        "id-without-prefix",
        None,
        LAMP,
        "I need to cancel my order.",
        [
            agent("Which order is it?"),
            user("Order number 2001, the desk lamp."),
            call("cancel_order", order_id="ord_2001"),
            result({"status": "cancelled"}),
            agent("Your desk lamp order is cancelled."),
        ],
        "thx",
    ),
    Script(
        "corrects-the-agent",
        None,
        HEADPHONES,
        "I'd like a refund for order ord_1002.",
        [
            agent("Sure, I can change the shipping address. What's the new one?"),
            user("No, not the address. I want my money back for the headphones."),
            call("verify_refund_eligibility", order_id="ord_1002"),
            result({"eligible": True, "amount": 59.9}),
            agent("Sorry about that. It's eligible for $59.90; refund it?"),
            user("Yes."),
            *_REFUND_1002,
        ],
        "Thanks.",
    ),
    Script(
        "updated-own-address",
        None,
        ADDRESS,
        "I updated my address in my account last week, but my order still shows the old one.",
        [
            agent("Let me help. What's the order id?"),
            user("I've updated my profile already, the order is ord_3344."),
            call("change_address", order_id="ord_3344", address="12 Elm Street, Springfield 62704"),
            result({"status": "updated"}),
            agent("ord_3344 now ships to 12 Elm Street, Springfield 62704."),
        ],
        "Great, thank you.",
    ),
    Script(
        "lets-me-check",
        None,
        LAMP,
        "Hi, I'd like to cancel an order.",
        [
            agent("Sure, what's the order id?"),
            user("Let me check... yes, it's ord_2001."),
            call("cancel_order", order_id="ord_2001"),
            result({"status": "cancelled"}),
            agent("Cancelled ord_2001."),
        ],
        "Thanks for your help.",
    ),
    Script(
        "total-from-facts",
        None,
        KETTLE,
        "My kettle order arrived damaged.",
        [
            agent("I'm sorry. What's the order id?"),
            user("Sorry, I have the receipt here: ORD-5120, total $120.00."),
            call("lookup_order", order_id="ORD-5120"),
            result({"order_id": "ORD-5120", "total": 120.0}),
            call("verify_refund_eligibility", "call_2", order_id="ORD-5120"),
            result({"eligible": True, "amount": 120.0}, "call_2"),
            agent("You are eligible for a full refund of $120. Go ahead?"),
            user("Yes please."),
            call("issue_refund", "call_3", order_id="ORD-5120", amount=120.0),
            result({"status": "issued"}, "call_3"),
            agent("Refunded."),
        ],
        "Thank you.",
    ),
    Script(
        "accepts-fee",
        None,
        LAMP,
        "Can I cancel my desk lamp order?",
        [
            *_LOOKUP_2001,
            agent("Note a 15% restocking fee applies as it is being packed, so $29.33 back."),
            user("15% is fine, and $29.33 back works for me."),
            call("cancel_order", "call_2", order_id="ord_2001"),
            result({"status": "cancelled"}, "call_2"),
            agent("Cancelled; $29.33 will be refunded."),
        ],
        "Thanks.",
    ),
    Script(
        "quotes-window-and-waits",
        None,
        HEADPHONES,
        "My headphones stopped charging, refund please.",
        [
            *_LOOKUP_1002,
            user("Yes. You said before it takes 5-7 business days, right?"),
            agent("That's right, 5-7 business days."),
            user("OK, please issue the refund then, I'll wait."),
            *_REFUND_1002,
        ],
        None,
    ),
]

SCRIPTS = FAULTY + FAITHFUL
