"""A channel's status through the REST API (its window, rates) and who may read it."""

from __future__ import annotations

import time

import pytest
from rest_framework.test import APIClient

from brokers.models import Channel
from brokers.services.access import api_token_issue, grant_actions
from brokers.channels.sender import channel_agent_run
from brokers.services.messages import message_put
from tests.conftest import msgs
from tests.transfer.conftest import two_brokers
from transactions.manager import transaction_begin, transaction_rollback

pytestmark = pytest.mark.django_db(transaction=True)


def user(name: str, *grants: tuple[str, str, str]) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(username=name, create_user=True)}")
    for broker, queue, actions in grants:
        grant_actions(username=name, broker=broker, queue=queue, actions=actions)
    return client


def agent_until(name: str, condition, timeout: float = 60) -> None:
    """Run the channel's agent in short runs until ``condition(channel)`` holds."""
    end = time.monotonic() + timeout
    while not condition(Channel.objects.get(name=name)):
        assert time.monotonic() < end, "the channel never got there"
        channel_agent_run(name=name, holder="test", max_seconds=0.5)


def test_status_shows_the_window_and_the_recent_rate(api):
    name = two_brokers(preemptive=True, batch_size=1)
    message_put(broker="QMA", queue="RQ.QMB", messages=msgs("ready"))
    producer = transaction_begin(broker="QMA", timeout_ms=60_000).id
    message_put(broker="QMA", queue="RQ.QMB", messages=msgs("a", "b", "c"), transaction_id=producer)
    idle = api.get(f"/api/channels/{name}/").json()
    assert (idle["window"], idle["batch_bytes"], idle["batches_in_flight"], idle["oldest_unconfirmed"]) == (
        8,
        4 * 1024 * 1024,
        0,
        None,
    )
    # the committed message's batch goes and is confirmed; the three provisional ones stay in flight
    agent_until(name, lambda c: c.batches.count() == 3 and c.batches_committed == 1)
    status = api.get(f"/api/channels/{name}/").json()
    assert status["batches_in_flight"] == 3 and status["in_doubt_seq"] == status["oldest_unconfirmed"]["seq"]
    assert status["oldest_unconfirmed"]["age_s"] >= 0
    assert Channel.objects.get(name=name).in_doubt_seq == status["in_doubt_seq"]  # what the dashboard reads
    assert (status["batches_committed"], status["messages_sent"], status["bytes_sent"]) == (1, 1, len("ready"))
    assert status["messages_per_s"] > 0 and status["bytes_per_s"] > 0
    transaction_rollback(transaction_id=producer)
    agent_until(name, lambda c: not c.batches.exists())
    status = api.get(f"/api/channels/{name}/").json()
    assert (status["batches_in_flight"], status["batches_backed_out"], status["oldest_unconfirmed"]) == (0, 3, None)


def test_window_and_batch_bytes_are_defined_and_validated(api):
    two_brokers()
    body = {
        "name": "W",
        "source_broker": "QMA",
        "transmission_queue": "QMB",
        "target_broker": "QMB",
        "window": 2,
        "batch_bytes": 1000,
    }
    made = api.post("/api/channels/", body, format="json")
    assert made.status_code == 201 and (made.json()["window"], made.json()["batch_bytes"]) == (2, 1000)
    bad = api.patch("/api/channels/W/", {"window": 0, "batch_bytes": 0}, format="json")
    assert bad.status_code == 400 and {"window", "batch_bytes"} <= set(bad.json()["errors"]), bad.json()


def test_channel_reads_need_a_grant_on_the_source_broker(api):
    name = two_brokers()
    two_brokers(source="QMC", target="QMD", channel="QMC.QMD")
    alice = user("alice", ("QMA", "IN", "browse"))  # a grant on one queue of the source broker
    bob = user("bob", ("QMB", "", "put"))  # on the target broker only
    assert [c["name"] for c in alice.get("/api/channels/").json()["results"]] == [name]
    assert alice.get(f"/api/channels/{name}/").status_code == 200
    assert alice.get("/api/channels/QMC.QMD/").status_code == 403
    assert bob.get("/api/channels/").json() == {"count": 0, "results": []}
    for path in (f"/api/channels/{name}/", "/api/channels/NO.SUCH/"):  # unknown or not: the same refusal
        refused = bob.get(path)
        assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    assert alice.post(f"/api/channels/{name}/stop/").status_code == 403  # operating stays for superusers
    assert api.get("/api/channels/").json()["count"] == 2 and api.get("/api/channels/NO.SUCH/").status_code == 404
    assert Channel.objects.get(name=name).enabled
