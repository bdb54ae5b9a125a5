"""Grounding: which argument values appear nowhere in the conversation, and which values the
user gave appear in no call.

Evidence for the judge (and for people), never a failure by itself: a value the user never
said may be invented, or may be a sensible default; a number the user said that no call uses
may have been dropped, or may not be an argument at all.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from judge.cases._calls import ShapeError, normalise_response
from judge.cases._case import Case
from judge.cases._json import dumps, maybe_json, pointer
from judge.checks._origins import leaves, message_text, spaced, stems
from judge.checks._places import normalise
from judge.checks._structure import parse_arguments

_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
_QUOTED = re.compile(r'"([^"]{2,60})"|\u201c([^\u201d]{2,60})\u201d')
_GROUNDING_ROLES = ("user", "tool")


class UngroundedValue(BaseModel):
    """An argument value (string or number) not found in the user and tool messages."""

    model_config = ConfigDict(frozen=True)

    call: int
    path: str
    """JSON pointer into the call's arguments."""
    value: str | int | float


def unmentioned_values(case: Case) -> tuple[UngroundedValue, ...]:
    """The string and number argument values of every call that neither the user's nor the
    tool results' messages mention (compared case-, space- and Unicode-insensitively): what
    the quick rubrics count as `ungrounded` (their weights were fitted on it). The result's
    `ungrounded_values` are the values of origin `nowhere` (`judge.checks._evidence`)."""
    text = normalise(
        " ".join(message_text(m) for m in case.messages if m.get("role") in _GROUNDING_ROLES)
    )
    found = []
    for index, call in enumerate(case.tool_calls):
        arguments, _ = parse_arguments(call.arguments)
        if arguments is None:
            continue
        for path, value in leaves(arguments):
            if not _mentioned(value, text):
                found.append(UngroundedValue(call=index, path=pointer(path), value=value))
    return tuple(found)


def _mentioned(value: str | int | float, text: str) -> bool:
    if isinstance(value, str):
        return normalise(value) in text
    forms = {repr(value)}
    if isinstance(value, float) and value.is_integer():
        forms.add(str(int(value)))
    # A number counts only as a whole token: 5 is not in "15".
    return any(re.search(rf"(?<![\d.]){re.escape(form)}(?![\d])", text) for form in forms)


def _user_text(case: Case) -> str:
    """Everything the user said, every turn."""
    return " ".join(message_text(m) for m in case.messages if m.get("role") == "user")


def _last_user_message(case: Case) -> dict[str, Any] | None:
    return next((m for m in reversed(case.messages) if m.get("role") == "user"), None)


def unused_user_values(case: Case) -> tuple[str, ...]:
    """The numbers and quoted phrases of the user's last message that no call's arguments
    hold (compared as text, case-, space- and Unicode-insensitively)."""
    last = _last_user_message(case)
    if last is None or not case.tool_calls:
        return ()
    said = message_text(last)
    held: list[str] = []
    for call in case.tool_calls:
        arguments, _ = parse_arguments(call.arguments)
        if arguments is not None:
            held.extend(normalise(str(value)) for _, value in leaves(arguments))
    text = " ".join(held)
    found = []
    for match in _NUMBER.finditer(said):
        number = match.group().replace(",", "")
        forms = {number, number.rstrip("0").rstrip(".") if "." in number else number}
        if not any(form and form in text for form in forms):
            found.append(match.group())
    for match in _QUOTED.finditer(said):
        phrase = match.group(1) or match.group(2)
        if normalise(phrase) not in text:
            found.append(phrase)
    return tuple(found)


_ANY_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


def unsupported_numbers(case: Case) -> tuple[str, ...]:
    """The numbers of the response's text that appear nowhere earlier in the conversation
    (system, user, assistant and tool turns, and the calls' arguments), compared by value:
    `1,240.55` is 1240.55, `09` is 9. Evidence that an answer states what nothing supports."""
    reply = case.response.content if case.response is not None else None
    if not reply:
        return ()
    parts = [message_text(m) for m in case.messages]
    parts += [
        str((call.get("function") or {}).get("arguments") or "")
        for m in case.messages
        for call in m.get("tool_calls") or ()
        if isinstance(call, dict)
    ]
    known = {_value(found) for found in _ANY_NUMBER.findall(" ".join(parts))}
    return tuple(found for found in _ANY_NUMBER.findall(reply) if _value(found) not in known)


def failed_tool_results(case: Case) -> int:
    """The tool messages of the conversation that report an error (a JSON object with an
    `error`, or text that starts by saying so)."""
    return sum(m.get("role") == "tool" and _reports_error(m) for m in case.messages)


