"""Housekeeping done by the real Celery beat and worker (BATON_HOUSEKEEPING_INTERVAL_S=0.2):
expired messages are removed, overdue units of work are rolled back for "timeout"."""

from __future__ import annotations

import pytest

from .servers import poll_until

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass


def test_expired_message_is_removed_from_the_queue(platform, http, live_broker):
    queue = f"/api/brokers/{live_broker}/queues/Q1/"
    keep = http.post(queue + "messages/", json={"body": "keep"})
    assert keep.status_code == 201, keep.text
    short = http.post(queue + "messages/", json={"body": "short-lived", "expiry_ms": 200})
    assert short.status_code == 201, short.text
    assert short.json()["expires_at"]

    # depth counts every committed message still stored, expired or not: it drops only
    # when the sweeper (beat -> worker) removes the expired one
    poll_until(
        lambda: http.get(queue).json()["depth"] == 1,
        timeout=20,
        interval=0.1,
        what="the expired message to leave the queue's depth",
        diagnostics=platform.logs,
    )
    browse = http.get(queue + "messages/").json()["messages"]
    assert [m["msg_id"] for m in browse] == [keep.json()["msg_id"]]
    got = http.post(queue + "get/", json={"batch": 10}).json()["messages"]
    assert [m["body"] for m in got] == ["keep"]


def test_transaction_times_out_and_is_rolled_back(platform, http, live_broker):
    queue = f"/api/brokers/{live_broker}/queues/Q1/"
    begun = http.post(f"/api/brokers/{live_broker}/transactions/", json={"timeout_ms": 300})
    assert begun.status_code == 201, begun.text
    txn = begun.json()["id"]
    assert begun.json()["state"] == "active"
    put = http.post(queue + "messages/", json={"body": "never committed", "transaction": txn})
    assert put.status_code == 201, put.text

    def resolved():
        shown = http.get(f"/api/transactions/{txn}/").json()
        return shown if shown["state"] != "active" else None

    shown = poll_until(
        resolved, timeout=20, interval=0.1, what=f"transaction {txn} to leave state active", diagnostics=platform.logs
    )
    assert shown["state"] == "rolled_back"
    assert shown["reason"] == "timeout"
    assert shown["resolved_at"]
    detail = http.get(queue).json()
    assert (detail["depth"], detail["uncommitted_puts"]) == (0, 0)
    commit = http.post(f"/api/transactions/{txn}/commit/", json={})
    assert commit.status_code == 409
    assert commit.json()["code"] == "transaction_backed_out" and commit.json()["reason"] == "timeout"
