"""A stdio MCP server written by hand (standard library only, newline-delimited JSON-RPC), for
the tests of how `judge` starts, reads and ends servers. Its tools: `whoami()` answers the
environment variable `RAW_SERVER_KEY` (also in its description, so `tools/list` shows it),
`hang()` never answers, `big(size)` answers a text of `size` bytes.

Options: `--pid-file PATH` appends its process id there (and with `--fork`, its child's);
`--fork` ignores SIGTERM and forks a child that ignores it too and sleeps (a server whose
workers outlive it unless their group is ended); `--say LINE` writes LINE on its standard
output before anything else (a banner; repeatable); `--twice` lists `whoami` twice;
`--no-schema` lists its tools without their `inputSchema` (a `tools/list` that is not MCP)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any


def tools(options: argparse.Namespace) -> list[dict[str, Any]]:
    key = os.environ.get("RAW_SERVER_KEY", "unset")
    empty = {"type": "object", "properties": {}}
    listed = [
        {"name": "whoami", "description": f"key: {key}", "inputSchema": empty},
        {"name": "hang", "description": "Never answers.", "inputSchema": empty},
        {"name": "big", "description": "A long text.",
         "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}}},
    ]  # fmt: skip
    if options.no_schema:
        listed = [{k: v for k, v in tool.items() if k != "inputSchema"} for tool in listed]
    return listed + listed[:1] if options.twice else listed


def answer(request: dict[str, Any], options: argparse.Namespace) -> dict[str, Any] | None:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": tools(options)}
    elif method == "tools/call":
        name, arguments = params.get("name"), params.get("arguments") or {}
        if name == "hang":
            time.sleep(3600)
        text = (
            "x" * int(arguments.get("size", 0))
            if name == "big"
            else os.environ.get("RAW_SERVER_KEY", "unset")
        )
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    elif "id" in request:
        result = {}  # ping, and anything else asked
    else:
        return None  # a notification
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def fork(pid_file: str | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the child
    child = os.fork()
    if child == 0:
        while True:
            time.sleep(60)
    if pid_file:
        with open(pid_file, "a") as handle:
            handle.write(f"{child}\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pid-file")
    parser.add_argument("--fork", action="store_true")
    parser.add_argument("--say", action="append", default=[])
    parser.add_argument("--twice", action="store_true")
    parser.add_argument("--no-schema", action="store_true")
    options = parser.parse_args()
    if options.fork:
        fork(options.pid_file)
    if options.pid_file:
        with open(options.pid_file, "a") as handle:
            handle.write(f"{os.getpid()}\n")
    for line in options.say:
        sys.stdout.write(line + "\n")
    sys.stdout.flush()
    for line in sys.stdin:  # ends at end of input: the server exits, its child stays
        if line.strip():
            reply = answer(json.loads(line), options)
            if reply is not None:
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
