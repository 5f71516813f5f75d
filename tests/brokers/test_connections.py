"""Connections: persistent sessions by client name, units of work per connection."""

from __future__ import annotations

import re

import pytest

from brokers.api.operations.connections import ConnectionOpen
from baton_client.errors import InvalidInput, OptionsConflict
from brokers.exceptions import ConnectionNotFound
from brokers.services.connections import connection_close, connection_open, connection_view
from brokers.services.messages import message_browse, message_get, message_put
from brokers.services.queues import queue_define
from brokers.models import Connection
from tests.conftest import bodies, msgs
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from transactions.models import Transaction, TransactionState

HEX48 = re.compile(r"^[0-9a-f]{48}$")


def browse_all(queue: str = "Q1") -> list[tuple[str, int]]:
    return [
        (bytes(m.body).decode(), m.backout_count)
        for m in message_browse(broker="QM1", queue=queue, limit=1000).messages
    ]


def session(client_name: str) -> tuple[str | None, str | None]:
    """What a client sees when it reconnects under this name."""
    view = connection_open(broker="QM1", client_name=client_name)
    return view.last_put_msg_id, view.last_got_msg_id


def test_open_gives_hex_id_and_empty_session(queue):
    view = connection_open(broker="QM1", client_name="app")
    assert HEX48.match(view.connection.conn_id)
    assert (view.last_put_msg_id, view.last_got_msg_id) == (None, None)


def test_each_open_gives_a_new_id(queue):
    ids = {connection_open(broker="QM1", client_name="app").connection.conn_id for _ in range(20)}
    assert len(ids) == 20


def test_client_name_is_required(queue):
    with pytest.raises(InvalidInput) as exc:  # validated where it enters
        ConnectionOpen.parse({"broker": "QM1", "client_name": ""})
    assert exc.value.code == "invalid"


def test_last_put_and_last_got_survive_reconnect(queue):
    conn = connection_open(broker="QM1", client_name="app").connection.conn_id
    put = message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"), connection_id=conn)
    got = message_get(broker="QM1", queue="Q1", connection_id=conn)
    assert bodies(got) == ["a"]
    connection_close(conn_id=conn)

    again = connection_open(broker="QM1", client_name="app")
    assert again.connection.conn_id != conn
    assert again.last_put_msg_id == put.messages[-1].msg_id
    assert again.last_got_msg_id == got.messages[0].msg_id


def test_session_is_per_client_name(queue):
    a = connection_open(broker="QM1", client_name="a").connection.conn_id
    put = message_put(broker="QM1", queue="Q1", messages=msgs("x"), connection_id=a)
    assert session("a") == (put.messages[0].msg_id, None)
    assert session("b") == (None, None)


def test_session_tracks_latest_put_and_get(queue):
    conn = connection_open(broker="QM1", client_name="app").connection.conn_id
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), connection_id=conn)
    second = message_put(broker="QM1", queue="Q1", messages=msgs("b"), connection_id=conn)
    message_get(broker="QM1", queue="Q1", connection_id=conn)
    last_got = message_get(broker="QM1", queue="Q1", connection_id=conn)
    assert session("app") == (second.messages[0].msg_id, last_got.messages[0].msg_id)


def test_session_is_shared_by_concurrent_connections_of_one_name(queue):
    c1 = connection_open(broker="QM1", client_name="app").connection.conn_id
    c2 = connection_open(broker="QM1", client_name="app").connection.conn_id
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), connection_id=c1)
    latest = message_put(broker="QM1", queue="Q1", messages=msgs("b"), connection_id=c2)
    view = connection_view(connection=Connection.objects.get(pk=c1))
    assert view.last_put_msg_id == latest.messages[0].msg_id


