"""A second worked example environment: the order-changes desk of a shop, with six tools.

Use it as

    judge check examples/orders/scenarios.jsonl \
        --env examples/orders/environment.py:make_environment

The shop's orders (keyed by id) are the state compared; the catalogue (which item may be
exchanged for which, what is in stock) is fixed and is not. The tools enforce the desk's
rules and refuse anything else with `ToolFailed` and the reason:
- an order is cancelled (with one of two reasons) or its delivery address changed only while
  it is `pending` or `processing`, never once shipped;
- an item is exchanged only on a delivered order, within 30 days of delivery, for another
  variant of the same product family (same price) that is in stock, once per item.
"""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

from judge import StateEnvironment, ToolFailed

TODAY = date(2026, 11, 30)
EXCHANGE_WINDOW_DAYS = 30
CANCEL_REASONS = ("no_longer_needed", "ordered_by_mistake")
CHANGEABLE = ("pending", "processing")
ADDRESS_KEYS = ("street", "city", "postcode")

CATALOG: dict[str, dict[str, Any]] = {
    "tee_black_s": {"name": "T-shirt, black, S", "family": "tee", "price": 18.0, "stock": 7},
    "tee_black_m": {"name": "T-shirt, black, M", "family": "tee", "price": 18.0, "stock": 4},
    "tee_black_l": {"name": "T-shirt, black, L", "family": "tee", "price": 18.0, "stock": 2},
    "tee_white_s": {"name": "T-shirt, white, S", "family": "tee", "price": 18.0, "stock": 5},
    "tee_white_m": {"name": "T-shirt, white, M", "family": "tee", "price": 18.0, "stock": 3},
    "tee_white_l": {"name": "T-shirt, white, L", "family": "tee", "price": 18.0, "stock": 0},
    "mug_blue": {"name": "Mug, blue", "family": "mug", "price": 12.0, "stock": 9},
    "mug_green": {"name": "Mug, green", "family": "mug", "price": 12.0, "stock": 6},
    "mug_red": {"name": "Mug, red", "family": "mug", "price": 12.0, "stock": 0},
    "hoodie_grey_m": {"name": "Hoodie, grey, M", "family": "hoodie", "price": 45.0, "stock": 3},
    "hoodie_grey_l": {"name": "Hoodie, grey, L", "family": "hoodie", "price": 45.0, "stock": 1},
    "hoodie_navy_m": {"name": "Hoodie, navy, M", "family": "hoodie", "price": 45.0, "stock": 2},
    "hoodie_navy_l": {"name": "Hoodie, navy, L", "family": "hoodie", "price": 45.0, "stock": 4},
    "sneaker_white_41": {
        "name": "Sneaker, white, 41",
        "family": "sneaker",
        "price": 80.0,
        "stock": 2,
    },
    "sneaker_white_42": {
        "name": "Sneaker, white, 42",
        "family": "sneaker",
        "price": 80.0,
        "stock": 3,
    },
    "sneaker_white_43": {
        "name": "Sneaker, white, 43",
        "family": "sneaker",
        "price": 80.0,
        "stock": 1,
    },
    "sneaker_black_42": {
        "name": "Sneaker, black, 42",
        "family": "sneaker",
        "price": 80.0,
        "stock": 2,
    },
    "sneaker_black_43": {
        "name": "Sneaker, black, 43",
        "family": "sneaker",
        "price": 80.0,
        "stock": 0,
    },
}


def _item(item_id: str) -> dict[str, Any]:
    entry = CATALOG[item_id]
    return {"item_id": item_id, "name": entry["name"], "family": entry["family"]}


def _address(street: str, city: str, postcode: str) -> dict[str, str]:
    return {"street": street, "city": city, "postcode": postcode}


DANA, ELI, FARAH = "dana@example.com", "eli@example.com", "farah@example.com"

