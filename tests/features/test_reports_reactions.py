"""Reports (coa, cod, expiry, exception) and reactive messages (docs/design.md §7)."""

from __future__ import annotations

import pytest

from django.utils import timezone

from brokers.models import Message
from brokers.services.housekeeping import messages_expire
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import bodies, msgs
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback

pytestmark = pytest.mark.postgres  # also run on PostgreSQL


def reports_on(queue: str = "REPLY") -> list[tuple[str, str]]:
    got = message_get(broker="QM1", queue=queue, batch=50)
    return [(m.feedback, m.correl_id) for m in got.messages]


def asked(*options: str, **fields) -> list[MessageInput]:
    return msgs("m", report=list(options), reply_to_queue="REPLY", **fields)


def setup_reply(broker) -> None:
    queue_define(broker="QM1", name="REPLY")


def test_coa_on_immediate_put_and_cod_on_final_get(queue):
    setup_reply(queue.broker)
    put = message_put(broker="QM1", queue="Q1", messages=asked("coa", "cod")).messages[0]
    assert reports_on() == [("coa", put.msg_id)]
    message_get(broker="QM1", queue="Q1")
    report = message_get(broker="QM1", queue="REPLY").messages[0]
    assert (report.feedback, report.correl_id, report.msg_type) == ("cod", put.msg_id, "report")
    assert report.properties == {"original_broker": "QM1", "original_queue": "Q1"}


def test_coa_waits_for_the_put_to_commit_and_never_comes_after_rollback(queue):
    setup_reply(queue.broker)
    t1 = transaction_begin(broker="QM1", timeout_ms=60_000).id
    put = message_put(broker="QM1", queue="Q1", messages=asked("coa"), transaction_id=t1).messages[0]
    assert reports_on() == []
    transaction_commit(transaction_id=t1)
    assert reports_on() == [("coa", put.msg_id)]
    t2 = transaction_begin(broker="QM1", timeout_ms=60_000).id
    message_put(broker="QM1", queue="Q1", messages=asked("coa"), transaction_id=t2)
    transaction_rollback(transaction_id=t2)
    assert reports_on() == []


def test_cod_when_the_get_commits_not_when_it_rolls_back(queue):
    setup_reply(queue.broker)
    put = message_put(broker="QM1", queue="Q1", messages=asked("cod")).messages[0]
    t1 = transaction_begin(broker="QM1", timeout_ms=60_000).id
    message_get(broker="QM1", queue="Q1", transaction_id=t1)
    transaction_rollback(transaction_id=t1)
    assert reports_on() == []
    t2 = transaction_begin(broker="QM1", timeout_ms=60_000).id
    message_get(broker="QM1", queue="Q1", transaction_id=t2)
    transaction_commit(transaction_id=t2)
    assert reports_on() == [("cod", put.msg_id)]


def test_expiry_report_when_the_sweeper_removes_it(queue):
    setup_reply(queue.broker)
    put = message_put(broker="QM1", queue="Q1", messages=asked("expiry", expiry_ms=60_000)).messages[0]
    Message.objects.filter(msg_id=put.msg_id).update(expires_at=timezone.now())  # a put answers without row ids
    assert messages_expire() == 1
    assert reports_on() == [("expiry", put.msg_id)]


def test_exception_report_when_dead_lettered_by_backout(broker):
    setup_reply(broker)
    queue_define(broker="QM1", name="Q1", backout_threshold=1)
    put = message_put(broker="QM1", queue="Q1", messages=asked("exception")).messages[0]
    txn = transaction_begin(broker="QM1", timeout_ms=60_000).id
    message_get(broker="QM1", queue="Q1", transaction_id=txn)
    transaction_rollback(transaction_id=txn)
    report = message_get(broker="QM1", queue="REPLY").messages[0]
    assert (report.feedback, report.correl_id) == ("exception", put.msg_id)
    assert "backout count 1" in report.properties["reason"]


def refers(msg_id: str, action: str, **fields) -> list[MessageInput]:
    return [MessageInput(body=fields.pop("body", b""), refers_to={"msg_id": msg_id, "action": action}, **fields)]


def test_reactive_cancel_replace_reprioritise(queue):
    a, b, c = message_put(broker="QM1", queue="Q1", messages=msgs("a", "b", "c")).messages
    message_put(broker="QM1", queue="Q1", messages=refers(a.msg_id, "cancel"))
    message_put(broker="QM1", queue="Q1", messages=refers(b.msg_id, "replace", body=b"B!"))
    message_put(broker="QM1", queue="Q1", messages=refers(c.msg_id, "reprioritise", priority=9))
    assert bodies(message_get(broker="QM1", queue="Q1", batch=10)) == ["c", "B!"]


def test_reactive_under_unit_of_work_applies_at_commit_only(queue):
    a = message_put(broker="QM1", queue="Q1", messages=msgs("a")).messages[0]
    t1 = transaction_begin(broker="QM1", timeout_ms=60_000).id
    message_put(broker="QM1", queue="Q1", messages=refers(a.msg_id, "cancel"), transaction_id=t1)
    assert Message.objects.filter(msg_id=a.msg_id).exists()
    transaction_rollback(transaction_id=t1)
    assert Message.objects.filter(msg_id=a.msg_id).exists()
    t2 = transaction_begin(broker="QM1", timeout_ms=60_000).id
    message_put(broker="QM1", queue="Q1", messages=refers(a.msg_id, "cancel"), transaction_id=t2)
    transaction_commit(transaction_id=t2)
    assert message_get(broker="QM1", queue="Q1").messages == []


def test_reactive_on_a_message_no_longer_queued_sends_exception_report(queue):
    setup_reply(queue.broker)
    a = message_put(broker="QM1", queue="Q1", messages=msgs("a")).messages[0]
    txn = transaction_begin(broker="QM1", timeout_ms=60_000).id
    message_get(broker="QM1", queue="Q1", transaction_id=txn)  # in flight: not queued
    reactive = message_put(
        broker="QM1", queue="Q1", messages=refers(a.msg_id, "cancel", report=["exception"], reply_to_queue="REPLY")
    ).messages[0]
    report = message_get(broker="QM1", queue="REPLY").messages[0]
    assert (report.feedback, report.correl_id) == ("exception", reactive.msg_id)
    transaction_rollback(transaction_id=txn)
    assert bodies(message_get(broker="QM1", queue="Q1")) == ["a"]
