"""The broker page's queue list: filtered, sorted and paged by the server, so a broker with
thousands of queues stays usable; bad parameters answer 400 naming the field."""

from __future__ import annotations

import re

import pytest

from brokers.services.brokers import broker_define
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_put
from brokers.services.queues import queue_define

pytestmark = pytest.mark.django_db


@pytest.fixture
def many(db):
    broker_define(name="BIG")
    for i in range(120):
        queue_define(broker="BIG", name=f"APP.{i:03d}", kind="local")
    message_put(broker="BIG", queue="APP.077", messages=[MessageInput(body=b"x")] * 3)
    message_put(broker="BIG", queue="APP.005", messages=[MessageInput(body=b"x")])


def names(response) -> list[str]:
    return re.findall(r'<tr data-queue="([^"]+)"', response.content.decode())


def test_pages_of_fifty_in_name_order(admin_client, many):
    first = admin_client.get("/brokers/BIG/")
    shown = names(first)
    assert len(shown) == 50 and shown[0] == "APP.000" and shown[-1] == "APP.049"
    assert 'data-paged="true"' in first.content.decode() and "page 1 of 3" in first.content.decode()
    last = admin_client.get("/brokers/BIG/?page=3")
    assert names(last)[0] == "APP.100" and len(names(last)) == 21  # 120 queues and the dead-letter queue
    assert 'rel="prev" href="?page=2"' in last.content.decode()


def test_filter_and_sort_by_depth(admin_client, many):
    assert names(admin_client.get("/brokers/BIG/?name=.07")) == [f"APP.07{i}" for i in range(10)]
    deepest = names(admin_client.get("/brokers/BIG/?sort=-depth&name=APP"))
    assert deepest[:3] == ["APP.077", "APP.005", "APP.000"]
    page = admin_client.get("/brokers/BIG/?sort=-depth&kind=local&page=2").content.decode()
    assert 'href="?kind=local&amp;sort=-depth&amp;page=1"' in page


@pytest.mark.parametrize(("query", "field"), [("sort=size", "sort"), ("kind=weird", "kind"), ("page=0", "page")])
def test_bad_parameters_are_400_naming_the_field(admin_client, many, query, field):
    response = admin_client.get(f"/brokers/BIG/?{query}")
    assert response.status_code == 400
    assert re.search(rf'id="queue-list-error">{field}: ', response.content.decode())
    assert names(response) == []


def test_a_short_list_stays_live_and_unpaged(admin_client, queue):
    page = admin_client.get("/brokers/QM1/").content.decode()
    assert 'data-paged="false"' in page and "Q1" in names(admin_client.get("/brokers/QM1/"))
