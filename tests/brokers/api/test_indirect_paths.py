"""The one rule for indirect paths (docs/permissions.md, "Indirect paths"): a put or get
through an alias, a remote queue or a report needs the same right on the queue it finally
reaches; making a queue an alias or a remote queue needs admin there; reports respect max
depth; a queue's definition is checked as a whole."""

from __future__ import annotations

import pytest

from brokers.models import Message, Queue
from brokers.services.queues import queue_define

pytestmark = pytest.mark.django_db

QM1 = "/api/brokers/QM1/queues"


def status(response, expected: int, code: str | None = None) -> dict:
    assert response.status_code == expected, (response.status_code, response.content[:400])
    body = response.json() if response.content else {}
    if code:
        assert body["code"] == code, body
    return body


def depth(broker: str, queue: str) -> int:
    return Message.objects.filter(queue__broker__name=broker, queue__name=queue).count()


# --- finding 1: a queue's kind is no way around per-queue grants -----------------------------


def test_queue_admin_cannot_make_its_queue_an_alias_of_a_queue_it_has_no_admin_on(two_brokers, as_user):
    alice = as_user("alice", ("QM1", "Q2", "admin,put,get"))
    status(alice.patch(f"{QM1}/Q2/", {"kind": "alias", "target_queue": "Q1"}, format="json"), 403, "permission_denied")
    status(
        alice.patch(
            f"{QM1}/Q2/",
            {"kind": "remote", "remote_broker": "QM2", "remote_queue": "Q1", "transmission_queue": "Q1"},
            format="json",
        ),
        403,
        "permission_denied",
    )
    q2 = Queue.objects.get(broker__name="QM1", name="Q2")
    assert (q2.kind, q2.target_queue, q2.remote_broker) == ("local", "", "")


def test_put_get_and_browse_through_an_alias_need_the_right_on_its_target(two_brokers, as_user, api):
    queue_define(broker="QM1", name="ALIAS", kind="alias", target_queue="Q1")
    status(api.post(f"{QM1}/Q1/messages/", {"body": "secret"}, format="json"), 201)
    alice = as_user("alice", ("QM1", "ALIAS", "put,get,browse"))
    refused = status(alice.post(f"{QM1}/ALIAS/messages/", {"body": "x"}, format="json"), 403, "permission_denied")
    assert "Q1" not in str(refused), refused  # the 403 names nothing alice holds no grant on
    status(alice.post(f"{QM1}/ALIAS/get/", {}, format="json"), 403, "permission_denied")
    status(alice.get(f"{QM1}/ALIAS/messages/"), 403, "permission_denied")
    assert depth("QM1", "Q1") == 1
    bob = as_user("bob", ("QM1", "ALIAS", "put,get"), ("QM1", "Q1", "put,get"))
    status(bob.post(f"{QM1}/ALIAS/messages/", {"body": "y"}, format="json"), 201)
    assert [m["body"] for m in status(bob.post(f"{QM1}/ALIAS/get/", {"batch": 5}, format="json"), 200)["messages"]] == [
        "secret",
        "y",
    ]


def test_contradictory_queue_attributes_are_refused_as_a_whole(two_brokers, api):
    body = status(
        api.patch(
            f"{QM1}/Q2/",
            {"kind": "remote", "usage": "transmission", "remote_broker": "QM2", "target_queue": "Q1"},
            format="json",
        ),
        400,
        "invalid",
    )
    assert {"usage", "target_queue"} <= body["errors"].keys(), body
    status(
        api.post(
            f"{QM1}/", {"name": "A", "kind": "alias", "target_queue": "Q1", "remote_broker": "QM2"}, format="json"
        ),
        400,
        "invalid",
    )
    status(api.post(f"{QM1}/", {"name": "L", "target_queue": "Q1"}, format="json"), 400, "invalid")
    assert Queue.objects.get(broker__name="QM1", name="Q2").kind == "local"
    assert not Queue.objects.filter(name__in=["A", "L"]).exists()


def test_rekinding_clears_the_former_kinds_attributes(two_brokers, api):
    queue_define(broker="QM1", name="R", kind="remote", remote_broker="QM2", remote_queue="Q1", transmission_queue="Q2")
    body = status(api.patch(f"{QM1}/R/", {"kind": "alias", "target_queue": "Q1"}, format="json"), 200)
    assert (body["kind"], body["target_queue"], body["remote_broker"], body["transmission_queue"]) == (
        "alias",
        "Q1",
        "",
        "",
    )


