"""Defining, altering and deleting from the console: the REST operations run as the signed-in
user; their refusals show in the form (beside the field they name), nothing half-made; the
forms and buttons follow the user's grants."""

from __future__ import annotations

import pytest

from brokers.models import Broker, Queue
from brokers.services.access import grant_actions
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_put

from .conftest import make_user

pytestmark = pytest.mark.django_db


def altered(client, url: str, **changes):
    """Post an alter form as a browser does: every field, as shown, with ``changes``."""
    form = client.get(url).context["form"]
    data = {name: form[name].value() for name in form.fields}
    data = {k: ("" if v is None else str(v).lower() if isinstance(v, bool) else v) for k, v in data.items()}
    return client.post(url, {**data, **changes})


def test_broker_page_defines_a_queue(admin_client, two_brokers):
    page = admin_client.get("/brokers/SEEN/").content.decode()
    assert 'data-form="queue-define"' in page and 'name="name"' in page
    response = admin_client.post(
        "/brokers/SEEN/define/queue/", {"name": "NEW", "kind": "local", "max_depth": "7", "put_enabled": "false"}
    )
    assert response.status_code == 302 and response.headers["location"] == "/brokers/SEEN/queues/NEW/"
    queue = Queue.objects.get(broker__name="SEEN", name="NEW")
    assert queue.max_depth == 7 and queue.put_enabled is False and queue.get_enabled is True


def test_define_refusals_show_in_the_form_and_define_nothing(admin_client, two_brokers):
    bad = admin_client.post("/brokers/SEEN/define/queue/", {"name": "bad name!", "max_depth": "x"})
    assert bad.status_code == 400
    form = bad.context["form"]
    assert "max_depth" in form.errors  # the form's shape: a whole number
    bad = admin_client.post("/brokers/SEEN/define/queue/", {"name": "bad name!"})
    assert bad.status_code == 400
    assert bad.context["form"].errors["name"] == ["Use 1 to 48 characters of A-Z a-z 0-9 . _ / % -."]
    taken = admin_client.post("/brokers/SEEN/define/queue/", {"name": "Q1"})
    assert taken.status_code == 409 and "Q1" in taken.context["form"].non_field_errors()[0]
    remote = admin_client.post("/brokers/SEEN/define/queue/", {"name": "R1", "kind": "remote"})
    assert remote.status_code == 400 and b'role="alert"' in remote.content
    assert not Queue.objects.filter(broker__name="SEEN", name__in=["bad name!", "R1"]).exists()
    assert Queue.objects.filter(broker__name="SEEN").count() == 3  # Q1, Q2 and the dead-letter queue


def test_alter_sends_only_what_changed(admin_client, two_brokers):
    page = admin_client.get("/brokers/SEEN/queues/Q1/alter/")
    assert page.status_code == 200 and page.context["form"]["max_depth"].value() == 5000
    assert page.context["form"]["put_enabled"].value() == "true"  # shown as it is
    assert '<option value="true" selected>yes</option>' in page.content.decode()
    response = altered(
        admin_client, "/brokers/SEEN/queues/Q1/alter/", description="orders", get_enabled="false", put_enabled="true"
    )
    assert response.status_code == 302
    queue = Queue.objects.get(broker__name="SEEN", name="Q1")
    assert queue.description == "orders" and queue.get_enabled is False and queue.put_enabled is True
    refused = altered(admin_client, "/brokers/SEEN/queues/Q1/alter/", default_priority="12")
    assert refused.status_code == 400 and "default_priority" in refused.context["form"].errors


def test_delete_asks_and_refuses_a_queue_with_messages_unless_purged(admin_client, two_brokers):
    message_put(broker="SEEN", queue="Q1", messages=[MessageInput(body=b"x")])
    page = admin_client.get("/brokers/SEEN/queues/Q1/delete/").content.decode()
    assert 'data-field="depth">1<' in page and 'name="purge"' in page
    refused = admin_client.post("/brokers/SEEN/queues/Q1/delete/")
    assert refused.status_code == 409 and Queue.objects.filter(broker__name="SEEN", name="Q1").exists()
    done = admin_client.post("/brokers/SEEN/queues/Q1/delete/", {"purge": "yes"})
    assert done.status_code == 302 and done.headers["location"] == "/brokers/SEEN/"
    assert not Queue.objects.filter(broker__name="SEEN", name="Q1").exists()


