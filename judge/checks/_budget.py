"""How long a case's evidence may take. Value origins and injection evidence are linear in
the size of a case's tool results, yet no one case may stall a batch: their loops look at a
deadline, and past it the case's evidence is undecided (its result says so) rather than late.
"""

from __future__ import annotations

import math
import time

BUDGET_S = 5.0
"""Seconds a case's evidence may take: many times what a megabyte of tool results needs."""
TIMED_FROM = 65_536
"""Characters of a case's messages from which its evidence is timed: below, the linear work
takes milliseconds, and the clock (a system call) would cost more than it guards."""
NEVER = math.inf


class Undecided(Exception):
    """A case's evidence ran past its budget."""


def deadline() -> float:
    """When a case's evidence, begun now, is out of time: in this thread's CPU time, the
    work done, whatever else the machine runs (a verdict never hangs on a busy machine)."""
    return time.thread_time() + BUDGET_S


def within(deadline: float) -> None:
    """Raise `Undecided` once `deadline` has passed (`NEVER`: no clock read)."""
    if deadline < NEVER and time.thread_time() > deadline:
        raise Undecided(f"finding them took longer than the case's {BUDGET_S:g} s budget")
