"""Brokers and queues: definitions, aliases, remote queues, deletion, error codes."""

from __future__ import annotations

import pytest

from brokers.api.operations.definitions import BrokerDefine, QueueDefine
from brokers.api.operations.messages import MessageGet, MessagePut
from baton_client.errors import (
    AlreadyExists,
    GetInhibited,
    InvalidInput,
    MessageTooLarge,
    NotEmpty,
    OptionsConflict,
    PutInhibited,
    QueueFull,
)
from brokers.exceptions import BrokerNotFound, QueueNotFound
from brokers.models import DEFAULT_DEAD_LETTER_QUEUE, Message, Queue
from brokers.services.brokers import broker_alter, broker_define, broker_delete
from brokers.services.messages import message_browse, message_get, message_put
from brokers.services.queues import queue_alter, queue_define, queue_delete
from brokers.selectors import queue_get
from tests.conftest import bodies, msgs
from baton_client.errors import TransactionBackedOut, TransactionNotActive
from transactions.exceptions import TransactionNotFound
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback


def browse_all(queue: str, broker: str = "QM1") -> list[str]:
    return [bytes(m.body).decode() for m in message_browse(broker=broker, queue=queue, limit=1000).messages]


# --- brokers ---------------------------------------------------------------------------


def test_broker_define_creates_its_dead_letter_queue(db):
    broker = broker_define(name="QM9")
    assert broker.dead_letter_queue == DEFAULT_DEAD_LETTER_QUEUE
    dlq = queue_get(broker="QM9", name=DEFAULT_DEAD_LETTER_QUEUE)
    assert dlq.kind == "local"
    message_put(broker="QM9", queue=DEFAULT_DEAD_LETTER_QUEUE, messages=msgs("x"))
    assert browse_all(DEFAULT_DEAD_LETTER_QUEUE, broker="QM9") == ["x"]


def test_broker_define_with_named_dead_letter_queue(db):
    broker_define(name="QM9", dead_letter_queue="MY.DLQ")
    assert queue_get(broker="QM9", name="MY.DLQ").kind == "local"
    assert not Queue.objects.filter(broker__name="QM9", name=DEFAULT_DEAD_LETTER_QUEUE).exists()


def test_broker_alter_to_new_dead_letter_queue_defines_it(broker):
    broker_alter(name="QM1", dead_letter_queue="NEW.DLQ")
    assert queue_get(broker="QM1", name="NEW.DLQ").kind == "local"


def test_two_brokers_each_have_their_own_queues(db):
    broker_define(name="QMA")
    broker_define(name="QMB")
    queue_define(broker="QMA", name="Q")
    queue_define(broker="QMB", name="Q")
    message_put(broker="QMA", queue="Q", messages=msgs("a"))
    assert browse_all("Q", broker="QMB") == []
    assert browse_all("Q", broker="QMA") == ["a"]


def test_duplicate_broker_is_refused(broker):
    with pytest.raises(AlreadyExists) as exc:
        broker_define(name="QM1")
    assert exc.value.code == "already_exists" and exc.value.status == 409


@pytest.mark.parametrize("name", ["", "x" * 49, "bad name", "bad:name", "bad!"])
def test_bad_broker_names_are_refused(db, name):
    with pytest.raises(InvalidInput) as exc:  # validated where it enters, through the one definition
        BrokerDefine.parse({"name": name})
    assert exc.value.code == "invalid" and "name" in exc.value.details["errors"]


@pytest.mark.parametrize("name", ["x" * 49, "bad name", "bad:name"])
def test_bad_queue_names_are_refused(broker, name):
    with pytest.raises(InvalidInput) as exc:
        QueueDefine.parse({"broker": "QM1", "name": name})
    assert exc.value.code == "invalid" and "name" in exc.value.details["errors"]
    assert not Queue.objects.filter(name=name).exists()


@pytest.mark.parametrize("name", ["Q.1", "a/b", "x%y", "under_score", "Z" * 48])
def test_good_queue_names_are_accepted(broker, name):
    assert queue_define(broker="QM1", name=name).name == name


