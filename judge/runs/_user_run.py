"""What a run's simulated user did, as its record keeps it: the turns it took, the closing
line, what the cache served, what it cost, and who ended the run and why."""

from __future__ import annotations

from typing import Any

from judge.runs._user import UserSimulator, UserTurn


class UserLog:
    """The simulated user's side of one run, as it goes."""

    def __init__(self, simulator: UserSimulator) -> None:
        self.simulator = simulator
        self.turns = 0
        """The user turns added to the conversation (the closing one not counted)."""
        self.closing: str | None = None
        self.cached = 0
        self.asked = 0
        self.tool_calls: list[int] = []
        self.latency_s = 0.0
        self.usage: dict[str, int] = {}
        self.silent = False
        """The user model replied with nothing: the simulator's failure."""
        self.ended_by: str | None = None
        self.end_reason: str | None = None

    def add(self, turn: UserTurn) -> None:
        """One turn the user model gave (the closing one too)."""
        if turn.done or not turn.text:
            self.closing = turn.text if turn.done else None
            self.silent = not turn.done
        else:
            self.turns += 1
        number = self.turns + (0 if not turn.done and turn.text else 1)
        if turn.called_tool:
            self.tool_calls.append(number)
        self.cached += turn.cached
        self.asked += not turn.cached
        self.latency_s += turn.latency_s
        for key in ("prompt_tokens", "completion_tokens"):
            value = (turn.usage or {}).get(key)
            if isinstance(value, int):
                self.usage[key] = self.usage.get(key, 0) + value

    def fields(self) -> dict[str, Any]:
        """The record's fields for the simulated user."""
        return {
            "ended_by": self.ended_by,
            "end_reason": self.end_reason,
            "user": {
                **self.simulator.user.described(),
                "turns": self.turns,
                "closing": self.closing,
                "silent": self.silent,
                "asked": self.asked,
                "cached": self.cached,
                "tool_calls": self.tool_calls,
                "usage": self.usage or None,
                "latency_s": round(self.latency_s, 4),
            },
        }
