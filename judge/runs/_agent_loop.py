"""An agent run as a job of the runner: a fresh environment, every step asked with the agreed
settings (through `judge.runs._agent`'s loop, or the user's agent), the whole transcript
recorded with what each step cost, and graded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from judge.cases._calls import Response, ShapeError, normalise_response
from judge.cases._case import Case, Tool
from judge.cases._json import dumps, loads
from judge.cases._text_calls import with_text_calls
from judge.checks._env import (
    Environment,
    EnvironmentFactory,
    close_environment,
    describe_error,
    new_environment,
)
from judge.checks._mcp import McpEnvironment, McpServer
from judge.endpoints._candidates import CandidateClient, CandidateRequestError
from judge.endpoints._client import JudgeEndpointError
from judge.runs._agent import (
    Agent,
    StepLimit,
    Transcript,
    added_after,
    assistant_message,
    built_in_loop,
    call_agent,
    final_answer,
    prompt_of,
)
from judge.runs._preflight import request_body
from judge.runs._records import RunRecord
from judge.runs._replies import reply_error
from judge.runs._request import Asker
from judge.runs._user import UserModelError, UserSimulator
from judge.runs._user_run import UserLog

Stop = Literal["answer", "step_limit"] | None


@dataclass(frozen=True)
class AgentLoop:
    """How every job of an agent run goes: the built-in loop in a fresh environment from
    `env`, or the user's `agent`, each at most `max_steps` requests."""

    env: EnvironmentFactory | None
    agent: Agent | None
    max_steps: int
    described: dict[str, Any]
    """The loop as the options named it (stored in every record's settings)."""
    user: UserSimulator | None = None
    """Plays the user of the cases with a scenario (`--user-model`), after each agent reply."""


class _CaseTools:
    def __repr__(self) -> str:
        return "the case's tools"


CASE_TOOLS: Any = _CaseTools()
"""`chat`'s default `tools`: the case's own."""


async def run_agent(
    asker: Asker, client: CandidateClient, loop: AgentLoop, model: str, case: Case, run: int
) -> RunRecord:
    """One agent run from its start: a fresh environment, every step asked with the
    agreed settings, the whole transcript recorded and graded. A request that fails for
    good makes the run an error (asked again, from the start, on resume)."""
    going = _AgentRun(asker, client, loop, model, case, run)
    try:
        stop, error = await going.drive()
    except JudgeEndpointError:  # the batch stops: the environment (a server) stopped too
        await asyncio.to_thread(close_environment, going.env)
        raise
    if isinstance(going.env, McpEnvironment):  # its state read and its server stopped aside
        record = await asyncio.to_thread(going.record, stop, error)
    else:
        record = going.record(stop, error)
    return await asker.grader.grade(record, case)


async def _environment(factory: EnvironmentFactory | None, case: Case) -> Environment | None:
    """A fresh environment for one run; an MCP server is started aside (it takes a while)."""
    if factory is None:
        return None
    if isinstance(factory, McpServer):
        return await asyncio.to_thread(new_environment, factory, case)
    return new_environment(factory, case)