def test_brokers_channels_topics_subscriptions_workflows(admin_client, two_brokers):
    assert admin_client.post("/define/broker/", {"name": "B9", "description": "nine"}).status_code == 302
    assert Broker.objects.get(name="B9").description == "nine"
    assert altered(admin_client, "/brokers/B9/alter/", transaction_timeout_ms="1000").status_code == 302
    assert Broker.objects.get(name="B9").transaction_timeout_ms == 1000
    assert admin_client.post("/brokers/SEEN/define/queue/", {"name": "XQ", "usage": "transmission"}).status_code == 302
    channel = {"name": "C1", "source_broker": "SEEN", "transmission_queue": "XQ", "target_broker": "B9"}
    assert admin_client.post("/define/channel/", channel).status_code == 302
    assert altered(admin_client, "/channels/C1/alter/", batch_size="20").status_code == 302
    assert admin_client.get("/channels/C1/alter/").context["form"]["batch_size"].value() == 20
    assert admin_client.post("/channels/C1/delete/").status_code == 302
    topic = {"name": "T1", "topic_string": "prices/eu"}
    assert admin_client.post("/brokers/SEEN/define/topic/", topic).status_code == 302
    assert altered(admin_client, "/brokers/SEEN/topics/T1/alter/", description="eu").status_code == 302
    sub = {"name": "S1", "topic_filter": "prices/#", "queue": "Q2"}
    assert admin_client.post("/brokers/SEEN/define/subscription/", sub).status_code == 302
    assert admin_client.post("/brokers/SEEN/subscriptions/S1/delete/").status_code == 302
    assert admin_client.post("/brokers/SEEN/topics/T1/delete/").status_code == 302
    steps = '[{"name": "pay", "queue": "Q1", "compensation_queue": "Q2"}]'
    response = admin_client.post("/brokers/SEEN/define/workflow/", {"name": "W1", "steps": steps})
    assert response.status_code == 302, response.context["form"].errors
    assert altered(admin_client, "/brokers/SEEN/workflows/W1/alter/", deadline_ms="60000").status_code == 302
    assert admin_client.post("/brokers/SEEN/workflows/W1/delete/").status_code == 302
    assert admin_client.post("/brokers/B9/delete/").status_code == 302
    assert not Broker.objects.filter(name="B9").exists()
    assert admin_client.get("/define/queue/").status_code == 404  # a queue is defined on a broker


def test_roles_decide_the_forms_and_the_operations_refuse_the_rest(client, two_brokers):
    make_user("op")
    grant_actions(username="op", broker="SEEN", actions=["browse", "put", "get"])
    client.login(username="op", password="pw-for-tests-123")
    assert 'data-form="queue-define"' not in client.get("/brokers/SEEN/").content.decode()
    assert "Alter queue" not in client.get("/brokers/SEEN/queues/Q1/").content.decode()
    assert client.post("/brokers/SEEN/define/queue/", {"name": "NOPE"}).status_code == 403
    assert client.post("/brokers/SEEN/queues/Q1/delete/", {"purge": "yes"}).status_code == 403
    assert client.get("/define/broker/").status_code == 403
    grant_actions(username="op", broker="SEEN", actions=["admin"])
    assert 'data-form="queue-define"' in client.get("/brokers/SEEN/").content.decode()
    assert client.post("/brokers/SEEN/define/queue/", {"name": "YES"}).status_code == 302
    assert client.get("/define/broker/").status_code == 403  # brokers: superusers only
    assert not Queue.objects.filter(name="NOPE").exists()


def test_users_and_grants(admin_client, two_brokers):
    from django.contrib.auth import get_user_model

    from brokers.models import Grant

    assert admin_client.get("/users/").status_code == 200
    short = admin_client.post(
        "/users/", {"form": "user", "user-username": "bob", "user-password": "short", "user-role": "viewer"}
    )
    assert short.status_code == 400 and "8 characters" in short.content.decode()
    assert not get_user_model().objects.filter(username="bob").exists()
    made = {"form": "user", "user-username": "bob", "user-password": "long-enough-pw", "user-role": "operator"}
    assert admin_client.post("/users/", {**made, "user-broker": "SEEN"}).status_code == 302
    assert Grant.objects.get(user__username="bob", broker="SEEN").actions == ["put", "get", "browse"]
    grant = {"form": "grant", "grant-username": "bob", "grant-broker": "NONE", "grant-actions": ["admin"]}
    refused = admin_client.post("/users/", grant)
    assert refused.status_code == 404 and "NONE" in refused.content.decode()
    grant.update({"grant-broker": "HIDDEN", "grant-queue": "Q1"})
    assert admin_client.post("/users/", grant).status_code == 302
    assert Grant.objects.get(user__username="bob", broker="HIDDEN", queue="Q1").actions == ["admin"]
    revoke = {"form": "revoke", "revoke-username": "bob", "revoke-broker": "HIDDEN", "revoke-queue": "Q1"}
    assert admin_client.post("/users/", {**revoke, "revoke-actions": ["admin"]}).status_code == 302
    assert not Grant.objects.filter(user__username="bob", broker="HIDDEN").exists()
    assert admin_client.post("/users/", {"form": "delete", "username": "bob"}).status_code == 302
    assert not get_user_model().objects.filter(username="bob").exists()
    admin_client.post("/users/", {"form": "delete", "username": "root"})
    assert get_user_model().objects.filter(username="root").exists()  # not yourself


