"""The dashboard shows a user the channels REST shows them: those whose source broker they
hold a grant on (the channels page, the broker page and the overview socket's data)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from brokers.channels.definitions import channel_define
from brokers.services.access import api_token_issue, grant_actions
from brokers.services.queues import queue_define
from dashboard import selectors
from dashboard.access import visibility

from .conftest import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def channels(two_brokers):
    for broker, target in (("SEEN", "HIDDEN"), ("HIDDEN", "SEEN")):
        queue_define(broker=broker, name=target, usage="transmission")
        channel_define(
            name=f"{broker}.TO.{target}", source_broker=broker, transmission_queue=target, target_broker=target
        )


def test_channels_shown_are_those_rest_shows(channels, client):
    user = make_user("solo")
    grant_actions(username="solo", broker="SEEN", actions=["browse"])
    rest = APIClient()
    rest.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(username='solo')}")
    listed = [c["name"] for c in rest.get("/api/channels/").json()["results"]]
    assert listed == ["SEEN.TO.HIDDEN"]

    overview = selectors.overview_for(selectors.overview(), visibility(user))
    assert [c["name"] for c in overview["channels"]] == listed
    assert [c["name"] for c in selectors.broker_page(broker="SEEN", seen=visibility(user))["channels"]] == listed

    client.force_login(user)
    page = client.get("/channels/").content.decode()
    assert "SEEN.TO.HIDDEN" in page and "HIDDEN.TO.SEEN" not in page
    page = client.get("/brokers/SEEN/").content.decode()
    assert "HIDDEN.TO.SEEN" not in page


def test_channel_history_and_backlog_come_from_the_server(channels, admin_client):
    """What the channels page shows before any push: rates from the journal's gets off each
    transmission queue (as a channel agent gets), backlog from its depth."""
    from brokers.services.message_input import MessageInput
    from brokers.services.messages import message_get, message_put

    message_put(broker="SEEN", queue="HIDDEN", messages=[MessageInput(body=b"m")] * 5)
    for _ in range(3):
        message_get(broker="SEEN", queue="HIDDEN")
    solo = make_user("solo")
    grant_actions(username="solo", broker="SEEN", actions=["browse"])

    rates = selectors.channel_rates(seen=visibility(solo))
    assert sum(p["rate"] for p in rates["points"]) * rates["bucket"] == 3
    assert rates["channels"] == {"SEEN.TO.HIDDEN": 3 / 60}  # the other broker's channel is not theirs
    assert admin_client.get("/channels/rates/").json()["channels"] == {"HIDDEN.TO.SEEN": 0, "SEEN.TO.HIDDEN": 0.05}

    data = selectors.overview_for(selectors.overview(), visibility(solo))
    assert selectors.channel_backlogs(data) == {"SEEN.TO.HIDDEN": 2}
    page = admin_client.get("/channels/").content.decode()
    assert '<td class="n" data-field="backlog">2</td>' in page


def test_consumers_of_a_queue_and_connections_of_a_broker(channels, admin_client):
    """Who takes messages from a queue (a channel agent reading it, units of work holding
    its messages in flight, per owner) and a broker's open sessions, on their pages."""
    from brokers.services.connections import connection_open
    from brokers.services.message_input import MessageInput
    from brokers.services.messages import message_get, message_put

    message_put(broker="SEEN", queue="HIDDEN", messages=[MessageInput(body=b"m")] * 3)
    message_get(broker="SEEN", queue="HIDDEN", syncpoint="yes", batch=2)
    consumers = selectors.queue_consumers(broker="SEEN", queue="HIDDEN")
    assert consumers["channels"] == [{"name": "SEEN.TO.HIDDEN", "state": "stopped", "target_broker": "HIDDEN"}]
    assert [(u["units"], u["messages"]) for u in consumers["units"]] == [(1, 2)]
    assert selectors.queue_consumers(broker="SEEN", queue="Q1") == {"stomp": [], "channels": [], "units": []}
    page = admin_client.get("/brokers/SEEN/queues/HIDDEN/").content.decode()
    assert 'id="consumer-table"' in page and "channel SEEN.TO.HIDDEN" in page and "1 unit of work holding" in page

    connection_open(broker="SEEN", client_name="billing-app")
    assert [c["client_name"] for c in selectors.broker_connections(broker="SEEN")["sessions"]] == ["billing-app"]
    assert "billing-app" in admin_client.get("/brokers/SEEN/").content.decode()
    assert "billing-app" not in admin_client.get("/brokers/HIDDEN/").content.decode()


def test_a_session_closed_from_the_broker_page_runs_the_operation(two_brokers, client):
    from brokers.models import Connection
    from brokers.services.connections import connection_open

    conn = connection_open(broker="SEEN", client_name="billing-app").connection.conn_id
    url = f"/brokers/SEEN/connections/{conn}/close/"
    viewer = make_user("looker")
    grant_actions(username="looker", broker="SEEN", actions=["browse"])
    client.force_login(viewer)
    assert 'action="' + url not in client.get("/brokers/SEEN/").content.decode()  # no button
    assert client.post(url).status_code == 404  # nor the operation: as REST answers one not theirs (not_found)
    assert Connection.objects.get(pk=conn).closed_at is None

    client.force_login(make_user("root", superuser=True))
    assert 'action="' + url in client.get("/brokers/SEEN/").content.decode()
    answer = client.post(url)
    assert answer.status_code == 302 and answer.headers["location"] == "/brokers/SEEN/"
    assert Connection.objects.get(pk=conn).closed_at is not None
    assert "billing-app" not in client.get("/brokers/SEEN/").content.decode()
