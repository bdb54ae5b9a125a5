"""The simulated user's own mistakes in an agent run, named so they are not blamed on the agent.

Each check is cheap and deterministic. Turns are the simulated user's messages after the case's
prompt, from 1; the closing turn (the one that wrote the stop token), when present, is the last.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, get_args

from judge.cases._case import UserScenario

FaultKind = Literal[
    "unknown_fact", "repeated", "ended_early", "spoke_as_assistant", "called_tool",
    "said_nothing", "judge",
]  # fmt: skip
"""The code checks' kinds; `said_nothing`, a user model that replied with nothing; `judge`,
the judge's answer to its one question per run."""
_KINDS: tuple[FaultKind, ...] = get_args(FaultKind)


@dataclass(frozen=True)
class UserFault:
    """One mistake of the simulated user."""

    kind: FaultKind
    turn: int
    """1-based index among the simulated user turns (the closing turn is the last one)."""
    detail: str
    """A short sentence saying what was wrong, quoting the offending value or phrase."""

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "turn": self.turn, "detail": self.detail}


def user_faults(
    scenario: UserScenario,
    prompt: Sequence[dict[str, Any]],
    transcript: Sequence[dict[str, Any]],
    *,
    closing: str | None,
    user_calls: Sequence[int] = (),
    tool_names: Collection[str] = (),
    expects_action: bool = False,
) -> list[UserFault]:
    """The simulated user's faults in one run, in turn order, one of each kind a turn at most.
    `prompt` is the case's own messages, `transcript` what the run added after them; `closing`
    the closing turn's text, stop token removed (None when the user did not end the run);
    `user_calls` the turns whose user-model reply carried tool calls."""
    known = _Known()
    known.add(_strings([scenario.instructions, scenario.persona, scenario.facts, *prompt]))
    told = [_text(m) for m in prompt if m.get("role") == "user"]
    opening, assistant = len(told), ""
    agent_said: list[str] = []
    faults: list[UserFault] = []

    def check(text: str) -> None:
        written = _written_call(text, tool_names)  # a call names its tool: that is the fault
        details: dict[FaultKind, str | None] = {
            "unknown_fact": known.unknown(text),
            "repeated": _repeats(text, told, opening),
            "spoke_as_assistant": _agent_phrase(text, assistant)
            or (None if written else _tool_named(text, tool_names, agent_said)),
            "called_tool": written,
        }
        turn = len(told) - opening + 1
        faults.extend(UserFault(k, turn, d) for k, d in details.items() if d is not None)
        told.append(text)

    for message in transcript:
        if message.get("role") == "user":
            check(_text(message))
        elif message.get("role") == "assistant" and _text(message).strip():
            assistant = _text(message)
            agent_said.append(assistant)
        known.add(_strings(message))  # the user may say again what anyone said before
    if closing is not None:
        check(closing)
        acted = any(m.get("role") == "assistant" and m.get("tool_calls") for m in transcript)
        if expects_action and not acted:
            detail = "ended the conversation before the agent made any call the case expects"
            faults.append(UserFault("ended_early", len(told) - opening, detail))
    for turn in sorted(set(user_calls) - {f.turn for f in faults if f.kind == "called_tool"}):
        faults.append(UserFault("called_tool", turn, "the user model's reply carried a call"))
    return sorted(faults, key=lambda f: (f.turn, _KINDS.index(f.kind)))


_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_TOKEN = re.compile(r"[\w$€£#.,:/+-]*\d[\w$€£#.,:/+-]*")
_SUFFIX = re.compile(r"(?<=\d)(?:st|nd|rd|th|am|pm)$")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_DECIMAL_COMMA = re.compile(r"\d+,\d{1,2}")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_ISO_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_SLASH_DATE = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})")


class _Known:
    """The specific values the user may know: e-mail addresses, and tokens that carry a digit
    in their normal forms, with the parts of compound ones (`2024-03-12` gives `12` too)."""

    def __init__(self) -> None:
        self.emails: set[str] = set()
        self.forms: set[str] = set()

    def add(self, texts: Iterator[str]) -> None:
        for text in texts:
            self.emails |= {e.lower() for e in _EMAIL.findall(text)}
            for token in _TOKEN.findall(_EMAIL.sub(" ", text)):
                self.forms |= _forms(token)
                for part in re.split(r"[-_/.:,]+", token):
                    self.forms |= _forms(part)

    def unknown(self, text: str) -> str | None:
        """Names the first value in `text` the user could not know. A token whose digit groups
        are all single digits ("2 items", "1-2 days", "3pm") is plainly conversational."""
        emails = [str(e) for e in _EMAIL.findall(text) if str(e).lower() not in self.emails]
        tokens = [str(t).strip(".,:/-+") for t in _TOKEN.findall(_EMAIL.sub(" ", text))]
        tokens = [t for t in tokens if t and not _conversational(t) and not _forms(t) & self.forms]
        if values := emails + tokens:
            return f"states {_quote(values[0])}, which nothing the user was told or saw gave"
        return None


def _conversational(token: str) -> bool:
    bare = _SUFFIX.sub("", token.lower().lstrip("$€£#"))
    return not re.search(r"[a-z_]", bare) and all(len(g) == 1 for g in re.findall(r"\d+", bare))


