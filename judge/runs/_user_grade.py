"""A simulated user's mistakes, found when its run is graded: the code checks of
`judge.runs._user_faults` over the transcript and, when a judge grades, one question to it
("did the user stay within its instructions and facts?"). A run with any is the simulator's
failure, not the agent's: `user_error` says why, `passed` is null, and the run is reported
apart, out of the agent's rates. Graded again (`judge regrade`), it is found again."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from judge.cases._calls import ShapeError, normalise_response
from judge.cases._case import Case, UserScenario
from judge.endpoints._candidates import CandidateClient, CandidateRequestError
from judge.endpoints._client import serving
from judge.judging._cache import cache_key
from judge.judging._grade import Judge
from judge.runs._agent import prompt_of
from judge.runs._records import RunRecord
from judge.runs._replies import reply_error
from judge.runs._user import conversation_lines, fact_text
from judge.runs._user_faults import UserFault, user_faults

QUESTION_VERSION = "2"
_SYSTEM = (
    "You check a SIMULATED customer in a support chat: a model was told to play a customer "
    "from a brief, and must stay within it. It may only want what the brief says, state only "
    "the facts the brief gives it (or that support told it), give them when asked, and "
    "speak as the customer, never as support. Answer `yes` if the customer stayed "
    "within its brief, `no` if it did not: on the first line the one word; if no, on the "
    "second line what it did wrong, in one sentence."
)


def expects_action(case: Case) -> bool:
    """Whether the case expects the agent to call tools (its task needs doing)."""
    called = case.assert_tools.called if case.assert_tools is not None else ()
    return bool(case.expected_calls) or bool(called)


def code_faults(record: RunRecord, case: Case) -> list[UserFault]:
    """The code checks' findings on a run with a simulated user."""
    assert case.user is not None and record.user is not None
    return user_faults(
        case.user,
        prompt_of(case),
        record.transcript or [],
        closing=record.user.get("closing"),
        user_calls=tuple(record.user.get("tool_calls") or ()),
        tool_names=[tool.name for tool in case.tools],
        expects_action=expects_action(case),
    )


class FidelityQuestion:
    """The judge's one question per run about the simulated user, asked on the judge's own
    endpoint and model, and cached with its verdicts."""

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self._client: CandidateClient | None = None
        self._lock = asyncio.Lock()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def body(self, scenario: UserScenario, conversation: Sequence[dict[str, Any]]
             ) -> dict[str, Any]:  # fmt: skip
        facts = "\n".join(f"- {k}: {fact_text(v)}" for k, v in scenario.facts.items()) or "(none)"
        lines = conversation_lines(conversation)
        brief = (
            f"The customer's brief:\nGoal: {scenario.instructions.strip()}\nFacts it knows:\n"
            f"{facts}\n\nThe chat (support's tool calls not shown):\n" + "\n".join(lines)
        )
        question = "Did the customer stay within its brief and facts? Answer yes or no."
        return {
            "model": self.judge.model,
            "messages": [
                {"role": "system", "content": _SYSTEM},
                {"role": "user", "content": f"{brief}\n\n{question}"},
            ],
            "temperature": 0.0,
            "seed": self.judge.seed,
            "max_tokens": 60,
        }

    async def ask(self, scenario: UserScenario, conversation: Sequence[dict[str, Any]]
                  ) -> tuple[str, UserFault | None]:  # fmt: skip
        """The judge's answer, `yes`, `no` or `unanswered: why`, and a `judge` fault when it
        says the user left its brief. Only a yes or a no is cached."""
        body = self.body(scenario, conversation)
        cache = self.judge.verdict_cache
        key = cache_key({"user_fidelity": QUESTION_VERSION, "judge": self.judge.endpoint_label,
                         "body": body})  # fmt: skip
        text = await cache.get(key) if cache is not None else None
        if text is None:
            text, why = await self._answer(body)
            if text is None:
                return f"unanswered: {why}", None
        first, _, rest = str(text).strip().partition("\n")
        word = first.strip().strip(".!*`'\"").lower()
        if word not in ("yes", "no"):
            return f"unanswered: the judge said {first.strip()[:60]!r}, not yes or no", None
        if cache is not None:
            await cache.put(key, text)
        if word == "yes":
            return "yes", None
        why = rest.strip() or "the judge says the user left its brief"
        return "no", UserFault("judge", 0, why[:200])

    async def _answer(self, body: dict[str, Any]) -> tuple[str | None, str]:
        async with self._lock:  # one client, made once
            if self._client is None:
                endpoint, concurrency, timeout = await serving(self.judge.endpoint, 4, 120.0)
                self._client = CandidateClient(endpoint, concurrency=concurrency, timeout=timeout)
        try:
            answer = await self._client.chat(body)
        except CandidateRequestError as exc:
            return None, str(exc)
        failed = reply_error(answer.body)
        if failed is not None:
            return None, failed
        try:
            response = normalise_response(answer.body)
        except ShapeError as exc:
            return None, f"the reply is not a chat completion ({exc})"
        content = response.content if response is not None else None
        return (content, "") if content else (None, "the reply has no text")


