"""The order-changes desk of `environment.py` as an MCP server (the `mcp` SDK): its six tools,
and its orders as the resource `shop://orders`, to run candidates against and to compare final
states with.

    judge run examples/orders/scenarios.jsonl --models local --user-model local \
        --mcp "python examples/orders/mcp_server.py" --mcp-state shop://orders

Over stdio (the default) each process is one shop with the orders of `environment.ORDERS`:
`judge` starts a fresh one for every run, so runs never share state. `--http PORT` serves the
same shop over streamable HTTP on 127.0.0.1 (one shop for every client: for trying a server
you already run, not for comparing final states). A refused call (no order, a change to an
order that has shipped, an exchange outside the rules) is an error result with the reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))

from environment import make_environment  # noqa: E402 (beside this file)
from mcp.server import MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from judge import ToolFailed  # noqa: E402

shop = make_environment()
server = MCPServer("orders-shop")


class Address(BaseModel):
    """A delivery address."""

    street: str
    city: str
    postcode: str


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The shop's tool; a refusal is an error result with the shop's reason."""
    try:
        return shop.call(name, arguments)  # type: ignore[no-any-return]
    except ToolFailed as exc:
        raise ToolError(str(exc)) from None


@server.tool(description="Find the orders placed with a customer's e-mail address.")
def find_orders(email: str) -> dict[str, Any]:
    return _call("find_orders", {"email": email})


@server.tool(description="Read an order: status, dates, delivery address and items.")
def get_order(order_id: str) -> dict[str, Any]:
    return _call("get_order", {"order_id": order_id})


@server.tool(description="List the variants of an item's product family, with stock.")
def list_variants(item_id: str) -> dict[str, Any]:
    return _call("list_variants", {"item_id": item_id})


@server.tool(description="Cancel an order that has not shipped.")
def cancel_order(
    order_id: str, reason: Literal["no_longer_needed", "ordered_by_mistake"]
) -> dict[str, Any]:
    return _call("cancel_order", {"order_id": order_id, "reason": reason})


@server.tool(description="Change the delivery address of an order that has not shipped.")
def change_address(order_id: str, address: Address) -> dict[str, Any]:
    return _call("change_address", {"order_id": order_id, "address": address.model_dump()})


@server.tool(description="Exchange an item of a delivered order for another variant.")
def exchange_item(order_id: str, item_id: str, new_item_id: str) -> dict[str, Any]:
    return _call(
        "exchange_item", {"order_id": order_id, "item_id": item_id, "new_item_id": new_item_id}
    )


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
