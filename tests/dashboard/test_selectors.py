"""The dashboard's reads: counts split by state, cutting the overview down to a user's
grants, graph deltas with their links."""

from __future__ import annotations

import pytest

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from dashboard import selectors
from dashboard.access import Visibility, visibility
from transactions.models import Transaction

pytestmark = pytest.mark.django_db


def test_counts_split_available_uncommitted_in_flight(queue):
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"a"), MessageInput(body=b"b")])
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"c")], syncpoint="yes")
    message_get(broker="QM1", queue="Q1", syncpoint="yes")
    counts = selectors.queue_counts(queue_ids=[queue.pk])[queue.pk]
    assert counts == {"depth": 2, "available": 1, "uncommitted_puts": 1, "in_flight": 1, "locked": 0}


def test_overview_cut_to_what_a_user_sees(two_brokers):
    data = selectors.overview()
    seen = Visibility(everything=False, brokers=frozenset(), queues=frozenset({("SEEN", "Q2")}))
    cut = selectors.overview_for(data, seen)
    assert [b["name"] for b in cut["brokers"]] == ["SEEN"]
    assert [q["name"] for q in cut["brokers"][0]["queues"]] == ["Q2"]


def test_topology_changes_with_every_definition_the_pages_list(two_brokers):
    """What makes the follower push a fresh overview without a journal event."""
    from brokers.services.brokers import broker_define, broker_delete
    from brokers.services.queues import queue_alter, queue_define, queue_delete

    seen = [selectors.topology()]
    for change in (
        lambda: queue_define(broker="SEEN", name="NEW"),
        lambda: queue_alter(broker="SEEN", name="NEW", put_enabled=False),
        lambda: queue_delete(broker="SEEN", name="NEW"),
        lambda: broker_define(name="THIRD"),
        lambda: broker_delete(name="THIRD"),
    ):
        change()
        assert selectors.topology() != seen[-1]
        seen.append(selectors.topology())
    assert seen[-1] == seen[0]  # back where it started: nothing left behind
    assert selectors.overview()["brokers"][0]["queues"][0]["put_enabled"] is True


def test_roles_map_onto_grants(two_brokers):
    from dashboard.users import dashboard_user

    dashboard_user(username="op", password="long-enough", role="operator", brokers=["SEEN"])
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username="op")
    seen = visibility(user)
    assert seen.broker("SEEN") and not seen.broker("HIDDEN") and seen.queue("SEEN", "anything")
    from dashboard.access import may

    assert may(user, "put", broker="SEEN", queue="Q1") and not may(user, "admin", broker="SEEN", queue="Q1")


def test_graph_delta_has_links_and_far_ends(queue):
    producer = message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"p")], syncpoint="yes")
    consumer = message_get(broker="QM1", queue="Q1", syncpoint="yes", preemptive=True)
    delta = selectors.graph_delta(transaction_ids={consumer.transaction_id})
    assert {n["id"] for n in delta["nodes"]} == {producer.transaction_id, consumer.transaction_id}
    assert [(e["upstream"], e["downstream"]) for e in delta["edges"]] == [
        (producer.transaction_id, consumer.transaction_id)
    ]
    assert delta["touched"] == [consumer.transaction_id]


def test_graph_nodes_carry_their_queues_open_from_messages_resolved_from_the_journal(queue):
    from brokers.services.queues import queue_define
    from transactions.manager import transaction_commit

    queue_define(broker="QM1", name="Q2")
    producer = message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"p")], syncpoint="yes")
    consumer = message_get(broker="QM1", queue="Q1", syncpoint="yes", preemptive=True)
    message_put(
        broker="QM1",
        queue="Q2",
        messages=[MessageInput(body=b"n")],
        syncpoint="yes",
        transaction_id=consumer.transaction_id,
    )
    done = message_put(broker="QM1", queue="Q2", messages=[MessageInput(body=b"d")], syncpoint="yes")
    transaction_commit(transaction_id=done.transaction_id)
    queues = {n["id"]: n["queues"] for n in selectors.graph_snapshot(broker="QM1")["nodes"]}
    assert queues == {producer.transaction_id: ["Q1"], consumer.transaction_id: ["Q1", "Q2"]}
    # a resolved one's come from the journal
    began = Transaction.objects.get(pk=done.transaction_id).created_at.isoformat()
    resolved = [{"id": done.transaction_id, "state": "committed", "created_at": began}]
    assert selectors.units_queues(nodes=resolved) == {done.transaction_id: ["Q2"]}
    delta = selectors.graph_delta(transaction_ids={consumer.transaction_id}, queues={consumer.transaction_id: {"Q2"}})
    assert {n["id"]: n["queues"] for n in delta["nodes"]} == {
        producer.transaction_id: [],
        consumer.transaction_id: ["Q2"],
    }


def test_admin_bootstrap_shows_a_password_once(db):
    from django.contrib.auth import authenticate

    from dashboard.users import admin_bootstrap

    password = admin_bootstrap()
    assert password and authenticate(username="admin", password=password)
    assert admin_bootstrap() is None


def test_stomp_connections_are_pushed_with_the_overview_when_they_change(two_brokers):
    from django.utils import timezone

    from dashboard.access import visibility
    from dashboard.follower import _objects
    from stomp_server.models import StompClient

    from .conftest import make_user

    before = _objects()
    row = StompClient.objects.create(
        session="s1",
        process="p",
        transport="tcp",
        peer="127.0.0.1:5000",
        username="app",
        broker="SEEN",
        version="1.2",
        connected_at=timezone.now(),
        subscriptions=[{"destination": "/queue/Q1", "ack": "client", "unacknowledged": 2}],
    )
    assert _objects() != before  # a new connection makes the follower push
    seen = _objects()
    row.save()  # the serving process's heartbeat rewrites the row: no push for that alone
    assert _objects() == seen
    data = selectors.overview()
    assert [(c["name"], c["broker"], c["subscriptions"][0]["unacknowledged"]) for c in data["stomp"]] == [
        ("s1", "SEEN", 2)
    ]
    from brokers.services.access import grant_actions

    grant_actions(username=make_user("v").username, broker="HIDDEN", actions=["browse"])
    grant_actions(username=make_user("w").username, broker="SEEN", actions=["browse"])
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    assert selectors.overview_for(data, visibility(users.get(username="v")))["stomp"] == []
    assert len(selectors.overview_for(data, visibility(users.get(username="w")))["stomp"]) == 1