def test_transactional_put_updates_last_put_only_on_commit(queue):
    conn = connection_open(broker="QM1", client_name="app").connection.conn_id
    first = message_put(broker="QM1", queue="Q1", messages=msgs("immediate"), connection_id=conn)
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    pending = message_put(
        broker="QM1", queue="Q1", messages=msgs("t1", "t2"), connection_id=conn, transaction_id=txn.id
    )
    assert session("app")[0] == first.messages[0].msg_id
    transaction_commit(transaction_id=txn.id)
    assert session("app")[0] == pending.messages[-1].msg_id


def test_rolled_back_put_never_becomes_last_put(queue):
    conn = connection_open(broker="QM1", client_name="app").connection.conn_id
    first = message_put(broker="QM1", queue="Q1", messages=msgs("immediate"), connection_id=conn)
    result = message_put(broker="QM1", queue="Q1", messages=msgs("t"), connection_id=conn, syncpoint="yes")
    transaction_rollback(transaction_id=result.transaction_id)
    assert session("app")[0] == first.messages[0].msg_id


def test_transactional_get_updates_last_got_only_on_commit(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    conn = connection_open(broker="QM1", client_name="app").connection.conn_id
    first = message_get(broker="QM1", queue="Q1", connection_id=conn)
    got = message_get(broker="QM1", queue="Q1", connection_id=conn, syncpoint="yes")
    assert session("app")[1] == first.messages[0].msg_id
    transaction_commit(transaction_id=got.transaction_id)
    assert session("app")[1] == got.messages[0].msg_id


def test_rolled_back_get_never_becomes_last_got(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    conn = connection_open(broker="QM1", client_name="app").connection.conn_id
    got = message_get(broker="QM1", queue="Q1", connection_id=conn, syncpoint="yes")
    transaction_rollback(transaction_id=got.transaction_id)
    assert session("app") == (None, None)


def test_last_got_is_the_last_message_gotten_in_the_unit_of_work(broker):
    """Two gets under one unit of work on a priority queue: the high-priority message
    (put later) first, then the low one. After the commit, the last got message is the
    low one, as it would be for the same two gets without a unit of work."""
    queue_define(broker="QM1", name="PRIO", delivery_sequence="priority")
    message_put(broker="QM1", queue="PRIO", messages=msgs("low", priority=0))
    message_put(broker="QM1", queue="PRIO", messages=msgs("high", priority=9))
    conn = connection_open(broker="QM1", client_name="app").connection.conn_id
    first = message_get(broker="QM1", queue="PRIO", connection_id=conn, syncpoint="yes")
    second = message_get(broker="QM1", queue="PRIO", connection_id=conn, syncpoint="yes")
    assert bodies(first) == ["high"] and bodies(second) == ["low"]
    assert first.transaction_id == second.transaction_id
    transaction_commit(transaction_id=second.transaction_id)
    assert session("app")[1] == second.messages[0].msg_id


def test_last_got_of_a_batch_is_the_same_with_and_without_unit_of_work(broker):
    queue_define(broker="QM1", name="PRIO", delivery_sequence="priority")
    for name, syncpoint in (("immediate", "no"), ("transactional", "yes")):
        message_put(broker="QM1", queue="PRIO", messages=msgs("low", priority=0))
        message_put(broker="QM1", queue="PRIO", messages=msgs("high", priority=9))
        conn = connection_open(broker="QM1", client_name=name).connection.conn_id
        got = message_get(broker="QM1", queue="PRIO", connection_id=conn, syncpoint=syncpoint, batch=2)
        assert bodies(got) == ["high", "low"]
        if got.transaction_id:
            transaction_commit(transaction_id=got.transaction_id)
        assert session(name)[1] == got.messages[-1].msg_id, name


def test_syncpoint_operations_of_a_connection_share_its_unit_of_work(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("in"))
    conn = connection_open(broker="QM1", client_name="app").connection.conn_id
    got = message_get(broker="QM1", queue="Q1", connection_id=conn, syncpoint="yes")
    put = message_put(broker="QM1", queue="Q1", messages=msgs("out"), connection_id=conn, syncpoint="yes")
    assert got.transaction_id is not None and put.transaction_id == got.transaction_id
    assert Connection.objects.get(pk=conn).current_transaction_id == got.transaction_id
    transaction_commit(transaction_id=got.transaction_id)
    assert browse_all() == [("out", 0)]
    # the next syncpoint operation begins a new unit of work
    again = message_put(broker="QM1", queue="Q1", messages=msgs("next"), connection_id=conn, syncpoint="yes")
    assert again.transaction_id not in (None, got.transaction_id)


def test_close_rolls_back_the_open_unit_of_work(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("in"))
    conn = connection_open(broker="QM1", client_name="app").connection.conn_id
    got = message_get(broker="QM1", queue="Q1", connection_id=conn, syncpoint="yes")
    message_put(broker="QM1", queue="Q1", messages=msgs("out"), connection_id=conn, syncpoint="yes")
    connection_close(conn_id=conn)
    stored = Transaction.objects.get(pk=got.transaction_id)
    assert stored.state == TransactionState.ROLLED_BACK and stored.reason
    assert browse_all() == [("in", 1)]
    assert session("app") == (None, None)


def test_close_keeps_committed_work(queue):
    conn = connection_open(broker="QM1", client_name="app").connection.conn_id
    put = message_put(broker="QM1", queue="Q1", messages=msgs("out"), connection_id=conn, syncpoint="yes")
    transaction_commit(transaction_id=put.transaction_id)
    connection_close(conn_id=conn)
    assert browse_all() == [("out", 0)]
    assert Transaction.objects.get(pk=put.transaction_id).state == TransactionState.COMMITTED


def test_closed_connection_cannot_be_used(queue):
    conn = connection_open(broker="QM1", client_name="app").connection.conn_id
    connection_close(conn_id=conn)
    with pytest.raises(ConnectionNotFound) as exc:
        message_put(broker="QM1", queue="Q1", messages=msgs("a"), connection_id=conn)
    assert exc.value.code == "not_found"
    with pytest.raises(ConnectionNotFound):
        connection_close(conn_id=conn)
    assert browse_all() == []


def test_connection_of_another_broker_is_refused(queue):
    from brokers.services.brokers import broker_define

    broker_define(name="QM2")
    conn = connection_open(broker="QM2", client_name="app").connection.conn_id
    with pytest.raises(InvalidInput):
        message_put(broker="QM1", queue="Q1", messages=msgs("a"), connection_id=conn)
    assert browse_all() == []


def test_commit_first_commits_then_gets(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("req"))
    conn = connection_open(broker="QM1", client_name="app").connection.conn_id
    put = message_put(broker="QM1", queue="Q1", messages=msgs("reply"), connection_id=conn, syncpoint="yes")
    got = message_get(broker="QM1", queue="Q1", connection_id=conn, commit_first=True, batch=5)
    assert Transaction.objects.get(pk=put.transaction_id).state == TransactionState.COMMITTED
    assert bodies(got) == ["req", "reply"]


def test_commit_first_with_a_transaction_commits_it_then_gets_outside_it(queue):
    """docs/design.md §4's "commit first" without a connection: the named unit of work commits, and
    the get is final (outside any unit of work)."""
    txn = transaction_begin(broker="QM1", timeout_ms=60_000).id
    message_put(broker="QM1", queue="Q1", messages=msgs("mine"), transaction_id=txn)
    got = message_get(broker="QM1", queue="Q1", transaction_id=txn, commit_first=True, batch=5)
    assert Transaction.objects.get(pk=txn).state == TransactionState.COMMITTED
    assert bodies(got) == ["mine"] and got.transaction_id is None
    assert browse_all() == []


def test_commit_first_needs_a_connection(queue):
    with pytest.raises(OptionsConflict) as exc:
        message_get(broker="QM1", queue="Q1", commit_first=True)
    assert exc.value.code == "options_conflict"
