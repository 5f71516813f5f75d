"""Units of work through the client: the context manager, rollback on an exception, held
commits released by the producer's commit, cascades, the ready-check and the graph."""

from __future__ import annotations

import threading

import pytest

from baton_client import CommitResult, CommitTimeout, TransactionBackedOut, TransactionNotActive
from tests.integration.servers import poll_until

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass


def _in_thread(target):
    """Run ``target`` in a thread; returns (thread, box) where box gets "result" or "error"."""
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = target()
        except BaseException as exc:  # reported by the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def _server_state(client, transaction_id: str) -> str:
    return client.display_transaction(transaction_id).state


def test_context_manager_commits_on_exit(client, broker):
    with client.transaction(broker) as tx:
        put = tx.put("Q1", "under a unit of work")
        assert put.transaction == tx.id and tx.state == "active"
        shown = client.display_queue(broker, "Q1")
        assert shown["uncommitted_puts"] == 1 and client.get(broker, "Q1") is None
    assert tx.state == "committed"
    assert _server_state(client, tx.id) == "committed"
    assert client.get(broker, "Q1").msg_id == put.msg_id


def test_context_manager_rolls_back_on_exception(client, broker):
    client.put(broker, "Q1", "kept")
    with pytest.raises(RuntimeError, match="boom"):
        with client.transaction(broker) as tx:
            tx.put("Q1", "vanishes")
            got = tx.get("Q1")
            assert got.text == "kept"
            raise RuntimeError("boom")
    assert tx.state == "rolled_back" and tx.refresh().reason == "client"
    batch = client.get(broker, "Q1", batch=10)
    assert [m.text for m in batch] == ["kept"] and batch[0].backout_count == 1
    with pytest.raises(TransactionNotActive):
        committed = client.transaction(broker)
        committed.commit()
        committed.rollback()


def test_held_commit_is_released_by_the_producers_commit(client, other_client, broker):
    producer = client.transaction(broker)
    message = producer.put("Q1", "pre-empted").result()  # pipelined: applied before the other client's get
    with other_client.transaction(broker) as consumer:
        got = consumer.get("Q1", preemptive=True)
        assert got.msg_id == message.msg_id
    # the block ended normally with the commit still held
    assert consumer.state == "commit_held" and consumer.waiting_on == [producer.id]
    assert consumer.refresh().upstream == [producer.id] and producer.refresh().downstream == [consumer.id]
    check = consumer.check()
    assert (check.result, check.waiting_on) == ("pending", [producer.id])

    graph = client.transaction_graph(broker)
    assert {producer.id, consumer.id} <= {n["id"] for n in graph["nodes"]}
    assert {(e["upstream"], e["downstream"]) for e in graph["edges"]} >= {(producer.id, consumer.id)}

    # a second wait, long-polled by wait_committed, ends when the producer commits
    thread, box = _in_thread(lambda: consumer.wait_committed(timeout=30))
    assert producer.commit() == CommitResult("committed", [], producer.id)
    thread.join(35)
    assert "error" not in box, repr(box.get("error"))
    assert box["result"].state == "committed" and consumer.state == "committed"
    assert _server_state(client, consumer.id) == "committed"
    assert client.display_queue(broker, "Q1")["depth"] == 0
    assert consumer.check().result == "ready"


def test_commit_wait_in_the_context_manager_is_released_by_the_producer(client, other_client, broker):
    producer = client.transaction(broker)
    producer.put("Q1", "pre-empted").result()
    consumer = other_client.transaction(broker, commit_wait=30)

    def consume():
        with consumer:
            consumer.get("Q1", preemptive=True)
        return consumer.state

    thread, box = _in_thread(consume)
    # the consumer's commit request is inside the server once it shows commit_held
    poll_until(
        lambda: "error" in box or _server_state(client, consumer.id) == "commit_held",
        timeout=20,
        what="the consumer's commit to be held",
    )
    assert "error" not in box, repr(box.get("error"))
    assert thread.is_alive(), "the context manager should still be waiting for the held commit"
    producer.commit()
    thread.join(35)
    assert box.get("result") == "committed", box


