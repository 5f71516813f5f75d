"""The demo topology ``platform/up`` defines when BATON_DEMO=1."""

from __future__ import annotations

from ..models import Broker, Queue
from .brokers import broker_define
from .queues import queue_define

DEMO = {
    "BRK1": {
        "description": "Demo broker: order intake",
        "queues": {
            "ORDERS.IN": {"description": "New orders", "backout_threshold": 3, "backout_queue": "ORDERS.BACKOUT"},
            "ORDERS.BACKOUT": {"description": "Orders that failed three times"},
            "BILLING.REPLY": {"description": "Replies from billing", "delivery_sequence": "fifo"},
        },
    },
    "BRK2": {
        "description": "Demo broker: billing",
        "queues": {
            "BILLING.IN": {"description": "Billing requests", "read_order": "commit"},
            "AUDIT": {"description": "Audit trail", "default_persistence": "non_persistent", "max_depth": 100000},
        },
    },
}


def demo_topology_define() -> list[str]:
    """Define what of the demo topology is missing; returns what it defined."""
    made = []
    for broker_name, spec in DEMO.items():
        if not Broker.objects.filter(name=broker_name).exists():
            broker_define(name=broker_name, description=spec["description"])
            made.append(broker_name)
        for queue_name, attrs in spec["queues"].items():
            if not Queue.objects.filter(broker__name=broker_name, name=queue_name).exists():
                queue_define(broker=broker_name, name=queue_name, **attrs)
                made.append(f"{broker_name}/{queue_name}")
    return made
