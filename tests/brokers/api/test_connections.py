"""REST contract: connections and their persistent session (docs/api.md, "Connections")."""

from __future__ import annotations

import re

import pytest

from tests.helpers import assert_error

pytestmark = pytest.mark.django_db

OPEN = "/api/brokers/QM1/connections/"
PUT = "/api/brokers/QM1/queues/Q1/messages/"
GET = "/api/brokers/QM1/queues/Q1/get/"
HEX48 = re.compile(r"^[0-9a-f]{48}$")


def connect(api, client_name: str = "app1", path: str = OPEN) -> dict:
    response = api.post(path, {"client_name": client_name}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_open_connection(api, broker):
    conn = connect(api)
    assert HEX48.match(conn["conn_id"])
    assert conn["client_name"] == "app1"
    assert conn["last_put_msg_id"] is None and conn["last_got_msg_id"] is None


def test_connection_ids_are_distinct_and_unlike_message_ids(api, queue):
    ids = {connect(api, f"c{i}")["conn_id"] for i in range(5)}
    assert len(ids) == 5
    msg_id = api.post(PUT, {"body": "x"}, format="json").json()["msg_id"]
    assert msg_id not in ids


def test_last_put_and_got_persist_across_reconnect(api, queue):
    first = connect(api)
    put = api.post(PUT, {"body": "request", "connection": first["conn_id"]}, format="json")
    assert put.status_code == 201, put.content
    put_id = put.json()["msg_id"]
    api.post(PUT, {"body": "other"}, format="json")  # not on this connection
    got = api.post(GET, {"connection": first["conn_id"]}, format="json")
    assert got.status_code == 200, got.content
    got_id = got.json()["messages"][0]["msg_id"]
    assert got_id == put_id

    second = connect(api)
    assert second["conn_id"] != first["conn_id"]
    assert second["last_put_msg_id"] == put_id
    assert second["last_got_msg_id"] == got_id

    other_client = connect(api, "app2")
    assert other_client["last_put_msg_id"] is None and other_client["last_got_msg_id"] is None


def test_last_put_under_transaction_counts_only_once_committed(api, queue):
    conn = connect(api)["conn_id"]
    first = api.post(PUT, {"body": "one", "connection": conn}, format="json").json()["msg_id"]
    txn = api.post("/api/brokers/QM1/transactions/", {}, format="json").json()["id"]
    second = api.post(PUT, {"body": "two", "connection": conn, "transaction": txn}, format="json").json()["msg_id"]
    assert connect(api)["last_put_msg_id"] == first
    assert api.post(f"/api/transactions/{txn}/commit/", {}, format="json").status_code == 200
    assert connect(api)["last_put_msg_id"] == second


def test_display_and_close_connection(api, broker):
    conn = connect(api)["conn_id"]
    shown = api.get(f"/api/connections/{conn}/")
    assert shown.status_code == 200
    assert shown.json()["conn_id"] == conn and shown.json()["client_name"] == "app1"
    assert api.delete(f"/api/connections/{conn}/").status_code == 204
    assert_error(api.get(f"/api/connections/{conn}/"), 404, "not_found")


def test_put_on_closed_or_unknown_connection_stores_nothing(api, queue):
    conn = connect(api)["conn_id"]
    api.delete(f"/api/connections/{conn}/")
    assert_error(api.post(PUT, {"body": "x", "connection": conn}, format="json"), 404, "not_found")
    assert_error(api.post(PUT, {"body": "x", "connection": "00" * 24}, format="json"), 404, "not_found")
    assert api.get("/api/brokers/QM1/queues/Q1/").json()["depth"] == 0


def test_connection_to_another_broker_is_refused(api, queue):
    api.post("/api/brokers/", {"name": "OTHER"}, format="json")
    conn = connect(api, path="/api/brokers/OTHER/connections/")["conn_id"]
    body = assert_error(api.post(PUT, {"body": "x", "connection": conn}, format="json"), 400, "invalid")
    assert body["message"]
    assert api.get("/api/brokers/QM1/queues/Q1/").json()["depth"] == 0


@pytest.mark.parametrize("payload", [{}, {"client_name": ""}, {"client_name": 5}, {"client_name": "x" * 101}])
def test_open_without_valid_client_name_is_400(api, broker, payload):
    body = assert_error(api.post(OPEN, payload, format="json"), 400, "invalid")
    assert "client_name" in body["errors"]


def test_open_on_unknown_broker_is_404(api):
    assert_error(api.post("/api/brokers/NOPE/connections/", {"client_name": "a"}, format="json"), 404, "not_found")


def test_closing_connection_rolls_back_its_unit_of_work(api, queue):
    conn = connect(api)["conn_id"]
    put = api.post(PUT, {"body": "x", "connection": conn, "syncpoint": "yes"}, format="json").json()
    txn = put["transaction"]
    assert txn
    assert api.get("/api/brokers/QM1/queues/Q1/").json()["uncommitted_puts"] == 1
    assert api.delete(f"/api/connections/{conn}/").status_code == 204
    assert api.get(f"/api/transactions/{txn}/").json()["state"] == "rolled_back"
    assert api.get("/api/brokers/QM1/queues/Q1/").json()["uncommitted_puts"] == 0
