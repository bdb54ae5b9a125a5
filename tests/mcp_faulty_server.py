"""An MCP server (the `mcp` SDK, over stdio) whose tools misbehave on purpose, for the tests
of faults: `note(text)` keeps a note and answers in plain text, `hang()` never answers, `die()`
ends the server's process mid-call, `fail()` is an error result. Its state is the notes, as the
resource `notes://all`. With `--pid-file PATH` it appends its process id there at start; with
`--start-delay SECONDS` it waits that long before it answers anything (a slow start)."""

from __future__ import annotations

import argparse
import json
import os
import time

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("faulty")
notes: list[str] = []


@server.tool(description="Keep a note.", structured_output=False)
def note(text: str) -> str:
    notes.append(text)
    return f"noted: {text}"


@server.tool(description="Never answers.")
def hang() -> str:
    time.sleep(3600)
    return "late"


@server.tool(description="Ends the server mid-call.")
def die() -> str:
    os._exit(1)


@server.tool(description="Always refused.")
def fail() -> str:
    raise ToolError("refused on purpose")


@server.resource("notes://all", mime_type="application/json")
def all_notes() -> str:
    return json.dumps(notes)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--pid-file")
    parser.add_argument("--start-delay", type=float, default=0.0)
    options = parser.parse_args()
    time.sleep(options.start_delay)
    if options.pid_file:
        with open(options.pid_file, "a") as handle:
            handle.write(f"{os.getpid()}\n")
    server.run()
