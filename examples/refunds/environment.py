"""A worked example environment: an order database with three refund tools.

Use it as

    judge check examples/refunds/cases.jsonl \
        --env examples/refunds/environment.py:make_environment

What makes a good environment for final-state checks:
- `snapshot()` returns only the state that matters (here the orders), as plain JSON data, so
  that read-only calls and harmless differences in the path leave it unchanged;
- state that does not depend on the order of independent writes (orders keyed by id, not a
  log in call order), so that any valid order reaches the same snapshot;
- tools that enforce the business rules (no refund before an eligibility check, never more
  than was paid), raising `ToolFailed` with a message when a call is refused.
"""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

from judge import StateEnvironment, ToolFailed

TODAY = date(2026, 11, 30)
REFUND_WINDOW_DAYS = 30

ORDERS: dict[str, dict[str, Any]] = {
    "ord_1001": {
        "customer": "ana",
        "status": "delivered",
        "total": 59.90,
        "refunded": 0.0,
        "delivered_on": "2026-11-20",
    },
    "ord_1002": {
        "customer": "ana",
        "status": "delivered",
        "total": 120.00,
        "refunded": 0.0,
        "delivered_on": "2026-11-25",
    },
    "ord_1003": {
        "customer": "ben",
        "status": "delivered",
        "total": 35.50,
        "refunded": 0.0,
        "delivered_on": "2026-09-01",
    },
    "ord_1004": {
        "customer": "ben",
        "status": "shipped",
        "total": 18.00,
        "refunded": 0.0,
        "delivered_on": None,
    },
}


def _order(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    order = state["orders"].get(order_id)
    if order is None:
        raise ToolFailed(f"no order {order_id!r}")
    return order  # type: ignore[no-any-return]


def lookup_order(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    """Read an order."""
    return dict(_order(state, order_id))


def verify_refund_eligibility(state: dict[str, Any], order_id: str) -> dict[str, Any]:
    """Check the refund policy: delivered, within 30 days, not already fully refunded."""
    order = _order(state, order_id)
    reason = None
    if order["status"] not in ("delivered", "partially_refunded"):
        reason = f"the order is {order['status']}, not delivered"
    elif (TODAY - date.fromisoformat(order["delivered_on"])).days > REFUND_WINDOW_DAYS:
        reason = f"delivered more than {REFUND_WINDOW_DAYS} days ago"
    elif order["refunded"] >= order["total"]:
        reason = "already refunded in full"
    if reason is None:
        state["session"]["eligible"][order_id] = True
    return {"order_id": order_id, "eligible": reason is None, "reason": reason}


def issue_refund(
    state: dict[str, Any], order_id: str, amount: float, reason: str | None = None
) -> dict[str, Any]:
    """Refund `amount` of an order whose eligibility was verified in this session."""
    order = _order(state, order_id)
    if not state["session"]["eligible"].get(order_id):
        raise ToolFailed(f"verify_refund_eligibility({order_id!r}) must succeed first")
    if amount <= 0 or amount > round(order["total"] - order["refunded"], 2):
        raise ToolFailed(f"amount {amount} is outside 0..{order['total'] - order['refunded']}")
    order["refunded"] = round(order["refunded"] + amount, 2)
    order["status"] = "refunded" if order["refunded"] >= order["total"] else "partially_refunded"
    return {"order_id": order_id, "refunded": order["refunded"], "status": order["status"]}


class RefundsEnvironment(StateEnvironment):
    """The orders are the state compared; the session (what was verified) is not."""

    def snapshot(self) -> Any:
        return copy.deepcopy(self.state["orders"])


def make_environment(case: Any = None) -> RefundsEnvironment:
    """A fresh environment; a case may bring its own orders in `meta.orders`."""
    meta = getattr(case, "meta", None) or {}
    orders = copy.deepcopy(meta.get("orders", ORDERS))
    tools = {f.__name__: f for f in (lookup_order, verify_refund_eligibility, issue_refund)}
    return RefundsEnvironment({"orders": orders, "session": {"eligible": {}}}, tools)
