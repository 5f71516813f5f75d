"""A get's work does not grow with what waits behind the message it takes.

Counted in SQLite's virtual-machine steps (a progress handler), not in time: the same
statements on the same rows always take the same steps, so the test cannot be fooled by a
busy machine. A get first looks for peek-locks that ran out on its queue (to release them
before it chooses): that look must read only locks already run out, through the lock-expiry
index, not every message of the queue (it once did: a get at a depth of 4,500 cost 6 ms of
CPU instead of 1.3 ms).
"""

from __future__ import annotations

import pytest
from django.db import connection

from brokers.services.messages import message_get, message_put
from tests.conftest import msgs

TICK = 100  # VM steps per progress-handler call


def _steps_of_peek_lock_get() -> int:
    calls = [0]

    def counted() -> int:
        calls[0] += 1
        return 0  # go on

    connection.ensure_connection()
    connection.connection.set_progress_handler(counted, TICK)
    try:
        got = message_get(broker="QM1", queue="Q1", mode="peek_lock")
    finally:
        connection.connection.set_progress_handler(None, TICK)
    assert len(got.messages) == 1
    return calls[0]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="counts SQLite's VM steps")
def test_a_peek_lock_get_reads_no_more_of_a_deep_queue_than_of_a_shallow_one(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b", "c"))
    message_get(broker="QM1", queue="Q1", mode="peek_lock")  # a lock held: the look finds it unexpired
    shallow = _steps_of_peek_lock_get()

    for start in range(0, 3000, 500):
        message_put(broker="QM1", queue="Q1", messages=msgs(*(f"m{n}" for n in range(start, start + 500))))
    deep = _steps_of_peek_lock_get()

    # reading each of 3,000 message rows would take tens of thousands of steps more
    assert deep <= shallow * 1.5 + 20, (shallow, deep)
