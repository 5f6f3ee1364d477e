"""A tool for the example agent: the order lookup a shop's support agent would call."""
from __future__ import annotations

ORDERS = {
    "A-1001": {"status": "shipped", "carrier": "DHL", "eta": "2026-05-04"},
    "A-1002": {"status": "processing", "carrier": None, "eta": "2026-05-09"},
}


def lookup_order(order_id: str) -> dict:
    """Look up an order by its id (like A-1001): its status, carrier and expected delivery date."""
    order = ORDERS.get(order_id.strip().upper())
    if order is None:
        raise ValueError(f"no order {order_id}")
    return {"order_id": order_id, **order}
