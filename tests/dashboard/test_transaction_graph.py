"""The transaction graph page opens on the live part (open units of work, what is linked to
them, recent cascades with their causes) and rolls back from its detail panel through the
REST operation, under its ownership rule."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from brokers.services.access import grant_actions
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from brokers.services.units_of_work import unit_of_work_begin
from dashboard import selectors
from dashboard.access import acting, visibility
from transactions.manager import transaction_commit, transaction_rollback
from transactions.models import Transaction

from .conftest import make_user

pytestmark = pytest.mark.django_db


def linked_pair(*, user_id=None) -> tuple[str, str]:
    producer = unit_of_work_begin(broker="QM1", timeout_ms=None, user_id=user_id).id
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"p")], syncpoint="yes", transaction_id=producer)
    consumer = message_get(broker="QM1", queue="Q1", syncpoint="yes", preemptive=True).transaction_id
    return producer, consumer


def test_the_snapshot_is_the_live_part_with_past_cascades(queue):
    make_user("ann")
    ann = get_user_model().objects.get(username="ann")
    live_producer, live_consumer = linked_pair(user_id=ann.pk)
    root, member = linked_pair()
    transaction_rollback(transaction_id=root)  # cascades to member; their link goes
    done = message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"d")], syncpoint="yes").transaction_id
    transaction_commit(transaction_id=done)  # resolved, related to nothing live

    graph = selectors.graph_snapshot(broker="QM1")
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert set(nodes) == {live_producer, live_consumer, root, member}
    assert nodes[member]["cause"] == root and nodes[member]["state"] == "rolled_back"
    assert nodes[root]["cause"] is None
    assert nodes[live_producer]["owner"] == "ann" and nodes[live_consumer]["owner"] == ""
    assert [(e["upstream"], e["downstream"]) for e in graph["edges"]] == [(live_producer, live_consumer)]


def test_yours_follows_the_ownership_rule(two_brokers):
    owner, other, admin = make_user("owner"), make_user("other"), make_user("boss")
    for user in (owner, other):
        grant_actions(username=user.username, broker="SEEN", actions=["browse", "put", "get"])
    grant_actions(username="boss", broker="SEEN", actions=["browse", "admin"])
    mine = unit_of_work_begin(broker="SEEN", timeout_ms=None, user_id=owner.pk).id
    graph = selectors.graph_snapshot(broker="SEEN")
    for user, yours in ((owner, True), (other, False), (admin, True)):
        shown = selectors.graph_for(graph, visibility(user), acting(user))
        assert [(n["id"], n["yours"]) for n in shown["nodes"]] == [(mine, yours)], user.username
        assert "user_id" not in shown["nodes"][0]


def test_rollback_from_the_page_runs_the_operation_as_the_user(client, two_brokers):
    owner, other = make_user("owner"), make_user("other")
    for user in (owner, other):
        grant_actions(username=user.username, broker="SEEN", actions=["browse", "put", "get"])
    producer = unit_of_work_begin(broker="SEEN", timeout_ms=None, user_id=owner.pk).id
    message_put(broker="SEEN", queue="Q1", messages=[MessageInput(body=b"p")], syncpoint="yes", transaction_id=producer)
    consumer = message_get(broker="SEEN", queue="Q1", syncpoint="yes", preemptive=True).transaction_id
    url = f"/brokers/SEEN/transactions/{producer}/rollback/"

    client.force_login(other)  # not theirs: answered as REST answers, nothing changes
    refused = client.post(url)
    assert refused.status_code == 404 and refused.json()["code"] == "not_found"
    assert Transaction.objects.get(pk=producer).state == "active"
    assert client.get(url).status_code == 405

    client.force_login(owner)
    done = client.post(url)
    assert done.status_code == 200, done.content
    assert done.json() == {
        "id": producer,
        "state": "rolled_back",
        "reason": done.json()["reason"],
        "cascaded": [consumer],
    }
    assert Transaction.objects.get(pk=consumer).cause_id == producer


def test_the_page_offers_the_rollback_form(admin_client, queue):
    page = admin_client.get("/brokers/QM1/transactions/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="rollback"' in html and "/brokers/QM1/transactions/TRANSACTION/rollback/" in html
    assert "csrfmiddlewaretoken" in html and " style=" not in html and " onclick=" not in html