def test_broker_delete_refused_with_messages_unless_purge(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    with pytest.raises(NotEmpty) as exc:
        broker_delete(name="QM1")
    assert exc.value.code == "not_empty"
    assert browse_all("Q1") == ["a"]
    broker_delete(name="QM1", purge=True)
    with pytest.raises(BrokerNotFound):
        queue_get(broker="QM1", name="Q1")
    assert Message.objects.count() == 0


def test_broker_delete_refused_with_open_unit_of_work(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    with pytest.raises(NotEmpty):
        broker_delete(name="QM1", purge=True)
    transaction_rollback(transaction_id=txn.id)
    broker_delete(name="QM1")


# --- queues ----------------------------------------------------------------------------


def test_queue_define_defaults(broker):
    q = queue_define(broker="QM1", name="Q")
    assert (q.kind, q.delivery_sequence, q.put_enabled, q.get_enabled, q.backout_threshold) == (
        "local",
        "priority",
        True,
        True,
        0,
    )


def test_duplicate_queue_is_refused(queue):
    with pytest.raises(AlreadyExists) as exc:
        queue_define(broker="QM1", name="Q1")
    assert exc.value.code == "already_exists"


def test_queue_on_unknown_broker(db):
    with pytest.raises(BrokerNotFound) as exc:
        queue_define(broker="NOPE", name="Q")
    assert exc.value.code == "not_found"


def test_unknown_queue_attribute_is_refused(broker):
    with pytest.raises(InvalidInput) as exc:
        QueueDefine.parse({"broker": "QM1", "name": "Q", "colour": "blue"})
    assert "colour" in exc.value.details["errors"]


def test_put_and_get_on_unknown_queue(broker):
    with pytest.raises(QueueNotFound) as exc:
        message_put(broker="QM1", queue="NOPE", messages=msgs("a"))
    assert exc.value.code == "not_found" and exc.value.status == 404
    with pytest.raises(QueueNotFound):
        message_get(broker="QM1", queue="NOPE")
    with pytest.raises(BrokerNotFound):
        message_put(broker="NOPE", queue="Q1", messages=msgs("a"))


def test_queue_delete_refused_with_messages_unless_purge(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    with pytest.raises(NotEmpty) as exc:
        queue_delete(broker="QM1", name="Q1")
    assert exc.value.code == "not_empty" and exc.value.status == 409
    assert browse_all("Q1") == ["a", "b"]
    queue_delete(broker="QM1", name="Q1", purge=True)
    with pytest.raises(QueueNotFound):
        queue_get(broker="QM1", name="Q1")
    assert Message.objects.count() == 0


def test_empty_queue_is_deleted(queue):
    queue_delete(broker="QM1", name="Q1")
    assert not Queue.objects.filter(name="Q1").exists()


def test_queue_delete_refused_while_a_unit_of_work_holds_messages(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id)
    with pytest.raises(NotEmpty):
        queue_delete(broker="QM1", name="Q1", purge=True)
    transaction_commit(transaction_id=txn.id)
    getter = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_get(broker="QM1", queue="Q1", transaction_id=getter.id)
    with pytest.raises(NotEmpty):
        queue_delete(broker="QM1", name="Q1", purge=True)
    transaction_rollback(transaction_id=getter.id)
    queue_delete(broker="QM1", name="Q1", purge=True)
    assert Message.objects.count() == 0


def test_dead_letter_queue_cannot_be_deleted(broker):
    with pytest.raises(NotEmpty):
        queue_delete(broker="QM1", name=DEFAULT_DEAD_LETTER_QUEUE, purge=True)
    assert Queue.objects.filter(broker__name="QM1", name=DEFAULT_DEAD_LETTER_QUEUE).exists()


def test_queue_kind_cannot_change_while_it_holds_messages(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    with pytest.raises(NotEmpty):
        queue_alter(broker="QM1", name="Q1", kind="alias", target_queue=DEFAULT_DEAD_LETTER_QUEUE)
    assert queue_get(broker="QM1", name="Q1").kind == "local"


# --- alias queues ----------------------------------------------------------------------


def test_alias_put_lands_on_target(queue):
    queue_define(broker="QM1", name="ALIAS", kind="alias", target_queue="Q1")
    result = message_put(broker="QM1", queue="ALIAS", messages=msgs("a"))
    assert result.queue.name == "Q1"
    assert browse_all("Q1") == ["a"]
    assert Message.objects.get().queue.name == "Q1"


def test_alias_get_and_browse_read_target(queue):
    queue_define(broker="QM1", name="ALIAS", kind="alias", target_queue="Q1")
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    assert browse_all("ALIAS") == ["a", "b"]
    got = message_get(broker="QM1", queue="ALIAS")
    assert bodies(got) == ["a"] and got.queue.name == "Q1"
    assert browse_all("Q1") == ["b"]


def test_alias_under_transaction(queue):
    queue_define(broker="QM1", name="ALIAS", kind="alias", target_queue="Q1")
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="ALIAS", messages=msgs("a"), transaction_id=txn.id)
    assert browse_all("Q1") == []
    transaction_commit(transaction_id=txn.id)
    assert browse_all("Q1") == ["a"]


def test_alias_put_disabled_on_alias_or_target(queue):
    queue_define(broker="QM1", name="ALIAS", kind="alias", target_queue="Q1", put_enabled=False)
    with pytest.raises(PutInhibited):
        message_put(broker="QM1", queue="ALIAS", messages=msgs("a"))
    queue_alter(broker="QM1", name="ALIAS", put_enabled=True)
    queue_alter(broker="QM1", name="Q1", put_enabled=False)
    with pytest.raises(PutInhibited):
        message_put(broker="QM1", queue="ALIAS", messages=msgs("a"))
    assert Message.objects.count() == 0


def test_alias_get_disabled_on_alias_or_target(queue):
    queue_define(broker="QM1", name="ALIAS", kind="alias", target_queue="Q1", get_enabled=False)
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    with pytest.raises(GetInhibited):
        message_get(broker="QM1", queue="ALIAS")
    queue_alter(broker="QM1", name="ALIAS", get_enabled=True)
    queue_alter(broker="QM1", name="Q1", get_enabled=False)
    with pytest.raises(GetInhibited):
        message_get(broker="QM1", queue="ALIAS")
    assert browse_all("Q1") == ["a"]


def test_alias_target_limits_apply(broker):
    queue_define(broker="QM1", name="T", max_depth=1, max_message_length=3)
    queue_define(broker="QM1", name="ALIAS", kind="alias", target_queue="T")
    with pytest.raises(MessageTooLarge):
        message_put(broker="QM1", queue="ALIAS", messages=msgs("abcd"))
    message_put(broker="QM1", queue="ALIAS", messages=msgs("abc"))
    with pytest.raises(QueueFull):
        message_put(broker="QM1", queue="ALIAS", messages=msgs("x"))
    assert browse_all("T") == ["abc"]


def test_alias_must_name_a_target_other_than_itself(broker):
    with pytest.raises(InvalidInput):
        queue_define(broker="QM1", name="A", kind="alias")
    with pytest.raises(InvalidInput):
        queue_define(broker="QM1", name="A", kind="alias", target_queue="A")
    assert not Queue.objects.filter(name="A").exists()


# --- remote queues ---------------------------------------------------------------------


def test_remote_put_lands_on_transmission_queue_with_header(broker):
    queue_define(broker="QM1", name="TO.QM2", usage="transmission")
    queue_define(
        broker="QM1",
        name="REMOTE",
        kind="remote",
        remote_broker="QM2",
        remote_queue="TARGET",
        transmission_queue="TO.QM2",
    )
    result = message_put(broker="QM1", queue="REMOTE", messages=msgs("a", "b"))
    assert result.queue.name == "TO.QM2"
    got = message_get(broker="QM1", queue="TO.QM2", batch=5)
    assert bodies(got) == ["a", "b"]
    assert [m.transmission_header for m in got.messages] == [{"broker": "QM2", "queue": "TARGET"}] * 2


def test_remote_queue_defaults_transmission_queue_and_remote_name(broker):
    queue_define(broker="QM1", name="QM2", usage="transmission")
    q = queue_define(broker="QM1", name="ORDERS", kind="remote", remote_broker="QM2")
    assert (q.transmission_queue, q.remote_queue) == ("QM2", "ORDERS")
    message_put(broker="QM1", queue="ORDERS", messages=msgs("a"))
    [m] = message_browse(broker="QM1", queue="QM2").messages
    assert m.transmission_header == {"broker": "QM2", "queue": "ORDERS"}


def test_remote_put_under_transaction(broker):
    queue_define(broker="QM1", name="XMIT", usage="transmission")
    queue_define(broker="QM1", name="REMOTE", kind="remote", remote_broker="QM2", transmission_queue="XMIT")
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="REMOTE", messages=msgs("a"), transaction_id=txn.id)
    assert browse_all("XMIT") == []
    transaction_commit(transaction_id=txn.id)
    assert browse_all("XMIT") == ["a"]


def test_remote_queue_needs_remote_broker(broker):
    with pytest.raises(InvalidInput) as exc:
        queue_define(broker="QM1", name="REMOTE", kind="remote")
    assert "remote_broker" in exc.value.details["errors"]


def test_get_from_remote_queue_is_refused(broker):
    queue_define(broker="QM1", name="XMIT", usage="transmission")
    queue_define(broker="QM1", name="REMOTE", kind="remote", remote_broker="QM2", transmission_queue="XMIT")
    message_put(broker="QM1", queue="REMOTE", messages=msgs("a"))
    with pytest.raises(InvalidInput):
        message_get(broker="QM1", queue="REMOTE")
    assert browse_all("XMIT") == ["a"]


def test_remote_put_to_missing_transmission_queue(broker):
    queue_define(broker="QM1", name="REMOTE", kind="remote", remote_broker="QM2", transmission_queue="NOPE")
    with pytest.raises(QueueNotFound):
        message_put(broker="QM1", queue="REMOTE", messages=msgs("a"))
    assert Message.objects.count() == 0


# --- error codes -----------------------------------------------------------------------


def test_error_codes_are_stable():
    expected = {
        InvalidInput: ("invalid", 400),
        QueueNotFound: ("not_found", 404),
        BrokerNotFound: ("not_found", 404),
        TransactionNotFound: ("not_found", 404),
        AlreadyExists: ("already_exists", 409),
        PutInhibited: ("put_inhibited", 409),
        GetInhibited: ("get_inhibited", 409),
        QueueFull: ("queue_full", 409),
        OptionsConflict: ("options_conflict", 409),
        TransactionBackedOut: ("transaction_backed_out", 409),
        TransactionNotActive: ("transaction_not_active", 409),
        MessageTooLarge: ("message_too_large", 413),
        NotEmpty: ("not_empty", 409),
    }
    for cls, (code, status) in expected.items():
        err = cls("text", detail=1)
        assert (err.code, err.status) == (code, status), cls
        assert err.as_dict() == {"code": code, "message": "text", "detail": 1}


def test_options_conflict_on_transaction_with_no_syncpoint(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    with pytest.raises(OptionsConflict) as exc:
        message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id, syncpoint="no")
    assert exc.value.code == "options_conflict"
    with pytest.raises(OptionsConflict):
        message_get(broker="QM1", queue="Q1", transaction_id=txn.id, syncpoint="no")
    assert Message.objects.count() == 0


@pytest.mark.parametrize(
    "fields",
    [
        {"batch": 0},
        {"batch": 100_000},
        {"wait": -1},
        {"wait": 10_000},
        {"mode": "sideways"},
        {"syncpoint": "maybe"},
        {"syncpoint": "if_persistent"},
        {"access": "sometimes"},
        {"msg_id": "not hex"},
        {"correl_id": "0" * 47},
    ],
)
def test_bad_get_options_are_invalid(queue, fields):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    with pytest.raises(InvalidInput) as exc:  # refused where it enters, through the one definition
        MessageGet.parse({"broker": "QM1", "queue": "Q1", **fields})
    assert exc.value.code == "invalid" and list(exc.value.details["errors"]) == list(fields)
    assert browse_all("Q1") == ["a"]


@pytest.mark.parametrize("fields", [{"messages": []}, {"messages": [{"body": "a"}] * 3}, {"syncpoint": "maybe"}])
def test_bad_put_options_are_invalid(queue, settings, fields):
    settings.BATON_MAX_BATCH = 2
    with pytest.raises(InvalidInput) as exc:  # refused where it enters, through the one definition
        MessagePut.parse({"broker": "QM1", "queue": "Q1", "messages": [{"body": "a"}], **fields})
    assert exc.value.code == "invalid" and list(exc.value.details["errors"]) == list(fields)
    assert Message.objects.count() == 0