def _forms(token: str) -> set[str]:
    """A token's normal forms: numbers without currency signs, thousands separators or trailing
    zeros (`$59.90`, `59,90` and `59.9` agree); dates by day (a slash date read both ways);
    phone-like digit runs by their last seven digits; ids without case or separators."""
    token = _SUFFIX.sub("", token.strip(".,:/-+").lower().lstrip("$€£#"))
    if not token:
        return set()
    if _THOUSANDS.fullmatch(token):
        token = token.replace(",", "")
    elif _DECIMAL_COMMA.fullmatch(token):
        token = token.replace(",", ".")
    digits = re.sub(r"\D", "", token)
    phone = {"tel:" + digits[-7:]} if len(digits) >= 7 else set()
    if _NUMBER.fullmatch(token):
        return {"n:" + format(Decimal(token).normalize(), "f")} | (set() if "." in token else phone)
    if match := _ISO_DATE.fullmatch(token):
        return {f"d:{int(match[1])}-{int(match[2])}-{int(match[3])}"}
    if match := _SLASH_DATE.fullmatch(token):
        year = int(match[3]) + (2000 if len(match[3]) == 2 else 0)
        return {f"d:{year}-{int(a)}-{int(b)}" for a, b in [match.group(1, 2), match.group(2, 1)]}
    if phone and re.fullmatch(r"[\d\s().+-]+", token):
        return phone
    return {"id:" + re.sub(r"[-_\s]", "", token)}


def _lower(text: str) -> str:
    return text.lower().replace("\u2019", "'")


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_']+", _lower(text))


def _jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    return len(set(a) & set(b)) / max(1, len(set(a) | set(b)))


def _repeats(text: str, told: Sequence[str], opening: int) -> str | None:
    """Names the earlier user turn `text` says again (the opening request is the first
    `opening` of `told`). Turns under four words ("yes", "thanks") are never repeats: people
    say them again."""
    words = _words(text)
    if len(words) < 4:
        return None
    for index, earlier in enumerate(told):
        other = _words(earlier)
        if len(other) >= 4 and _jaccard(words, other) >= 0.85:
            where = (
                f"user turn {index - opening + 1}" if index >= opening else "the opening request"
            )
            return f"says again what {where} said: {_quote(text)}"
    return None


# Phrases only an agent says. A customer's "I have a question", "I changed my mind" or "I updated
# my address" is not one: changing or cancelling reads as the agent's only when done to "your".
_AGENT_PHRASES = re.compile(
    r"\bhow (?:can|may) i (?:help|assist) you\b"
    r"|\bis there anything else (?:i can|i could|i may) (?:help|assist|do)\b"
    r"|\bi(?: have|'ve) (?:now |just |already |successfully )*(?:issued|processed|refunded)\b"
    r"|\bi(?: have|'ve)? (?:now |just |already |successfully )*(?:cancell?ed|updated|changed)"
    r" (?:\S+ ){0,4}?your\b"
    r"|\bas an ai\b"
    r"|\blet me (?:look (?:that|this|it) up|look into (?:that|this|it)"
    r"|check (?:on )?(?:that|this|it)) for you\b"
    r"|\bi(?:'d| would|'m| am) (?:be )?(?:happy|glad) to (?:help|assist)\b"
    r"|\bthanks? (?:you )?for (?:contacting|reaching out to) us\b"
    # the shop's work, said as the speaker's own: "I'll verify the eligibility", "I will
    # proceed to issue the refund", "I need to call `lookup_order`"
    r"|\bi(?:'ll| will| need to| am going to|'m going to) (?:now |first |then )?"
    r"(?:proceed to |go ahead and )?(?:verify|issue|process|call `|call the `"
    r"|confirm the eligibility|check the eligibility|look up the order)\b"
    r"|^\s*(?:assistant|agent|support)\s*:",
    re.MULTILINE | re.IGNORECASE,
)


def _agent_phrase(text: str, assistant: str) -> str | None:
    """Names the agent's phrase in a user turn, or the turn itself when it nearly copies the
    last assistant message (word-set Jaccard of at least 0.8, over at least six words)."""
    plain = re.sub(r"[ \t]+", " ", text.replace("\u2019", "'"))
    if match := _AGENT_PHRASES.search(plain):
        return f"speaks as the agent: {_quote(match[0])}"
    words = _words(text)
    if len(words) >= 6 and _jaccard(words, _words(assistant)) >= 0.8:
        return f"nearly copies the agent's last message: {_quote(text)}"
    return None


_JSON_NAME = re.compile(r"(?:\{\s*)?\"name\"\s*:")
_JSON_ARGUMENTS = re.compile(r"\"(?:arguments|parameters)\"\s*:")
_CALL_TAG = re.compile(r"<\s*/?\s*(?:tool_call|function_call|tool_use)\b", re.IGNORECASE)


def _written_call(text: str, tool_names: Collection[str]) -> str | None:
    """Names a tool call written as text: a JSON object with a name and arguments, a call tag,
    or `name(` for one of the case's tools."""
    match = _CALL_TAG.search(text)
    if not match and _JSON_ARGUMENTS.search(text):
        match = _JSON_NAME.search(text)
    for name in tool_names:
        match = match or re.search(rf"(?<![\w.]){re.escape(name)}\(", text)
    return f"writes a tool call as text: {_quote(text[match.start() :])}" if match else None


def _tool_named(text: str, tool_names: Collection[str], agent_said: Sequence[str]) -> str | None:
    """A tool the user names (one named like code: `issue_refund`, `getOrder`) that the agent
    never named in its replies: only the agent sees its tools."""
    for name in tool_names:
        coded = "_" in name or "." in name or re.search(r"[a-z][A-Z]", name) is not None
        named = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
        if coded and named.search(text) and not any(named.search(s) for s in agent_said):
            return f"names the tool {_quote(name)}, which only the agent sees"
    return None


def _text(message: dict[str, Any]) -> str:
    """A message's text: its content, or the text of its content parts."""
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _strings(value: Any) -> Iterator[str]:
    """Every string in a value, keys included, numbers written out."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def _quote(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return f'"{flat if len(flat) <= limit else flat[: limit - 1] + "…"}"'
