"""The dashboard's topics and subscriptions pages (Django's test client): what they show,
and to whom."""

from __future__ import annotations

import pytest

from brokers.services.access import grant_actions
from pubsub.services.subscriptions import subscription_define
from pubsub.services.topics import topic_define
from tests.dashboard.conftest import make_user

from .conftest import publish

pytestmark = pytest.mark.django_db


def test_topics_page(admin_client, queues):
    topic_define(broker="QM1", name="PRICES", topic_string="prices", conflation_interval_ms=250)
    publish("prices/eur", "1.10", retain=True)
    publish("$SYS/uptime", "9", retain=True)
    page = admin_client.get("/brokers/QM1/topics/").content.decode()
    assert 'data-topic="PRICES"' in page and "250 ms" in page
    assert 'data-topic="prices/eur"' in page and "1.10" in page and 'data-topic="$SYS/uptime"' in page
    assert 'href="/brokers/QM1/topics/"' in admin_client.get("/brokers/QM1/").content.decode()


def test_subscriptions_page_shows_state(admin_client, queues):
    subscription_define(broker="QM1", name="live", topic_filter="a/#", queue="S1")
    subscription_define(broker="QM1", name="later", topic_filter="b", queue="S2", activation_topic="go")
    page = admin_client.get("/brokers/QM1/subscriptions/").content.decode()
    assert 'data-subscription="live" data-active="true"' in page
    assert 'data-subscription="later" data-active="false"' in page
    assert 'href="/brokers/QM1/queues/S1/"' in page


def test_access_follows_the_grants(client, queues):
    subscription_define(broker="QM1", name="mine", topic_filter="a", queue="S1")
    subscription_define(broker="QM1", name="theirs", topic_filter="a", queue="S2")
    make_user("viewer")
    grant_actions(username="viewer", broker="QM1", queue="S1", actions=["browse"])
    client.login(username="viewer", password="pw-for-tests-123")
    page = client.get("/brokers/QM1/subscriptions/").content.decode()
    assert 'data-subscription="mine"' in page and 'data-subscription="theirs"' not in page
    assert client.get("/brokers/QM1/topics/").status_code == 200
    make_user("stranger")
    client.login(username="stranger", password="pw-for-tests-123")
    assert client.get("/brokers/QM1/topics/").status_code == 403
    assert client.get("/brokers/QM1/subscriptions/").status_code == 403


def test_pages_need_a_sign_in(client, queues):
    for path in ("/brokers/QM1/topics/", "/brokers/QM1/subscriptions/"):
        assert client.get(path).status_code == 302
