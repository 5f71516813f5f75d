"""The Django admin lists and shows brokers, queues, messages and transactions."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from brokers.models import Message
from brokers.services.messages import message_put
from tests.conftest import msgs
from transactions.manager import transaction_begin


@pytest.mark.parametrize(
    "path",
    [
        "/admin/brokers/broker/",
        "/admin/brokers/queue/",
        "/admin/brokers/message/",
        "/admin/brokers/channel/",
        "/admin/transactions/transaction/",
        "/admin/transactions/link/",
        "/admin/transactions/journalevent/",
    ],
)
def test_admin_lists_render(client, queue, path):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("in admin"), transaction_id=txn.id)
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw-For-Admin-1")
    client.force_login(admin)
    response = client.get(path)
    assert response.status_code == 200, path


def test_admin_message_page_shows_the_descriptor(client, queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("hello"))
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw-For-Admin-1")
    client.force_login(admin)
    message = Message.objects.get()
    response = client.get(f"/admin/brokers/message/{message.pk}/change/")
    assert response.status_code == 200 and message.msg_id in response.content.decode()