async def turn_verdicts(judge: Judge, record: RunRecord, case: Case) -> list[dict[str, Any]]:
    """The judge's selection verdict on the agent's reply to each user turn (the case's
    opening and every simulated one): the conversation up to that turn, the reply as the
    response (the checks' expectations left out: they are the whole run's)."""
    conversation = [*prompt_of(case), *(record.transcript or [])]
    start = len(prompt_of(case)) - 1
    found: list[dict[str, Any]] = []
    turn = 0
    for i in range(start, len(conversation)):
        if conversation[i].get("role") != "user":
            continue
        reply = next((m for m in conversation[i + 1 :] if m.get("role") == "assistant"), None)
        if reply is None:
            break
        try:
            response = normalise_response(reply)
        except ShapeError:
            continue
        asked = case.model_copy(update={
            "messages": conversation[: i + 1], "response": response, "expected_calls": None,
            "expected_behavior": None, "assert_tools": None, "expected_answer": None,
            "match": None, "user": None,
        })  # fmt: skip
        judged = (await judge.grade_case(asked)).judge
        selection = judged.selection if judged is not None else None
        found.append({
            "turn": turn,
            "verdict": None if selection is None else selection.verdict,
            "category": None if selection is None else selection.category,
            "confidence": None if selection is None else selection.confidence,
        })  # fmt: skip
        turn += 1
    return found


async def with_user_faults(
    record: RunRecord, case: Case, question: FidelityQuestion | None
) -> RunRecord:
    """`record` with its simulated user's mistakes found again (what an earlier grading
    found is replaced), and `user_error` (passed null) when it made any; a run without a
    simulated user as it is."""
    if record.user is None or record.error is not None:
        return record
    cleared = {"user_faults": (), "user_error": None}
    if case.user is None:  # its scenario was taken out of the case: nothing to hold it to
        return record.model_copy(update=cleared)
    faults = code_faults(record, case)
    if record.user.get("silent"):
        faults.append(UserFault("said_nothing", int(record.user.get("turns", 0)) + 1,
                                "the user model replied with nothing"))  # fmt: skip
    user = dict(record.user)
    user.pop("judge_says", None)
    if question is not None:
        conversation = [*prompt_of(case), *(record.transcript or [])]
        closing = record.user.get("closing")
        if closing:
            conversation.append({"role": "user", "content": closing})
        user["judge_says"], found = await question.ask(case.user, conversation)
        if found is not None:
            faults.append(found)
    reason = "; ".join(_said(f) for f in faults) or None
    update: dict[str, Any] = {"user_faults": tuple(f.as_dict() for f in faults), "user": user}
    update["user_error"] = reason
    if reason is not None:
        update["passed"] = None
    return record.model_copy(update=update)


def _said(fault: UserFault) -> str:
    where = "the judge" if fault.kind == "judge" else f"turn {fault.turn}"
    return f"{fault.kind} ({where}): {fault.detail}"