def test_users_page_is_for_superusers(viewer_client):
    assert viewer_client.get("/users/").status_code == 403
    assert viewer_client.post("/users/", {"form": "delete", "username": "viewer"}).status_code == 403


def test_each_kind_of_queue_offers_its_own_actions(admin_client, two_brokers):
    from brokers.services.queues import queue_define

    queue_define(broker="SEEN", name="XMIT", usage="transmission")
    queue_define(
        broker="SEEN", name="FAR", kind="remote", remote_broker="OTHER", remote_queue="Q", transmission_queue="XMIT"
    )
    remote = admin_client.get("/brokers/SEEN/queues/FAR/").content.decode()
    assert 'id="message-table"' not in remote and "Purge" not in remote and 'id="holds-none"' in remote
    assert "Put a message" in remote and "Bulk ingest" not in remote
    assert admin_client.get("/brokers/SEEN/queues/FAR/purge/").status_code == 400
    xmit = admin_client.get("/brokers/SEEN/queues/XMIT/").content.decode()
    assert "Put a message" not in xmit and 'id="put-not-here"' in xmit and 'id="message-table"' in xmit
    refused = admin_client.post("/brokers/SEEN/queues/XMIT/put/", {"body": "x"})
    assert refused.status_code == 302 and Queue.objects.get(broker__name="SEEN", name="XMIT").messages.count() == 0
    dlq = admin_client.get("/brokers/SEEN/queues/SYSTEM.DEAD.LETTER.QUEUE/")
    assert dlq.status_code == 200
    page = dlq.content.decode()
    assert "Bulk ingest" not in page and "dead-letter reason" in page and "from queue" in page
    assert (
        admin_client.post("/brokers/SEEN/queues/SYSTEM.DEAD.LETTER.QUEUE/ingest/", {"source": "x"}).status_code == 400
    )
    normal = admin_client.get("/brokers/SEEN/queues/Q1/").content.decode()
    assert "Bulk ingest" in normal and "Purge" in normal and "dead-letter reason" not in normal


def test_remove_one_message(admin_client, two_brokers):
    from brokers.services.messages import message_get

    first, second = message_put(
        broker="SEEN", queue="Q1", messages=[MessageInput(body=b"a"), MessageInput(body=b"b")]
    ).messages
    page = admin_client.get(f"/brokers/SEEN/queues/Q1/messages/{first.msg_id}/").content.decode()
    assert 'data-form="message-delete"' in page
    done = admin_client.post(f"/brokers/SEEN/queues/Q1/messages/{first.msg_id}/delete/")
    assert done.status_code == 302 and done.headers["location"] == "/brokers/SEEN/queues/Q1/"
    assert [m.msg_id for m in Queue.objects.get(broker__name="SEEN", name="Q1").messages.all()] == [second.msg_id]
    message_get(broker="SEEN", queue="Q1", syncpoint="yes")  # in flight: left alone
    refused = admin_client.post(f"/brokers/SEEN/queues/Q1/messages/{second.msg_id}/delete/")
    assert refused.status_code == 302 and "/messages/" in refused.headers["location"]
    assert Queue.objects.get(broker__name="SEEN", name="Q1").messages.count() == 1


def test_a_viewer_removes_no_message(viewer_client):
    [m] = message_put(broker="SEEN", queue="Q1", messages=[MessageInput(body=b"a")]).messages
    assert (
        'data-form="message-delete"'
        not in viewer_client.get(f"/brokers/SEEN/queues/Q1/messages/{m.msg_id}/").content.decode()
    )
    assert viewer_client.post(f"/brokers/SEEN/queues/Q1/messages/{m.msg_id}/delete/").status_code == 403
    assert Queue.objects.get(broker__name="SEEN", name="Q1").messages.count() == 1
