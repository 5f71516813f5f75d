"""The indirect paths' rule where a route is defined (docs/permissions.md, "Indirect paths"):
a subscription's queue and a workflow's step and compensation queues must lead where the
definer may put; a step's compensation input is checked at ``complete`` as the completer's
put of it would be, since Baton puts it later on nobody's behalf."""

from __future__ import annotations

import pytest

from brokers.models import Message
from brokers.services.queues import queue_define
from pubsub.models import Subscription
from workflows.models import Workflow

pytestmark = pytest.mark.django_db

SUBS = "/api/brokers/QM1/subscriptions/"
FLOWS = "/api/brokers/QM1/workflows/"


def status(response, expected: int, code: str | None = None) -> dict:
    assert response.status_code == expected, (response.status_code, response.content[:400])
    body = response.json() if response.content else {}
    if code:
        assert body["code"] == code, body
    return body


def depth(broker: str, queue: str) -> int:
    return Message.objects.filter(queue__broker__name=broker, queue__name=queue).count()


@pytest.fixture
def routed(two_brokers):
    """QM1 holds a remote queue TO.QM2 into QM2's Q1 (over transmission queue QM2) and an
    alias AL.QM2 of that remote queue."""
    queue_define(broker="QM1", name="QM2", usage="transmission")
    queue_define(
        broker="QM1", name="TO.QM2", kind="remote", remote_broker="QM2", remote_queue="Q1", transmission_queue="QM2"
    )
    queue_define(broker="QM1", name="AL.QM2", kind="alias", target_queue="TO.QM2")


# --- subscriptions ---------------------------------------------------------------------------


@pytest.mark.parametrize("queue", ["TO.QM2", "AL.QM2"])
def test_a_broker_admin_cannot_subscribe_a_queue_leading_into_a_broker_it_may_not_put_on(routed, as_user, queue):
    ops = as_user("ops", ("QM1", "", "admin,put,get"))
    refused = status(
        ops.post(SUBS, {"name": "LEAK", "topic_filter": "orders/#", "queue": queue}, format="json"),
        403,
        "permission_denied",
    )
    assert "broker" not in refused, refused  # it names nothing where ops holds no grant
    assert not Subscription.objects.filter(name="LEAK").exists()
    # a local queue, and a route into a queue the definer may put on, are fine
    status(ops.post(SUBS, {"name": "HERE", "topic_filter": "orders/#", "queue": "Q2"}, format="json"), 201)
    both = as_user("both", ("QM1", "", "admin"), ("QM2", "Q1", "put"))
    status(both.post(SUBS, {"name": "THERE", "topic_filter": "orders/#", "queue": queue}, format="json"), 201)


def test_a_publication_reaches_no_broker_through_a_subscription_refused_at_definition(routed, as_user):
    ops = as_user("ops", ("QM1", "", "admin,put,get"))
    ops.post(SUBS, {"name": "LEAK", "topic_filter": "orders/#", "queue": "TO.QM2"}, format="json")
    status(ops.post("/api/brokers/QM1/publish/", {"topic": "orders/1", "body": "secret"}, format="json"), 201)
    assert depth("QM1", "QM2") == 0 and depth("QM2", "Q1") == 0


# --- workflows -------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["queue", "compensation_queue"])
def test_a_broker_admin_cannot_define_a_workflow_whose_queue_leads_into_another_broker(routed, as_user, field):
    ops = as_user("ops", ("QM1", "", "admin,put,get"))
    step = {"name": "a", "queue": "Q1", "compensation_queue": "Q2", field: "TO.QM2"}
    status(ops.post(FLOWS, {"name": "w", "steps": [step]}, format="json"), 403, "permission_denied")
    assert not Workflow.objects.filter(name="w").exists()
    good = {"name": "a", "queue": "Q1", "compensation_queue": "Q2"}
    status(ops.post(FLOWS, {"name": "w", "steps": [good]}, format="json"), 201)
    # altering it into such a route is refused too, and leaves version 1
    status(ops.patch(f"{FLOWS}w/", {"steps": [step]}, format="json"), 403, "permission_denied")
    assert Workflow.objects.get(name="w").version == 1
    both = as_user("both", ("QM1", "", "admin"), ("QM2", "Q1", "put"))
    status(both.patch(f"{FLOWS}w/", {"steps": [step]}, format="json"), 200)


# --- compensation input ----------------------------------------------------------------------


@pytest.fixture
def running(two_brokers, api, as_user):
    """Workflow ``w`` on QM1 (a on Q1, compensated on Q2; then b on Q2), one instance
    started, and alice (put and get on Q1 and Q2 only) holding step a's request."""
    steps = [
        {"name": "a", "queue": "Q1", "compensation_queue": "Q2"},
        {"name": "b", "queue": "Q2", "compensation_queue": "Q2"},
    ]
    status(api.post(FLOWS, {"name": "w", "steps": steps}, format="json"), 201)
    alice = as_user("alice", ("QM1", "Q1", "put,get"), ("QM1", "Q2", "put,get"))
    instance = status(api.post(f"{FLOWS}w/instances/", {"body": "order"}, format="json"), 201)["id"]
    txn = status(alice.post("/api/brokers/QM1/transactions/", {}, format="json"), 201)["id"]
    status(alice.post("/api/brokers/QM1/queues/Q1/get/", {"transaction": txn}, format="json"), 200)
    return alice, instance, txn


@pytest.mark.parametrize(
    "compensation",
    [
        {"body": "undo", "report": ["coa"], "reply_to_queue": "Q1", "reply_to_broker": "QM2"},
        {"body": "undo", "msg_type": "report"},
    ],
    ids=["reports-elsewhere", "forged-report"],
)
@pytest.mark.parametrize("commit", [False, True], ids=["complete", "complete-and-commit"])
def test_compensation_input_is_checked_as_the_completers_put(running, api, compensation, commit):
    alice, instance, txn = running
    url = f"/api/workflow-instances/{instance}/steps/a/complete/"
    refused = {"transaction": txn, "compensation": compensation, "commit": commit}
    status(alice.post(url, refused, format="json"), 403, "permission_denied")
    # nothing was recorded: the same step completes with an input alice may put
    accepted = {"transaction": txn, "compensation": {"body": "undo"}, "commit": commit}
    status(alice.post(url, accepted, format="json"), 200)
    if not commit:
        status(alice.post(f"/api/transactions/{txn}/commit/", {}, format="json"), 200)
    status(api.post(f"/api/workflow-instances/{instance}/abort/", {}, format="json"), 202)
    assert depth("QM2", "Q1") == 0
    assert not Message.objects.filter(msg_type="report").exists()
    on_q2 = sorted(bytes(m.body) for m in Message.objects.filter(queue__name="Q2", queue__broker__name="QM1"))
    assert on_q2 == [b"", b"undo"]  # step b's request, and the compensation request as alice gave it


def test_compensation_input_asking_for_reports_where_the_completer_may_put_is_accepted(running, api):
    alice, instance, txn = running
    url = f"/api/workflow-instances/{instance}/steps/a/complete/"
    compensation = {"body": "undo", "report": ["coa"], "reply_to_queue": "Q1"}
    status(alice.post(url, {"transaction": txn, "compensation": compensation}, format="json"), 200)