def test_a_queue_holding_messages_keeps_its_kind_and_usage(two_brokers, api):
    status(api.post(f"{QM1}/Q2/messages/", {"body": "held"}, format="json"), 201)
    status(api.patch(f"{QM1}/Q2/", {"kind": "alias", "target_queue": "Q1"}, format="json"), 409)
    status(api.patch(f"{QM1}/Q2/", {"usage": "transmission"}, format="json"), 409)
    q2 = Queue.objects.get(broker__name="QM1", name="Q2")
    assert (q2.kind, q2.usage) == ("local", "normal") and depth("QM1", "Q2") == 1


# --- finding 3: a broker admin cannot route into another broker ------------------------------


def test_broker_admin_cannot_define_a_remote_queue_into_a_broker_it_has_no_admin_on(two_brokers, as_user):
    queue_define(broker="QM1", name="QM2", usage="transmission")
    ops = as_user("ops", ("QM1", "", "admin,put"))
    status(
        ops.post(
            f"{QM1}/",
            {
                "name": "TO.AUDIT",
                "kind": "remote",
                "remote_broker": "QM2",
                "remote_queue": "Q1",
                "transmission_queue": "QM2",
            },
            format="json",
        ),
        403,
        "permission_denied",
    )
    assert not Queue.objects.filter(name="TO.AUDIT").exists()
    # with admin on the destination it may
    both = as_user("both", ("QM1", "", "admin"), ("QM2", "Q1", "admin"))
    status(
        both.post(
            f"{QM1}/",
            {
                "name": "TO.AUDIT",
                "kind": "remote",
                "remote_broker": "QM2",
                "remote_queue": "Q1",
                "transmission_queue": "QM2",
            },
            format="json",
        ),
        201,
    )


def test_put_through_a_remote_queue_needs_put_on_the_queue_it_reaches(two_brokers, as_user):
    queue_define(broker="QM1", name="QM2", usage="transmission")
    queue_define(
        broker="QM1", name="TO.AUDIT", kind="remote", remote_broker="QM2", remote_queue="Q1", transmission_queue="QM2"
    )
    alice = as_user("alice", ("QM1", "TO.AUDIT", "put"))
    status(alice.post(f"{QM1}/TO.AUDIT/messages/", {"body": "x"}, format="json"), 403, "permission_denied")
    assert depth("QM1", "QM2") == 0
    bob = as_user("bob", ("QM1", "TO.AUDIT", "put"), ("QM2", "Q1", "put"))
    status(bob.post(f"{QM1}/TO.AUDIT/messages/", {"body": "x"}, format="json"), 201)
    assert depth("QM1", "QM2") == 1


# --- finding 2: reports go only where the putting user may put, within max depth -------------


def test_reports_to_a_queue_the_user_may_not_put_on_are_refused(two_brokers, as_user):
    queue_define(broker="QM2", name="BILLING.IN", max_depth=2)
    alice = as_user("alice", ("QM1", "", "put"))
    body = {
        "messages": [{"body": "x", "report": ["coa"], "reply_to_broker": "QM2", "reply_to_queue": "BILLING.IN"}] * 5
    }
    status(alice.post(f"{QM1}/Q1/messages/", body, format="json"), 403, "permission_denied")
    status(
        alice.post(f"{QM1}/Q1/messages/", {"body": "x", "report": ["coa"], "reply_to_queue": "Q2"}, format="json"), 201
    )  # its own broker, where it may put
    assert depth("QM2", "BILLING.IN") == 0 and depth("QM1", "Q1") == 1 and depth("QM1", "Q2") == 1


def test_a_report_with_no_route_to_another_broker_goes_to_the_dead_letter_queue(two_brokers, api):
    status(
        api.post(
            f"{QM1}/Q1/messages/",
            {"body": "x", "report": ["coa"], "reply_to_broker": "QM2", "reply_to_queue": "Q1"},
            format="json",
        ),
        201,
    )
    assert depth("QM2", "Q1") == 0
    dead = Message.objects.get(queue__broker__name="QM1", queue__name="SYSTEM.DEAD.LETTER.QUEUE")
    assert dead.msg_type == "report" and "no route" in dead.dead_letter_reason


def test_reports_respect_max_depth(two_brokers, api):
    queue_define(broker="QM1", name="REPLY", max_depth=2)
    body = {"messages": [{"body": "x", "report": ["coa"], "reply_to_queue": "REPLY"}] * 5}
    status(api.post(f"{QM1}/Q1/messages/", body, format="json"), 201)
    assert depth("QM1", "REPLY") == 2
    dead = list(Message.objects.filter(queue__broker__name="QM1", queue__name="SYSTEM.DEAD.LETTER.QUEUE"))
    assert len(dead) == 3 and all("queue full" in m.dead_letter_reason for m in dead)