def _reports_error(message: dict[str, Any]) -> bool:
    data = _tool_value(message)
    if isinstance(data, dict):
        return bool(data.get("error"))
    text = message_text(message).strip()
    return text[:40].casefold().lstrip("{[\"' ").startswith(("error", "failed"))


def _tool_value(message: dict[str, Any]) -> Any:
    """A tool message's result as a value: the content itself where it already is one (an
    object, or a list that is not text parts), decoded where its text is JSON of an object
    or array; its text otherwise."""
    content = message.get("content")
    parts = isinstance(content, list) and all(isinstance(p, dict) and "type" in p for p in content)
    if isinstance(content, dict) or (isinstance(content, list) and not parts):
        return content
    return maybe_json(message_text(message).strip())


def _value(number: str) -> float:
    return float(number.replace(",", ""))


_WORD = re.compile(r"[^\W_]+")  # letters and digits, accented ones too
_MARGIN = 3
_FIT = 6


def word_margin(case: Case) -> int:
    """How many more of the words of the user's last message the called tool's name and
    description share than the closest other tool does (the least over the calls, clipped to
    -3..3; 0 without calls or a user message; with one tool, its own overlap). A low margin is
    evidence of a wrong tool: a call to a tool that fits the request less than another does."""
    last = _last_user_message(case)
    if last is None or not case.tool_calls:
        return 0
    shared = _fits(case, stems(message_text(last)))
    margins = []
    for call in case.tool_calls:
        if call.name in shared:
            others = [n for name, n in shared.items() if name != call.name]
            margins.append(shared[call.name] - max(others, default=0))
    return max(-_MARGIN, min(_MARGIN, min(margins))) if margins else 0


def best_fit(case: Case) -> int:
    """The most words of the user's last message that any one tool's name and description
    share (clipped to 0..6; 0 without a user message). A reply without calls to a request that
    a tool fits well is evidence of a missed call; one that no tool fits, of a right refusal."""
    last = _last_user_message(case)
    if last is None:
        return 0
    return min(_FIT, max(_fits(case, stems(message_text(last))).values(), default=0))


def _fits(case: Case, said: set[str]) -> dict[str, int]:
    """Per tool name, how many of `said` its name and description share."""
    return {t.name: len(said & stems(f"{t.name} {t.description or ''}")) for t in case.tools}


def repeated_calls(case: Case) -> int:
    """The response's calls that repeat an earlier call exactly (the same name, equal
    arguments), of the response or of the conversation: a duplicated write, or a request
    made again after its result came back (clipped to 3). A call made again after its
    result reported an error is a retry, not a repeat. (Earlier user turns count too: on the
    sample, calls repeated after "thanks" or after a confirmed cancellation are wrong, and no
    labelled public case repeats a call across turns rightly.)"""
    failed = {
        str(m.get("tool_call_id"))
        for m in case.messages
        if m.get("role") == "tool" and _reports_error(m)
    }
    seen: set[tuple[str, bytes]] = set()
    for message in case.messages:
        if message.get("role") != "assistant":
            continue
        try:  # any provider's shape, as the trajectory reads it; a malformed turn is skipped
            earlier = normalise_response(message)
        except ShapeError:
            continue
        for call in earlier.tool_calls if earlier is not None else ():
            if str(call.id) not in failed:
                seen.add((call.name, _comparable(call.arguments)))
    repeated = 0
    for response_call in case.tool_calls:
        key = (response_call.name, _comparable(response_call.arguments))
        repeated += key in seen
        seen.add(key)
    return min(repeated, _MARGIN)


def _comparable(text: str) -> bytes:
    """A call's arguments as JSON to compare: parsed and written again with sorted keys, so
    key order and spacing do not count but types do (`1`, `1.0` and `true` differ); the raw
    text when they do not parse (two broken calls are the same only when their text is)."""
    arguments, _ = parse_arguments(text or "{}")
    if arguments is None:
        return b"unparsed:" + text.encode()
    return dumps(arguments, sort_keys=True)


def guessed_required(case: Case, ungrounded: Sequence[UngroundedValue] | None = None) -> int:
    """The values of required parameters (top-level keys the tool's schema requires) that the
    conversation never mentions: a required value made up instead of asked for (clipped
    to 3). Optional values the user never gave are often sensible defaults; required ones
    seldom are. `ungrounded`: the case's `unmentioned_values`, where already found."""
    required: dict[str, set[str]] = {}  # (a case's tool names are unique: read refuses twice)
    for t in case.tools:
        listed = (t.parameters or {}).get("required")
        required[t.name] = {str(k) for k in (listed if isinstance(listed, list) else ())}
    guessed = 0
    for value in unmentioned_values(case) if ungrounded is None else ungrounded:
        top = value.path.split("/")[1].replace("~1", "/").replace("~0", "~")
        guessed += top in required.get(case.tool_calls[value.call].name, set())
    return min(guessed, _MARGIN)


