"""Shared and exclusive input (docs/design.md §7)."""

from __future__ import annotations

import pytest

from baton_client.errors import OptionsConflict, QueueInUse
from brokers.models import Queue
from brokers.services.connections import connection_close, connection_open
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import bodies, msgs

pytestmark = pytest.mark.postgres  # also run on PostgreSQL


def conn(name: str) -> str:
    return connection_open(broker="QM1", client_name=name).connection.conn_id


def test_exclusive_consumer_keeps_others_out_until_it_closes(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b", "c"))
    a, b = conn("A"), conn("B")
    assert bodies(message_get(broker="QM1", queue="Q1", connection_id=a, access="exclusive")) == ["a"]
    with pytest.raises(QueueInUse):
        message_get(broker="QM1", queue="Q1", connection_id=b, access="exclusive")
    with pytest.raises(QueueInUse):
        message_get(broker="QM1", queue="Q1")  # shared, no connection
    assert bodies(message_get(broker="QM1", queue="Q1", connection_id=a)) == ["b"]  # the holder may go on
    connection_close(conn_id=a)
    assert bodies(message_get(broker="QM1", queue="Q1", connection_id=b, access="exclusive")) == ["c"]


def test_claim_lapses_when_its_lease_runs_out(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    a, b = conn("A"), conn("B")
    message_get(broker="QM1", queue="Q1", connection_id=a, access="exclusive")
    Queue.objects.filter(pk=queue.pk).update(exclusive_until="2000-01-01T00:00:00Z")  # the holder went away
    assert bodies(message_get(broker="QM1", queue="Q1", connection_id=b, access="exclusive")) == ["b"]


def test_queue_default_exclusive_needs_a_connection(broker):
    queue_define(broker="QM1", name="EXQ", default_access="exclusive")
    message_put(broker="QM1", queue="EXQ", messages=msgs("a"))
    with pytest.raises(OptionsConflict):
        message_get(broker="QM1", queue="EXQ")
    assert bodies(message_get(broker="QM1", queue="EXQ", connection_id=conn("A"))) == ["a"]


def test_shared_consumers_share(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    a, b = conn("A"), conn("B")
    assert bodies(message_get(broker="QM1", queue="Q1", connection_id=a, access="shared")) == ["a"]
    assert bodies(message_get(broker="QM1", queue="Q1", connection_id=b, access="shared")) == ["b"]


def test_rest_queue_in_use_is_409(api, queue):
    a = api.post("/api/brokers/QM1/connections/", {"client_name": "A"}, format="json").json()["conn_id"]
    r = api.post("/api/brokers/QM1/queues/Q1/get/", {"connection": a, "access": "exclusive"}, format="json")
    assert r.status_code == 200
    r = api.post("/api/brokers/QM1/queues/Q1/get/", {}, format="json")
    assert r.status_code == 409 and r.json()["code"] == "queue_in_use"
