"""The watchdog of a stdio MCP server: `python -S -I _mcp_leader.py PID COMMAND...`.

`judge` starts it in place of the server (`_mcp_stdio`); it starts COMMAND as its child, in a
process group of its own that shares the leader's standard input and output, and ends that
group, SIGTERM and after `GRACE` seconds SIGKILL, on every way out: the server exits (its
forked children with it), the leader is told to stop (SIGTERM, SIGINT, SIGHUP), or `judge`
(process PID) dies, `kill -9` included: on Linux at once (the parent-death signal), elsewhere
within a poll. Standard library only, and run as a file: it starts fast and imports nothing
of `judge`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

GRACE = 2.0  # seconds the group has to end on SIGTERM before SIGKILL
_POLL = 0.05
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def main(argv: list[str]) -> int:
    parent, command = int(argv[1]), argv[2:]
    told: list[int] = []
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda signum, frame: told.append(signum))
    _watch_on_linux()
    if os.getppid() != parent:  # judge died before the death signal was set
        return 1
    try:
        server = subprocess.Popen(command, process_group=0)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"cannot start {command[0]!r}: {getattr(exc, 'strerror', 0) or exc}\n")
        return 127
    # The server holds the pipes now: its end of output is judge's end of file.
    blank = os.open(os.devnull, os.O_RDWR)
    os.dup2(blank, 0)
    os.dup2(blank, 1)
    while server.poll() is None and not told and os.getppid() == parent:
        time.sleep(_POLL)
    _end_group(server.pid)
    return server.returncode if server.returncode is not None else 1


def _watch_on_linux() -> None:
    """Linux: SIGTERM to the leader when judge (the thread that started it) ends; and the
    server's orphans its children, for it to reap (a PID 1 that reaps none, as in many
    containers, would leave their zombies in the group until the grace ran out)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            prctl = ctypes.CDLL(None, use_errno=True).prctl
            prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
            prctl(_PR_SET_CHILD_SUBREAPER, 1)


def _end_group(group: int) -> None:
    """SIGTERM to the server's group, then SIGKILL to what is left of it after `GRACE`."""
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        return  # no one left
    except PermissionError:
        pass  # a member not ours to signal: the SIGKILL below tries again
    _wait(group, GRACE)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
    _wait(group, GRACE)  # to reap them


def _wait(group: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and _alive(group):
        time.sleep(_POLL)


def _alive(group: int) -> bool:
    """Whether a member of `group` is left (those that ended reaped first)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # only ESRCH proves the group gone
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv))