def test_wait_committed_times_out_while_held(client, other_client, broker):
    producer = client.transaction(broker)
    producer.put("Q1", "x").result()
    consumer = other_client.transaction(broker)
    consumer.get("Q1", preemptive=True)
    result = consumer.commit()
    assert result.held and result.waiting_on == [producer.id]
    with pytest.raises(CommitTimeout) as info:
        consumer.wait_committed(timeout=0)
    assert info.value.details["waiting_on"] == [producer.id]
    producer.commit()
    assert consumer.wait_committed(timeout=10).committed


def test_producer_rollback_cascades_to_the_consumer(client, other_client, broker):
    producer = client.transaction(broker)
    producer.put("Q1", "doomed").result()
    consumer = other_client.transaction(broker)
    consumer.get("Q1", preemptive=True)
    assert consumer.commit().state == "commit_held"

    thread, box = _in_thread(lambda: consumer.wait_committed(timeout=30))
    assert producer.rollback() == [consumer.id]
    thread.join(35)
    error = box.get("error")
    assert isinstance(error, TransactionBackedOut), box
    assert error.status == 409 and error.code == "transaction_backed_out"
    assert error.reason == f"cascade from {producer.id}" and error.transaction == consumer.id
    assert consumer.state == "rolled_back"

    with pytest.raises(TransactionBackedOut) as info:
        consumer.put("Q1", "too late").result()  # a pipelined put raises when read
    assert info.value.reason == f"cascade from {producer.id}"
    shown = consumer.refresh()
    assert (shown.state, shown.reason, shown.cause) == ("rolled_back", f"cascade from {producer.id}", producer.id)
    assert client.display_queue(broker, "Q1")["depth"] == 0


def test_context_manager_exit_raises_when_backed_out_by_a_cascade(client, other_client, broker):
    producer = client.transaction(broker)
    producer.put("Q1", "doomed").result()
    with pytest.raises(TransactionBackedOut) as info:
        with other_client.transaction(broker) as consumer:
            consumer.get("Q1", preemptive=True)
            assert producer.rollback() == [consumer.id]
    assert info.value.reason == f"cascade from {producer.id}"
    assert consumer.state == "rolled_back"


def test_consumer_rollback_leaves_the_producer_alone(client, other_client, broker):
    producer = client.transaction(broker)
    put = producer.put("Q1", "stays with the producer").result()
    consumer = other_client.transaction(broker)
    consumer.get("Q1", preemptive=True)
    assert consumer.rollback() == []
    assert producer.refresh().state == "active" and producer.downstream == []
    producer.commit()
    again = client.get(broker, "Q1")
    assert again.msg_id == put.msg_id and again.backout_count == 1


def test_resolved_transactions_answer_their_state_again(client, broker):
    rolled_back = client.transaction(broker)
    rolled_back.put("Q1", "gone")
    assert rolled_back.rollback() == [] and rolled_back.state == "rolled_back"
    assert rolled_back.rollback() == [] and rolled_back.state == "rolled_back"
    check = rolled_back.check()
    assert (check.result, check.reason) == ("backed_out", "client")
    with pytest.raises(TransactionBackedOut) as info:
        rolled_back.commit()
    assert info.value.reason == "client"

    committed = client.transaction(broker)
    assert committed.commit().committed and committed.commit().committed
    with pytest.raises(TransactionNotActive) as info:
        committed.rollback()
    assert info.value.status == 409


def test_a_unit_of_work_past_its_timeout_is_backed_out(client, broker):
    tx = client.transaction(broker, timeout_ms=200)
    tx.put("Q1", "too slow")
    # housekeeping (or the next operation) rolls it back once its deadline has passed
    poll_until(
        lambda: tx.check().result == "backed_out" or tx.refresh().state == "rolled_back",
        timeout=20,
        what="the overdue unit of work to be rolled back",
    )
    with pytest.raises(TransactionBackedOut) as info:
        tx.put("Q1", "later").result()
    assert info.value.reason == "timeout"
    assert client.display_queue(broker, "Q1")["depth"] == 0
