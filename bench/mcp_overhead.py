"""What an MCP server costs over a Python environment: the scripted careful/reckless pair of
`examples/refunds` run as agents through `--env` and through `--mcp` (the same shop as an MCP
server over stdio, a fresh process a run), side by side, and the parts of the difference.

    python bench/mcp_overhead.py [--repeats 3] [--calls 200]

- `judge run`, whole processes, best of `--repeats`: the wall time of each path, the tool calls
  made, and the difference per tool call;
- per tool call in one environment (`--calls` calls of `lookup_order`): the MCP round trip
  (client, stdio, the server's SDK) against the Python call;
- per environment: starting a server and listing its tools, then stopping it (what `--mcp`
  adds to every run, so that runs never share state).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFUNDS = ROOT / "examples" / "refunds"
SHOP = f"{sys.executable} {REFUNDS / 'mcp_server.py'}"
sys.path.insert(0, str(ROOT))


def whole_runs(url: str, repeats: int) -> dict[str, tuple[float, int]]:
    """Best wall time and tool calls of `judge run` on each path."""
    paths = {
        "--env": ["--env", f"{REFUNDS / 'environment.py'}:make_environment"],
        "--mcp": ["--mcp", SHOP, "--mcp-state", "shop://orders"],
    }
    found = {}
    for name, args in paths.items():
        times, calls = [], 0
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as folder:
                out = Path(folder) / "runs.jsonl"
                started = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-m", "judge", "run", str(REFUNDS / "cases.jsonl"),
                     "--models", "careful,reckless", "--base-url", url, *args, "-o", str(out)],
                    check=True, capture_output=True,
                )  # fmt: skip
                times.append(time.perf_counter() - started)
                rows = [json.loads(line) for line in out.read_text().splitlines()]
                calls = sum(len(m.get("tool_calls") or ()) for r in rows
                            for m in r["transcript"] if m["role"] == "assistant")  # fmt: skip
        found[name] = (min(times), calls)
    return found


def per_call(calls: int) -> tuple[float, float, float]:
    """Seconds per call through MCP and through Python, and per server start and stop."""
    sys.path.insert(0, str(REFUNDS))
    from environment import make_environment  # type: ignore[import-not-found]

    from judge.checks._mcp import McpServer

    server = McpServer.of(SHOP, None, "shop://orders", 60.0)
    starts = []
    for _ in range(3):
        started = time.perf_counter()
        env = server()
        env.close()
        starts.append(time.perf_counter() - started)
    env = server()
    try:
        started = time.perf_counter()
        for _ in range(calls):
            env.call("lookup_order", {"order_id": "ord_1001"})
        mcp = (time.perf_counter() - started) / calls
    finally:
        env.close()
    local = make_environment()
    started = time.perf_counter()
    for _ in range(calls):
        local.call("lookup_order", {"order_id": "ord_1001"})
    python = (time.perf_counter() - started) / calls
    return mcp, python, statistics.median(starts)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    options = parser.parse_args()
    from tests.service_process import free_port

    port = free_port()
    agents = subprocess.Popen(
        [sys.executable, str(REFUNDS / "scripted_agents.py"), "--port", str(port)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert agents.stdout is not None
        agents.stdout.readline()
        runs = whole_runs(f"http://127.0.0.1:{port}/v1", options.repeats)
    finally:
        agents.terminate()
        agents.wait()
    (env_s, calls), (mcp_s, _) = runs["--env"], runs["--mcp"]
    print(f"judge run, careful+reckless, 16 runs, {calls} tool calls (best of {options.repeats})")
    print(f"  --env  {env_s:7.2f} s")
    print(f"  --mcp  {mcp_s:7.2f} s   (+{(mcp_s - env_s) / calls * 1000:.0f} ms a tool call)")
    mcp, python, start = per_call(options.calls)
    print(f"one environment, {options.calls} calls of lookup_order:")
    print(f"  MCP round trip {mcp * 1000:7.2f} ms a call; Python {python * 1000:.3f} ms "
          f"(+{(mcp - python) * 1000:.2f} ms)")  # fmt: skip
    print(f"  a server started, listed and stopped: {start * 1000:.0f} ms (once a run)")


if __name__ == "__main__":
    main()