ORDERS: dict[str, dict[str, Any]] = {
    "ord_2001": {
        "email": DANA,
        "status": "processing",
        "placed_on": "2026-11-27",
        "delivered_on": None,
        "address": _address("4 Mill Road", "Leeds", "LS2 7HY"),
        "items": [_item("tee_black_m")],
        "cancel_reason": None,
    },
    "ord_2002": {
        "email": DANA,
        "status": "delivered",
        "placed_on": "2026-11-18",
        "delivered_on": "2026-11-22",
        "address": _address("4 Mill Road", "Leeds", "LS2 7HY"),
        "items": [_item("tee_white_s"), _item("mug_blue")],
        "cancel_reason": None,
    },
    "ord_2003": {
        "email": DANA,
        "status": "shipped",
        "placed_on": "2026-11-25",
        "delivered_on": None,
        "address": _address("4 Mill Road", "Leeds", "LS2 7HY"),
        "items": [_item("hoodie_navy_m")],
        "cancel_reason": None,
    },
    "ord_2004": {
        "email": ELI,
        "status": "pending",
        "placed_on": "2026-11-29",
        "delivered_on": None,
        "address": _address("9 Station Approach", "Bath", "BA1 1SU"),
        "items": [_item("hoodie_grey_l"), _item("mug_green")],
        "cancel_reason": None,
    },
    "ord_2005": {
        "email": ELI,
        "status": "delivered",
        "placed_on": "2026-10-05",
        "delivered_on": "2026-10-10",
        "address": _address("9 Station Approach", "Bath", "BA1 1SU"),
        "items": [_item("sneaker_white_42")],
        "cancel_reason": None,
    },
    "ord_2006": {
        "email": ELI,
        "status": "delivered",
        "placed_on": "2026-11-19",
        "delivered_on": "2026-11-24",
        "address": _address("9 Station Approach", "Bath", "BA1 1SU"),
        "items": [_item("sneaker_black_43")],
        "cancel_reason": None,
    },
    "ord_2007": {
        "email": FARAH,
        "status": "processing",
        "placed_on": "2026-11-28",
        "delivered_on": None,
        "address": _address("31 Canal Street", "Manchester", "M1 3HE"),
        "items": [_item("mug_green"), _item("mug_blue")],
        "cancel_reason": None,
    },
    "ord_2008": {
        "email": FARAH,
        "status": "cancelled",
        "placed_on": "2026-11-02",
        "delivered_on": None,
        "address": _address("31 Canal Street", "Manchester", "M1 3HE"),
        "items": [_item("tee_white_l")],
        "cancel_reason": "ordered_by_mistake",
    },
    "ord_2009": {
        "email": FARAH,
        "status": "pending",
        "placed_on": "2026-11-29",
        "delivered_on": None,
        "address": _address("31 Canal Street", "Manchester", "M1 3HE"),
        "items": [_item("hoodie_navy_l")],
        "cancel_reason": None,
    },
}