def unsaid_options(case: Case) -> tuple[int, ...]:
    """Per call: its arguments whose value is one of an `enum` that the user never said (not
    even in part: `postgres` is in "PostgreSQL"), while the user did say another of its
    options, whole, that no call uses (`fahrenheit` asked, `celsius` sent). Options are
    compared as words (`living_room` is "living room"); numbers and generic options (`all`,
    `auto`, `none`) are never taken as said."""
    text = _user_text(case)
    said, user_stems = _words_of(text), stems(text)
    used: set[str] = set()
    parsed = []
    for call in case.tool_calls:
        arguments, _ = parse_arguments(call.arguments)
        parsed.append(arguments)
        if arguments is not None:
            used.update(_option(v) for v in arguments.values() if isinstance(v, str))
    options = _enum_options(case)
    found = []
    for call, arguments in zip(case.tool_calls, parsed, strict=True):
        count = 0
        for key, value in (arguments or {}).items():
            listed = options.get((call.name, str(key)))
            if not listed or not isinstance(value, str):
                continue
            others = listed - {_option(value)}
            value_stems = stems(value) or {w[:5] for w in _option(value).split()}
            if value_stems <= user_stems or _said(_option(value), said):
                continue
            if any(_said(o, said) and o not in used and o not in _GENERIC for o in others):
                count += 1
        found.append(count)
    return tuple(found)


def _enum_options(case: Case) -> dict[tuple[str, str], set[str]]:
    """Per (tool, parameter): the string options of its `enum`, as words."""
    found: dict[tuple[str, str], set[str]] = {}
    for t in case.tools:
        properties = (t.parameters or {}).get("properties")
        for key, schema in properties.items() if isinstance(properties, dict) else ():
            listed = schema.get("enum") if isinstance(schema, dict) else None
            if isinstance(listed, list):
                words = {_option(o) for o in listed if isinstance(o, str)}
                found[(t.name, str(key))] = words
    return found


def _option(value: str) -> str:
    return " ".join(_WORD.findall(spaced(value)))


def _words_of(text: str) -> str:
    return " " + " ".join(_WORD.findall(unicodedata.normalize("NFKC", text).casefold())) + " "


def _said(option: str, said: str) -> bool:
    return bool(option) and not option.replace(" ", "").isdigit() and f" {option} " in said


_GENERIC = frozenset(("all", "any", "auto", "both", "default", "none", "other", "yes", "no"))


def other_records(case: Case) -> tuple[int, ...]:
    """Per call: 1 where it holds a value (three characters or more) that only one record of
    a listed tool result has (an id, a name, a price), while another record of that list
    shares more of the user's words and the call holds none of that record's own values (the
    user asked for Marco's request; the call approves Maria's)."""
    user = stems(_user_text(case))
    found = [0] * len(case.tool_calls)
    held = []
    for call in case.tool_calls:
        arguments, _ = parse_arguments(call.arguments)
        held.append({normalise(str(v)) for _, v in leaves(arguments or {})})
    for message in case.messages:
        if message.get("role") != "tool":
            continue
        lists: list[list[dict[str, Any]]] = []
        try:
            _record_lists(_tool_value(message), lists)
        except RecursionError:  # nested past reading
            continue
        for records in lists:
            own, fits = _own_values(records, user)
            best = max(fits)
            for index, values in enumerate(held):
                picked = [fit for mine, fit in zip(own, fits, strict=True) if values & mine]
                found[index] |= bool(picked) and max(picked) < best
    return tuple(found)


def _record_lists(value: Any, into: list[list[dict[str, Any]]]) -> None:
    """The lists of two or more objects anywhere in a parsed tool result."""
    if isinstance(value, list):
        if len(value) > 1 and all(isinstance(v, dict) for v in value):
            into.append(value)
        for item in value:
            _record_lists(item, into)
    elif isinstance(value, dict):
        for item in value.values():
            _record_lists(item, into)


def _own_values(records: list[dict[str, Any]], user: set[str]) -> tuple[list[set[str]], list[int]]:
    """Per record: its values of three characters or more that no other record of the list
    has, and how many of the user's words all its values share."""
    values = [{normalise(str(v)) for _, v in leaves(r)} for r in records]
    fits = [len(user & stems(" ".join(v))) for v in values]
    counted = Counter(v for mine in values for v in mine)
    own = [{v for v in mine if counted[v] == 1 and len(v) > 2} for mine in values]
    return own, fits
