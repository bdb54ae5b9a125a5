"""The refunds shop of `environment.py` as an MCP server (the `mcp` SDK): its three tools, and
its orders as the resource `shop://orders`, to run candidates against and to compare final
states with.

    judge run examples/refunds/cases.jsonl --models careful,reckless \
        --base-url http://127.0.0.1:8101/v1 \
        --mcp "python examples/refunds/mcp_server.py" --mcp-state shop://orders

Over stdio (the default) each process is one shop with the orders of `environment.ORDERS`:
`judge` starts a fresh one for every run, so runs never share state. `--http PORT` serves the
same shop over streamable HTTP on 127.0.0.1 (one shop for every client: for trying a server
you already run, not for comparing final states). A refused call (no order, no eligibility
check first, an amount past what is left) is an error result with the reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from environment import make_environment  # noqa: E402 (beside this file)
from mcp.server import MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402

from judge import ToolFailed  # noqa: E402

shop = make_environment()
server = MCPServer("refunds-shop")


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The shop's tool; a refusal is an error result with the shop's reason."""
    try:
        return shop.call(name, arguments)  # type: ignore[no-any-return]
    except ToolFailed as exc:
        raise ToolError(str(exc)) from None


@server.tool(description="Look up an order by id.")
def lookup_order(order_id: str) -> dict[str, Any]:
    return _call("lookup_order", {"order_id": order_id})


@server.tool(description="Check whether an order can be refunded now.")
def verify_refund_eligibility(order_id: str) -> dict[str, Any]:
    return _call("verify_refund_eligibility", {"order_id": order_id})


@server.tool(description="Refund an order, fully or partly.")
def issue_refund(order_id: str, amount: float, reason: str | None = None) -> dict[str, Any]:
    return _call("issue_refund", {"order_id": order_id, "amount": amount, "reason": reason})


@server.resource("shop://orders", mime_type="application/json")
def orders() -> str:
    """The orders: the state a run's final state is compared on."""
    return json.dumps(shop.snapshot())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="Serve streamable HTTP.")
    options = parser.parse_args()
    if options.http is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.http)


if __name__ == "__main__":
    main()
