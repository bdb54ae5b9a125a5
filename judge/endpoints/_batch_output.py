"""Reading a batch output (or error) file: each line the reply to one request, checked field
by field before anything in it is used.

A line that cannot be read is reported (`file:line`, the JSON pointer of what is wrong, why)
and reading goes on. The request it answered, when its `custom_id` can be read, is given up
with that reason, never asked again: its reply was paid for, and a broken file is no reason
to pay twice (a request whose line cannot even be attributed counts as unanswered).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge.cases._json import DecodeError, json_kind, loads

Accept = Callable[[str, dict[str, Any], str], Awaitable[str | None]]
"""Takes a request's reply body (status 200) and the batch (or file) it came from: None when
it was kept, else why it is unusable."""
_SHOWN = 40  # characters of a bad value a message quotes


@dataclass(frozen=True)
class Unreadable:
    """A line of a batch output file that could not be read (or was not: a second reply)."""

    source: str
    line: int
    pointer: str
    why: str
    key: str | None = None
    """The request it answers, when its `custom_id` could be read."""

    def describe(self, cases: Sequence[str] = ()) -> str:
        """`out.jsonl:3 (case 'refund-1') at /response/status_code: why`; the request key
        stands in for the cases when they are not known."""
        where = f"{self.source}:{self.line}"
        if cases:
            more = f" and {len(cases) - 1} more" if len(cases) > 1 else ""
            where += f" (case {cases[0]!r}{more})"
        elif self.key is not None:
            where += f" (request {self.key})"
        if self.pointer:
            where += f" at {self.pointer}"
        return f"{where}: {self.why}"

    def __str__(self) -> str:
        return self.describe()


@dataclass
class Output:
    """What a batch output (or error) file gave."""

    kept: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    """Request key -> why its reply is unusable (an error, another status, a bad verdict)."""
    unreadable: dict[str, str] = field(default_factory=dict)
    """Request key -> why its line could not be read: given up, never asked again."""
    problems: list[Unreadable] = field(default_factory=list)
    """Every line not read, in file order, to report."""
    answering: int = 0
    """Lines whose `custom_id` is one of the requests (read or not)."""
    others: int = 0
    """Lines for requests not asked here."""
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def lines_said(self) -> str:
        """What the file's lines were, for a file none of whose lines answers a request:
        `2 lines that cannot be read (the first: ...), 1 line for other requests`."""
        said = []
        if self.problems:
            said.append(f"{_lines(len(self.problems))} that cannot be read (the first: "
                        f"{self.problems[0]})")  # fmt: skip
        if self.others:
            said.append(f"{_lines(self.others)} for other requests")
        return ", ".join(said) or "no line in it: an empty file"


def _lines(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"


class _Bad(Exception):
    """What is wrong with a line, and where in it."""

    def __init__(self, pointer: str, why: str) -> None:
        super().__init__(why)
        self.pointer, self.why = pointer, why


@dataclass(frozen=True)
class _Line:
    status: int | None
    body: Any
    error: str | None
    """Why the request failed (an error, another status), None for a reply to use."""
    tokens: tuple[int, int] = (0, 0)


async def read_output(
    data: bytes, keys: Mapping[str, Any], accept: Accept, source: str, origin: str
) -> Output:
    """Each line of a batch output or error file for one of `keys`: a reply with status 200
    is offered to `accept` (with `origin`, the batch or file); an error or any other status
    is a failure, with the reason (`source` and the line number); a line that cannot be read
    is a problem (and, when it names one of `keys`, that request is given up). Lines for
    other requests are counted, not read."""
    found = Output()
    first: dict[str, int] = {}  # request key -> the line that answered it
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row, key = _row(line)
        except _Bad as bad:
            found.problems.append(Unreadable(source, number, bad.pointer, bad.why))
            continue
        if key not in keys:
            found.others += 1
            continue
        found.answering += 1
        if key in first:  # the first reply counts: a second one is said, not used
            why = f"a second line for this request (the first is line {first[key]}): not read"
            found.problems.append(Unreadable(source, number, "/custom_id", why, key))
            continue
        first[key] = number
        try:
            parsed = _parse(row)
        except _Bad as bad:
            problem = Unreadable(source, number, bad.pointer, bad.why, key)
            found.problems.append(problem)
            found.unreadable[key] = f"unreadable batch output line {problem}; not asked again"
            continue
        if parsed.error is not None:
            found.failed[key] = f"{source} line {number}: {parsed.error}"
            continue
        found.prompt_tokens += parsed.tokens[0]
        found.completion_tokens += parsed.tokens[1]
        unusable = await accept(key, parsed.body, origin)
        if unusable is None:
            found.kept.add(key)
        else:
            found.failed[key] = f"{source} line {number}: {unusable}"
    return found


def _row(line: bytes) -> tuple[dict[str, Any], str]:
    """The line's object and its `custom_id`."""
    try:
        row = loads(line)
    except DecodeError as exc:
        raise _Bad("", f"not JSON ({exc})") from None
    if not isinstance(row, dict):
        raise _Bad("", f"a batch output line is a JSON object, got {json_kind(row)}")
    key = row.get("custom_id")
    if not isinstance(key, str):
        raise _Bad("/custom_id", "missing" if key is None else _not("a string", key))
    return row, key


def _parse(row: dict[str, Any]) -> _Line:
    """What one line says, every field it is read by checked first."""
    error = _error(row.get("error"))
    response = row.get("response")
    if response is None:
        if error is None:
            raise _Bad("/response", "missing, and no error says why")
        return _Line(None, None, error)
    if not isinstance(response, dict):
        raise _Bad("/response", _not("an object", response))
    status = response.get("status_code")
    if type(status) is not int:
        why = "missing" if status is None else _not("an integer", status)
        raise _Bad("/response/status_code", why)
    body = response.get("body")
    if error is not None or status != 200:
        return _Line(status, body, error or _body_error(body) or f"status {status}")
    if not isinstance(body, dict):
        raise _Bad("/response/body", _not("an object (a chat completion)", body))
    usage = body.get("usage")
    if usage is None:
        return _Line(status, body, None)
    if not isinstance(usage, dict):
        raise _Bad("/response/body/usage", _not("an object", usage))
    tokens = (_count(usage, "prompt_tokens"), _count(usage, "completion_tokens"))
    return _Line(status, body, None, tokens)


def _error(error: Any) -> str | None:
    """The message of a line's `error` (None: there is none)."""
    if error is None:
        return None
    if isinstance(error, str):
        return error or "an error"
    if not isinstance(error, dict):
        raise _Bad("/error", _not("an object", error))
    for name in ("message", "code"):
        value = error.get(name)
        if value is not None and not isinstance(value, str | int):
            raise _Bad(f"/error/{name}", _not("a string", value))
    message, code = error.get("message"), error.get("code")
    return str(message or code or "an error without a message")


def _body_error(body: Any) -> str | None:
    """An error reply's message, when its body has one in OpenAI's form."""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return message if isinstance(message, str) and message else None


def _count(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    if value is None:
        return 0
    if type(value) is not int or value < 0:
        raise _Bad(f"/response/body/usage/{name}", _not("a count of tokens", value))
    return value


def _not(expected: str, value: Any) -> str:
    """`not a count of tokens, got a string ('12x')`: the value quoted short and in ASCII
    (it may hold what a terminal or a JSON writer cannot take)."""
    kind = json_kind(value)
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        shown = ascii(value)
        kind += f" ({shown[:_SHOWN]}{'...' if len(shown) > _SHOWN else ''})"
    return f"not {expected}, got {kind}"
