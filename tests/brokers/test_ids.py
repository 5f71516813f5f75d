"""The id generator: message ids, correlation ids and connection ids are 24 bytes shown
as 48 hex characters, and never clash (across calls, threads and forked processes)."""

from __future__ import annotations

import json
import os
import re
import threading

import pytest

from brokers import ids
from brokers.ids import id_new, ids_new
from brokers.services.connections import connection_open
from brokers.services.messages import message_put
from tests.conftest import msgs

HEX48 = re.compile(r"^[0-9a-f]{48}$")


def test_ids_are_48_lowercase_hex_chars():
    for value in ids_new(200) + [id_new()]:
        assert HEX48.match(value), value
        assert len(bytes.fromhex(value)) == 24


def test_ids_are_unique_across_many_calls():
    values = ids_new(20_000) + [id_new() for _ in range(5_000)]
    assert len(set(values)) == len(values)


def test_ids_are_unique_even_when_the_clock_stands_still(monkeypatch):
    class FrozenTime:
        @staticmethod
        def time_ns() -> int:
            return 1_700_000_000_000_000_000

    monkeypatch.setattr(ids, "time", FrozenTime)
    values = ids_new(5_000)
    assert len(set(values)) == 5_000


def test_ids_are_unique_across_threads():
    results: list[list[str]] = [[] for _ in range(8)]
    barrier = threading.Barrier(8)

    def work(slot: int) -> None:
        barrier.wait()
        results[slot].extend(id_new() for _ in range(2_000))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    everything = [v for r in results for v in r]
    assert len(everything) == 16_000
    assert len(set(everything)) == 16_000


def _ids_in_forked_child(n: int) -> list[str]:
    """Fork; the child makes ``n`` ids and sends them back through a pipe."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: no pytest, no database; just ids, then leave at once
        try:
            os.close(read_fd)
            data = json.dumps(ids_new(n)).encode()
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(data)
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return json.loads(data)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_ids_are_unique_across_a_fork(monkeypatch):
    # Freeze the clock so that only the per-process part and the counter can tell ids
    # apart: a child that kept its parent's state would repeat the parent's ids.
    class FrozenTime:
        @staticmethod
        def time_ns() -> int:
            return 1_700_000_000_000_000_000

    monkeypatch.setattr(ids, "time", FrozenTime)
    before = ids_new(100)
    child_a = _ids_in_forked_child(1_000)
    child_b = _ids_in_forked_child(1_000)
    after = ids_new(1_000)
    for batch in (child_a, child_b):
        assert len(batch) == 1_000 and all(HEX48.match(v) for v in batch)
    everything = before + child_a + child_b + after
    assert len(set(everything)) == len(everything)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_ids_are_unique_across_a_fork_with_real_clock():
    parent_before = ids_new(500)
    child = _ids_in_forked_child(2_000)
    parent_after = ids_new(2_000)
    everything = parent_before + child + parent_after
    assert len(set(everything)) == len(everything)


def test_message_ids_are_from_the_generator(queue):
    put = message_put(broker="QM1", queue="Q1", messages=msgs(*[str(i) for i in range(50)]))
    values = [m.msg_id for m in put.messages]
    assert all(HEX48.match(v) for v in values)
    assert len(set(values)) == 50


def test_connection_ids_share_the_space_but_cannot_be_guessed(queue, monkeypatch):
    """With the clock frozen, ids of the generator differ only in their counter; a
    connection id has the same clock bytes, then 16 random bytes, the last 8 with the high
    bit set that no process's counter reaches: it never equals a message id, and tells
    nothing of the next one."""

    class FrozenTime:
        @staticmethod
        def time_ns() -> int:
            return 1_700_000_000_000_000_000

    monkeypatch.setattr(ids, "time", FrozenTime)
    before = id_new()
    conn_ids = [connection_open(broker="QM1", client_name="app").connection.conn_id for _ in range(20)]
    msg_id = message_put(broker="QM1", queue="Q1", messages=msgs("a")).messages[0].msg_id
    assert all(HEX48.match(c) for c in conn_ids)
    assert {c[:16] for c in conn_ids} == {before[:16]}  # the clock's 8 bytes
    assert all(int(c[32:], 16) >= 1 << 63 for c in conn_ids)  # beyond any counter
    assert len({c[16:32] for c in conn_ids} | {before[16:32]}) == 21  # nothing shared but the clock
    assert msg_id not in conn_ids
