"""REST contract: transactions (docs/api.md, "Transactions")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.helpers import assert_error

pytestmark = pytest.mark.django_db

Q1 = "/api/brokers/QM1/queues/Q1/"
PUT = Q1 + "messages/"
GET = Q1 + "get/"
BEGIN = "/api/brokers/QM1/transactions/"
UNKNOWN = "0123456789abcdef0123456789abcdef"


def begin(api, **payload) -> dict:
    response = api.post(BEGIN, payload, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def queue_detail(api) -> dict:
    return api.get(Q1).json()


def txn_url(txn_id: str, action: str = "") -> str:
    return f"/api/transactions/{txn_id}/" + (f"{action}/" if action else "")


def test_begin_is_201_active(api, queue):
    txn = begin(api)
    assert txn["id"]
    assert txn["state"] == "active"
    assert txn["broker"] == "QM1"
    assert txn["reason"] is None
    assert txn["upstream"] == [] and txn["downstream"] == []
    assert txn["created_at"] and txn["resolved_at"] is None


def test_display(api, queue):
    txn = begin(api)
    response = api.get(txn_url(txn["id"]))
    assert response.status_code == 200
    shown = response.json()
    for key in ("id", "broker", "state", "reason", "upstream", "downstream", "created_at", "resolved_at"):
        assert key in shown, key
    assert shown["id"] == txn["id"] and shown["state"] == "active"


def test_commit_makes_puts_visible(api, queue):
    txn = begin(api)["id"]
    response = api.post(PUT, {"messages": [{"body": "a"}, {"body": "b"}], "transaction": txn}, format="json")
    assert response.status_code == 201
    assert response.json()["transaction"] == txn
    detail = queue_detail(api)
    assert (detail["depth"], detail["uncommitted_puts"]) == (0, 2)
    assert api.post(GET, {}, format="json").json()["messages"] == []
    response = api.post(txn_url(txn, "commit"), {}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["state"] == "committed"
    shown = api.get(txn_url(txn)).json()
    assert shown["state"] == "committed" and shown["resolved_at"]
    detail = queue_detail(api)
    assert (detail["depth"], detail["uncommitted_puts"]) == (2, 0)
    got = api.post(GET, {"batch": 5}, format="json").json()["messages"]
    assert [m["body"] for m in got] == ["a", "b"]


def test_commit_with_empty_body_and_with_wait(api, queue):
    first = begin(api)["id"]
    assert api.post(txn_url(first, "commit")).status_code == 200
    second = begin(api)["id"]
    response = api.post(txn_url(second, "commit"), {"wait": 1}, format="json")
    assert response.status_code == 200 and response.json()["state"] == "committed"


def test_commit_twice_answers_committed_again(api, queue):
    txn = begin(api)["id"]
    assert api.post(txn_url(txn, "commit"), {}, format="json").status_code == 200
    response = api.post(txn_url(txn, "commit"), {}, format="json")
    assert response.status_code == 200 and response.json()["state"] == "committed"


def test_rollback_is_200_with_empty_cascade_and_undoes_puts(api, queue):
    txn = begin(api)["id"]
    api.post(PUT, {"body": "gone", "transaction": txn}, format="json")
    response = api.post(txn_url(txn, "rollback"), {}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["state"] == "rolled_back"
    assert body["cascaded"] == []
    shown = api.get(txn_url(txn)).json()
    assert shown["state"] == "rolled_back" and shown["reason"] and shown["resolved_at"]
    detail = queue_detail(api)
    assert (detail["depth"], detail["uncommitted_puts"]) == (0, 0)


def test_rollback_returns_gotten_messages(api, queue):
    api.post(PUT, {"body": "m"}, format="json")
    txn = begin(api)["id"]
    api.post(GET, {"transaction": txn}, format="json")
    assert api.post(txn_url(txn, "rollback"), {}, format="json").status_code == 200
    detail = queue_detail(api)
    assert (detail["depth"], detail["in_flight"]) == (1, 0)


def test_rollback_twice_is_idempotent(api, queue):
    txn = begin(api)["id"]
    assert api.post(txn_url(txn, "rollback"), {}, format="json").status_code == 200
    response = api.post(txn_url(txn, "rollback"), {}, format="json")
    assert response.status_code == 200 and response.json()["state"] == "rolled_back"


def test_commit_after_rollback_is_409_transaction_backed_out_with_reason(api, queue):
    txn = begin(api)["id"]
    api.post(txn_url(txn, "rollback"), {}, format="json")
    body = assert_error(api.post(txn_url(txn, "commit"), {}, format="json"), 409, "transaction_backed_out")
    reason = api.get(txn_url(txn)).json()["reason"]
    assert reason
    assert body.get("reason") == reason
    assert reason in body["message"]


def test_put_and_get_under_rolled_back_transaction_are_409_backed_out(api, queue):
    api.post(PUT, {"body": "m"}, format="json")
    txn = begin(api)["id"]
    api.post(txn_url(txn, "rollback"), {}, format="json")
    assert_error(api.post(PUT, {"body": "x", "transaction": txn}, format="json"), 409, "transaction_backed_out")
    assert_error(api.post(GET, {"transaction": txn}, format="json"), 409, "transaction_backed_out")
    detail = queue_detail(api)
    assert (detail["depth"], detail["uncommitted_puts"], detail["in_flight"]) == (1, 0, 0)


def test_put_under_committed_transaction_is_409_not_active(api, queue):
    txn = begin(api)["id"]
    api.post(txn_url(txn, "commit"), {}, format="json")
    body = assert_error(
        api.post(PUT, {"body": "late", "transaction": txn}, format="json"), 409, "transaction_not_active"
    )
    assert txn in body["message"]
    detail = queue_detail(api)
    assert (detail["depth"], detail["uncommitted_puts"]) == (0, 0)


def test_get_under_committed_transaction_is_409_not_active(api, queue):
    api.post(PUT, {"body": "m"}, format="json")
    txn = begin(api)["id"]
    api.post(txn_url(txn, "commit"), {}, format="json")
    assert_error(api.post(GET, {"transaction": txn}, format="json"), 409, "transaction_not_active")
    assert queue_detail(api)["depth"] == 1


def test_rollback_of_committed_transaction_is_409_not_active(api, queue):
    txn = begin(api)["id"]
    api.post(PUT, {"body": "kept", "transaction": txn}, format="json")
    api.post(txn_url(txn, "commit"), {}, format="json")
    assert_error(api.post(txn_url(txn, "rollback"), {}, format="json"), 409, "transaction_not_active")
    assert queue_detail(api)["depth"] == 1
    assert api.get(txn_url(txn)).json()["state"] == "committed"


def test_transaction_of_another_broker_is_refused(api, queue):
    api.post("/api/brokers/", {"name": "OTHER"}, format="json")
    other = api.post("/api/brokers/OTHER/transactions/", {}, format="json").json()["id"]
    response = api.post(PUT, {"body": "x", "transaction": other}, format="json")
    assert response.status_code in (400, 409), response.content
    assert response.json()["code"] and response.json()["message"]
    assert queue_detail(api)["uncommitted_puts"] == 0


@pytest.mark.parametrize("action", ["", "commit", "rollback", "check"])
def test_unknown_transaction_is_404(api, queue, action):
    response = api.get(txn_url(UNKNOWN)) if not action else api.post(txn_url(UNKNOWN, action), {}, format="json")
    assert_error(response, 404, "not_found")


def test_put_under_unknown_transaction_is_404_and_stores_nothing(api, queue):
    assert_error(api.post(PUT, {"body": "x", "transaction": UNKNOWN}, format="json"), 404, "not_found")
    assert_error(api.post(GET, {"transaction": UNKNOWN}, format="json"), 404, "not_found")
    detail = queue_detail(api)
    assert (detail["depth"], detail["uncommitted_puts"]) == (0, 0)


def test_begin_on_unknown_broker_is_404(api):
    assert_error(api.post("/api/brokers/NOPE/transactions/", {}, format="json"), 404, "not_found")


@pytest.mark.parametrize("timeout", [0, -5, "soon", 10**12])
def test_begin_with_bad_timeout_is_400(api, queue, timeout):
    body = assert_error(api.post(BEGIN, {"timeout_ms": timeout}, format="json"), 400, "invalid")
    assert "timeout_ms" in body["errors"]


@pytest.mark.parametrize("wait", [-1, "x", 10**6])
def test_commit_with_bad_wait_is_400_and_leaves_it_active(api, queue, wait):
    txn = begin(api)["id"]
    body = assert_error(api.post(txn_url(txn, "commit"), {"wait": wait}, format="json"), 400, "invalid")
    assert "wait" in body["errors"]
    assert api.get(txn_url(txn)).json()["state"] == "active"


def test_check_on_plain_transaction_is_ready(api, queue):
    txn = begin(api)["id"]
    response = api.post(txn_url(txn, "check"), {}, format="json")
    assert response.status_code == 200
    assert response.json()["result"] == "ready" and response.json()["waiting_on"] == []
    rolled = begin(api)["id"]
    api.post(txn_url(rolled, "rollback"), {}, format="json")
    assert api.post(txn_url(rolled, "check"), {}, format="json").json()["result"] == "backed_out"


def test_overdue_transaction_is_backed_out_for_timeout(api, queue):
    from transactions.models import Transaction

    txn = begin(api, timeout_ms=60_000)["id"]
    api.post(PUT, {"body": "x", "transaction": txn}, format="json")
    Transaction.objects.filter(pk=txn).update(deadline_at=timezone.now() - timedelta(seconds=1))
    body = assert_error(api.post(PUT, {"body": "y", "transaction": txn}, format="json"), 409, "transaction_backed_out")
    assert body["reason"] == "timeout"
    shown = api.get(txn_url(txn)).json()
    assert shown["state"] == "rolled_back" and shown["reason"] == "timeout"
    assert queue_detail(api)["uncommitted_puts"] == 0
    body = assert_error(api.post(txn_url(txn, "commit"), {}, format="json"), 409, "transaction_backed_out")
    assert body["reason"] == "timeout"


def test_begin_uses_broker_timeout_by_default(api, queue):
    txn = begin(api)
    shown = api.get(txn_url(txn["id"])).json()
    assert shown.get("deadline_at")