def _order(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    order = state["orders"].get(order_id)
    if order is None:
        raise ToolFailed(f"no order {order_id!r}")
    return order  # type: ignore[no-any-return]


def _changeable(order_id: str, order: dict[str, Any], what: str) -> None:
    if order["status"] not in CHANGEABLE:
        raise ToolFailed(
            f"{order_id} is {order['status']}: {what} only while it is pending or processing"
        )


def find_orders(state: dict[str, Any], email: str) -> dict[str, Any]:
    """The orders placed with an e-mail address, newest first."""
    wanted = email.strip().lower()
    found = [
        {
            "order_id": order_id,
            "status": order["status"],
            "placed_on": order["placed_on"],
            "items": [item["name"] for item in order["items"]],
        }
        for order_id, order in state["orders"].items()
        if order["email"] == wanted
    ]
    if not found:
        raise ToolFailed(f"no orders for {email!r}")
    found.sort(key=lambda o: o["placed_on"], reverse=True)
    return {"email": wanted, "orders": found}


def get_order(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    """Read an order: status, dates, delivery address and items."""
    return {"order_id": order_id, **copy.deepcopy(_order(state, order_id))}


def list_variants(state: dict[str, Any], item_id: str) -> dict[str, Any]:
    """The variants of an item's product family (what it may be exchanged for)."""
    if item_id not in CATALOG:
        raise ToolFailed(f"no item {item_id!r}")
    family = CATALOG[item_id]["family"]
    variants = [
        {
            "item_id": other,
            "name": entry["name"],
            "price": entry["price"],
            "in_stock": entry["stock"] > 0,
        }
        for other, entry in CATALOG.items()
        if entry["family"] == family
    ]
    return {"family": family, "variants": variants}


def cancel_order(state: dict[str, Any], order_id: str, reason: str) -> dict[str, Any]:
    """Cancel an order that has not shipped; `reason`: no_longer_needed or ordered_by_mistake."""
    order = _order(state, order_id)
    _changeable(order_id, order, "it can be cancelled")
    if reason not in CANCEL_REASONS:
        raise ToolFailed(f"reason must be one of {', '.join(CANCEL_REASONS)}, not {reason!r}")
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    return {"order_id": order_id, "status": "cancelled", "cancel_reason": reason}


def change_address(state: dict[str, Any], order_id: str, address: dict[str, Any]) -> dict[str, Any]:
    """Send an order that has not shipped to another address (street, city, postcode)."""
    order = _order(state, order_id)
    _changeable(order_id, order, "its address can be changed")
    if not isinstance(address, dict) or set(address) != set(ADDRESS_KEYS):
        raise ToolFailed(f"address must have exactly {', '.join(ADDRESS_KEYS)}")
    parts = {key: " ".join(str(address[key]).split()) for key in ADDRESS_KEYS}
    if not all(parts.values()):
        raise ToolFailed("street, city and postcode must not be blank")
    parts["postcode"] = parts["postcode"].upper()
    order["address"] = parts
    return {"order_id": order_id, "address": parts}


def exchange_item(
    state: dict[str, Any], order_id: str, item_id: str, new_item_id: str
) -> dict[str, Any]:
    """Exchange a delivered item for another variant of its family that is in stock."""
    order = _order(state, order_id)
    if order["status"] not in ("delivered", "exchange_requested"):
        raise ToolFailed(f"{order_id} is {order['status']}: only delivered orders are exchanged")
    days = (TODAY - date.fromisoformat(order["delivered_on"])).days
    if days > EXCHANGE_WINDOW_DAYS:
        raise ToolFailed(
            f"{order_id} was delivered {days} days ago: exchanges are open for "
            f"{EXCHANGE_WINDOW_DAYS} days"
        )
    line = next((item for item in order["items"] if item["item_id"] == item_id), None)
    if line is None:
        raise ToolFailed(f"{order_id} has no item {item_id!r}")
    if "exchanged_from" in line:
        raise ToolFailed(f"{item_id} in {order_id} is already an exchange")
    new = CATALOG.get(new_item_id)
    if new is None:
        raise ToolFailed(f"no item {new_item_id!r}")
    if new_item_id == item_id or new["family"] != line["family"]:
        raise ToolFailed(
            f"{item_id} can only be exchanged for another {line['family']} variant "
            f"(list_variants), not {new_item_id!r}"
        )
    if new["stock"] <= 0:
        raise ToolFailed(f"{new_item_id} is out of stock")
    line.clear()
    line.update({**_item(new_item_id), "exchanged_from": item_id})
    order["status"] = "exchange_requested"
    return {"order_id": order_id, "status": order["status"], "items": copy.deepcopy(order["items"])}


class OrdersEnvironment(StateEnvironment):
    """The orders are the state compared; the catalogue is fixed."""

    def snapshot(self) -> Any:
        return copy.deepcopy(self.state["orders"])


TOOLS = (find_orders, get_order, list_variants, cancel_order, change_address, exchange_item)


def make_environment(case: Any = None) -> OrdersEnvironment:
    """A fresh environment; a case may bring its own orders in `meta.orders`."""
    meta = getattr(case, "meta", None) or {}
    orders = copy.deepcopy(meta.get("orders", ORDERS))
    return OrdersEnvironment({"orders": orders}, {f.__name__: f for f in TOOLS})
