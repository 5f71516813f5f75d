"""Django's admin: not served unless ``BATON_ADMIN`` is on (default off, production
included); where served, it lists and shows brokers, queues, messages and transactions, and
changes none of the engine's own tables (messages and their locks, units of work, links,
journal events, connections, client sessions: docs/permissions.md, "Django's admin")."""

from __future__ import annotations

import importlib

import pytest
from django.contrib.auth import get_user_model
from django.urls import clear_url_caches

from brokers.models import Message
from brokers.services.connections import connection_open
from brokers.services.messages import message_put
from tests.conftest import msgs
from transactions.manager import transaction_begin
from transactions.models import JournalEvent, Link, Transaction


def _urls_reloaded() -> None:
    import config.urls

    clear_url_caches()
    importlib.reload(config.urls)


@pytest.fixture
def admin_served(settings):
    """The platform as deployed with BATON_ADMIN=1: its URLs read again with it on."""
    served = settings.BATON_ADMIN
    settings.BATON_ADMIN = True
    _urls_reloaded()
    yield
    settings.BATON_ADMIN = served
    _urls_reloaded()


@pytest.fixture
def root(client, db):
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw-For-Admin-1")
    client.force_login(admin)
    return client


def test_the_admin_is_not_served_by_default(root, queue, settings):
    assert settings.BATON_ADMIN is False
    assert root.get("/admin/").status_code == 404
    assert root.get("/admin/brokers/message/").status_code == 404
    assert root.get("/admin/login/").status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/admin/brokers/broker/",
        "/admin/brokers/queue/",
        "/admin/brokers/message/",
        "/admin/brokers/channel/",
        "/admin/brokers/connection/",
        "/admin/transactions/transaction/",
        "/admin/transactions/link/",
        "/admin/transactions/journalevent/",
    ],
)
def test_admin_lists_render(admin_served, root, queue, path):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("in admin"), transaction_id=txn.id)
    response = root.get(path)
    assert response.status_code == 200, path


def test_admin_message_page_shows_the_descriptor(admin_served, root, queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("hello"))
    message = Message.objects.get()
    response = root.get(f"/admin/brokers/message/{message.pk}/change/")
    assert response.status_code == 200 and message.msg_id in response.content.decode()


def _engine_rows():
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("held"), transaction_id=txn.id)
    conn = connection_open(broker="QM1", client_name="app").connection
    return {
        "brokers/message": Message.objects.get().pk,
        "transactions/transaction": txn.pk,
        "transactions/journalevent": JournalEvent.objects.order_by("pk").first().pk,
        "brokers/connection": conn.pk,
    }


def test_the_admin_changes_nothing_the_engine_owns(admin_served, root, queue):
    rows = _engine_rows()
    before = (
        list(Message.objects.values()),
        list(Transaction.objects.values()),
        list(JournalEvent.objects.values()),
    )
    for model, pk in rows.items():
        change = f"/admin/{model}/{pk}/change/"
        page = root.get(change)
        assert page.status_code == 200 and 'name="_save"' not in page.content.decode(), model  # view only
        assert root.post(change, {"body": "forged", "state": "committed", "kind": "put"}).status_code == 403, model
        assert root.get(f"/admin/{model}/add/").status_code == 403, model
        assert root.post(f"/admin/{model}/add/", {}).status_code == 403, model
        assert root.post(f"/admin/{model}/{pk}/delete/", {"post": "yes"}).status_code == 403, model
        listing = root.post(f"/admin/{model}/", {"action": "delete_selected", "_selected_action": [pk], "post": "yes"})
        assert listing.status_code in (200, 302), model  # no such action: nothing deleted
    assert root.get("/admin/transactions/link/add/").status_code == 403
    assert not Link.objects.exists()
    after = (
        list(Message.objects.values()),
        list(Transaction.objects.values()),
        list(JournalEvent.objects.values()),
    )
    assert after == before