class _AgentRun:
    """One agent run as it goes: the requests sent, what each cost, the path so far."""

    def __init__(
        self,
        asker: Asker,
        client: CandidateClient,
        loop: AgentLoop,
        model: str,
        case: Case,
        run: int,
    ) -> None:
        self.asker, self.client, self.loop = asker, client, loop
        self.model, self.case, self.run = model, case, run
        self.names = {tool.name for tool in case.tools}
        self.reads_text = asker.grader.reads_text_calls(model)
        self.prompt = prompt_of(case)
        self.spent: list[dict[str, Any]] = []
        self.bodies: list[Any] = []
        self.seen: list[dict[str, Any]] = []  # the last path answered, after the prompt
        self.from_text = False  # some step's calls were read from the reply's text
        self.limit_hit = False  # an agent that swallows StepLimit still hit it
        self.env: Environment | None = None
        self.transcript = Transcript()
        simulated = loop.user is not None and case.user is not None
        self.talk = UserLog(loop.user) if simulated and loop.user is not None else None

    async def chat(
        self, messages: Sequence[dict[str, Any]], tools: Any = CASE_TOOLS
    ) -> dict[str, Any]:
        """One step: the `chat` the loop and the agent are given."""
        if len(self.spent) >= self.loop.max_steps:
            self.limit_hit = True
            raise StepLimit
        offered = None if tools is CASE_TOOLS else [Tool.from_spec(t) for t in tools or ()]
        body = request_body(
            self.model, self.case, self.run, self.asker.agreed, messages=messages, tools=offered
        )
        answer = await self.client.chat(body)
        self.spent.append(
            self.asker.spent(self.model, answer.body, answer.latency_s, answer.attempts)
        )
        self.bodies.append(answer.body)
        failed = reply_error(answer.body)
        if failed is not None:
            raise CandidateRequestError(failed)
        try:
            response = normalise_response(answer.body) or Response()
        except ShapeError as exc:
            raise CandidateRequestError(f"the reply is not a chat completion ({exc})") from None
        if self.reads_text:
            found = with_text_calls(response, self.names)
            self.from_text = self.from_text or found is not response
            response = found
        message = assistant_message(response, len(self.spent))
        after = added_after(self.prompt, messages)
        if after is not None:  # a side request (a confirmation step, say) is not the path
            self.seen[:] = [*after, message]
        return message

    async def drive(self) -> tuple[Stop, str | None]:
        """The loop or the agent, to its end (with a simulated user, turn after turn): how it
        stopped, and why it failed (None: it did not)."""
        loop, transcript = self.loop, self.transcript
        try:
            self.env = await _environment(loop.env, self.case)
            await self._agent_turn()
            if self.talk is not None:
                await self._converse()
        except StepLimit:
            if loop.agent is not None and len(self.seen) > len(transcript.messages):
                transcript.messages = list(self.seen)  # it never returned: its path so far
            self._ended("runner", f"--max-steps ({loop.max_steps}) reached")
            return "step_limit", None
        except JudgeEndpointError:
            raise  # the endpoint refuses everything: the batch stops
        except (CandidateRequestError, UserModelError) as exc:
            self._ended("runner", str(exc))
            return None, str(exc)
        except Exception as exc:  # the agent's own code, or the environment, failed
            self._ended("runner", f"the agent run failed: {type(exc).__name__}")
            return None, f"the agent run failed: {type(exc).__name__}: {exc}"
        return "answer", None

    async def _agent_turn(self) -> None:
        """The agent's turn, from the conversation so far to its reply in text: the built-in
        loop, or the user's agent (given the conversation as its case's messages)."""
        if self.loop.agent is None:
            assert self.env is not None, "the built-in loop needs an environment"
            await built_in_loop(self.case, self.chat, self.env, self.transcript)
        else:  # the agent sees the case as its prompt: a recorded path left out
            so_far = [*self.prompt, *self.transcript.messages]
            asked = self.case.model_copy(update={"messages": so_far})
            returned = await call_agent(self.loop.agent, asked, self.chat, self.env)
            self.transcript.messages += plain_json(_agent_transcript(returned, so_far))
        if self.limit_hit:
            raise StepLimit

    async def _converse(self) -> None:
        """The simulated user answers each agent reply in text until it is done, says
        nothing, or its turns run out."""
        assert self.talk is not None and self.case.user is not None
        scenario = self.case.user
        while True:
            if self.talk.turns >= scenario.max_turns:
                self._ended("runner", f"the scenario's max_turns ({scenario.max_turns}) used")
                return
            if len(self.spent) >= self.loop.max_steps:  # the agent answered: no step left
                self._ended("runner", f"--max-steps ({self.loop.max_steps}) used")
                return
            conversation = [*self.prompt, *self.transcript.messages]
            try:
                turn = await self.talk.simulator.reply(scenario, conversation, self.run)
            except CandidateRequestError as exc:
                raise UserModelError(f"the user model failed: {exc}") from None
            self.talk.add(turn)
            if turn.done or not turn.text:
                said = "the user said it was done" if turn.done else "the user said nothing"
                self._ended("user", said)
                return
            self.transcript.messages.append({"role": "user", "content": turn.text})
            await self._agent_turn()

    def _ended(self, by: str, why: str) -> None:
        if self.talk is not None and self.talk.ended_by is None:
            self.talk.ended_by, self.talk.end_reason = by, why

    def record(self, stop: Stop, error: str | None) -> RunRecord:
        """The run as a record, ungraded, with the state its environment ended in (the
        environment released after)."""
        try:
            final_state = plain_json(self.env.snapshot()) if self.env is not None else None
        except Exception as exc:
            final_state = None
            error = error or f"the environment's snapshot failed: {describe_error(exc)}"
        finally:
            close_environment(self.env)
        failure = getattr(self.env, "failure", None)  # a server that broke: not the agent's
        if failure and error is None:
            error = f"the environment failed: {failure}"
        messages, spent = self.transcript.messages, self.spent
        return RunRecord(
            model=self.model,
            case_id=self.case.id,
            run=self.run,
            response=self.bodies[-1] if self.bodies else None,
            transcript=messages,
            steps=len(spent),
            stop=stop,
            final_answer=final_answer(messages) if stop == "answer" else None,
            final_state=final_state,
            tool_errors=tuple(self.transcript.tool_errors),
            requests=tuple(spent),
            usage=_summed_usage(spent),
            latency_s=round(sum(s["latency_s"] for s in spent), 4) if spent else None,
            cost_usd=_summed(s["cost_usd"] for s in spent),
            error=error,
            attempts=sum(s["attempts"] for s in spent),
            calls_from_content=self.from_text,
            settings=self.asker.settings,
            **(self.talk.fields() if self.talk is not None else {}),
        )


def _agent_transcript(returned: Any, prompt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages an agent's callable returned, after the case's own."""
    if not isinstance(returned, list | tuple) or not all(isinstance(m, dict) for m in returned):
        raise TypeError(
            f"the agent returned {type(returned).__name__}: it must return the transcript, a "
            "list of messages"
        )
    after = added_after(prompt, returned)
    if after is None and prompt:  # its own system prompt in place of the case's: after the
        last = prompt[-1]  # conversation's last message (the user's turn it answered)
        found = [i for i, m in enumerate(returned) if m == last]
        after = list(returned[found[-1] + 1 :]) if found else None
    return list(returned) if after is None else after


def _summed_usage(spent: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The token counts of an agent run's requests, added up."""
    total: dict[str, Any] = {}
    for usage in (s["usage"] for s in spent if s["usage"]):
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            if isinstance(usage.get(key), int | float):
                total[key] = total.get(key, 0) + usage[key]
    return total or None


def _summed(values: Iterable[float | None]) -> float | None:
    """The sum, or None when any is unknown (a partial sum would under-report)."""
    found = list(values)
    return None if not found or None in found else sum(v for v in found if v is not None)


def plain_json(value: Any) -> Any:
    """`value` as plain JSON data (what does not encode is written as text), so that a
    record always writes."""
    return loads(dumps(value, default=str))
