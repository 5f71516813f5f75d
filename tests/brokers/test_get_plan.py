"""PostgreSQL: a get's statement, planned while its queue was empty, still reads a deep queue
through the index it was written for.

The hot path's statements are prepared once per connection with a generic plan
(transactions/prepared.py), made at their first run from the statistics of that moment,
inside an engine step, which plans without sequential or bitmap scans
(transactions/durability.py, ``PLANNED_FOR_INDEXES``). A
plan made on an empty table once chose to read every free message of the queue (a bitmap
scan, then a sort) and to join the chosen ids against every free message of every queue:
a get of 100 from a queue 10,000 deep read 30,000 buffers (200 ms), so a backlog drained in
time that grew with its square. Counted in the buffers the statement reads (``EXPLAIN
(ANALYZE, BUFFERS)`` of the prepared statement, in a database transaction rolled back), not
in time.
"""

from __future__ import annotations

import json

import pytest
from django.db import connection, transaction
from django.utils import timezone

from brokers.models import Queue
from brokers.dialects.postgresql import get_call, take_sql as _take_sql
from brokers.queries import _get_start_sql
from brokers.services.messages import message_put
from tests.conftest import msgs
from transactions.durability import PLANNED_FOR_INDEXES
from transactions.prepared import prepared_sql

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _take(queue_id: int) -> tuple[str, list]:
    """The destructive get's statement (no unit of work) for up to 10 messages, in delivery
    order by priority."""
    return _take_sql(
        get_transaction_id=None,
        queue_id=queue_id,
        now=timezone.now(),
        limit=10,
        priority_first=True,
        commit_ordered=False,
        uncommitted_of_others=None,
        match={},
    )


def _get_start(queue_id: int) -> tuple[str, list]:
    """The careful get's first statement (no unit of work named)."""
    return _get_start_sql(queue_id=queue_id, transaction_id=None, now=timezone.now())


def _get_call(queue_id: int) -> tuple[str, list]:
    """The get's function (``baton_get_v1``, no unit of work) for up to 10 messages, in
    delivery order by priority, at the current definitions: its statements inside, planned
    as the function's, and its looks for lapsed locks and overdue units of work."""
    with connection.cursor() as c:
        c.execute("SELECT version FROM brokers_definitionsversion WHERE id = 1")
        (version,) = c.fetchone()
    sql, params = get_call(
        version=version,
        queue_id=queue_id,
        broker="QM1",
        queue="Q1",
        transaction_id=None,
        begun_id=None,
        deadline_at=None,
        user_id=None,
        begun_user_id=None,
        now=timezone.now(),
        limit=10,
        priority_first=True,
        commit_ordered=False,
        match={},
        reports=False,
    )
    return sql, [*params, None]


def _buffers_read(queue_id: int, statement=_take) -> tuple[int, int]:
    """The buffers ``statement`` reads through its prepared plan, and the rows it returned (the
    take's messages, then given back: the database transaction is rolled back)."""
    sql, params = statement(queue_id)
    with transaction.atomic():
        connection.ensure_connection()
        executed, values = prepared_sql(connection.connection, sql, params)
        assert executed.startswith("EXECUTE "), executed  # the prepared statement, its plan cached
        with connection.cursor() as c:
            for setting in PLANNED_FOR_INDEXES:  # as an engine step plans
                c.execute(setting)
            c.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {executed}", values)
            (plan,) = c.fetchone()
        transaction.set_rollback(True)
    plan = plan if isinstance(plan, list) else json.loads(plan)
    top = plan[0]["Plan"]
    return top["Shared Hit Blocks"] + top.get("Shared Read Blocks", 0), top["Actual Rows"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plans")
@pytest.mark.parametrize("statement", [_take, _get_call], ids=["take", "get_v1"])
def test_a_take_planned_on_an_empty_queue_reads_no_more_of_a_deep_queue(queue, statement):
    """The function's statements are planned as PL/pgSQL plans them: each call's own plan
    for the first five, then one kept, so it runs six times shallow first."""
    queue_id = Queue.objects.get(broker__name="QM1", name="Q1").pk
    message_put(broker="QM1", queue="Q1", messages=msgs(*(f"s{n}" for n in range(10))))
    for _ in range(6):
        shallow, taken = _buffers_read(queue_id, statement)  # prepared and planned here, ten messages deep
    assert taken == 10

    for start in range(0, 3000, 500):
        message_put(broker="QM1", queue="Q1", messages=msgs(*(f"m{n}" for n in range(start, start + 500))))
    deep, taken = _buffers_read(queue_id, statement)  # the same plan, 3,010 messages deep

    assert taken == 10
    # reading each free message of the queue would take thousands of buffers more
    assert deep <= shallow * 1.5 + 20, (shallow, deep)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plans")
@pytest.mark.parametrize("statement", [_get_start], ids=["get_start"])
def test_a_get_s_look_for_lapsed_locks_reads_the_lock_expiry_index_not_the_queue(queue, statement):
    """What a get looks at before it chooses (a peek-lock run out, an overdue unit of work):
    planned ten messages deep, the same plan reads no more 3,010 deep. Written so that it
    implied the get indexes' predicate, it read all of ``msg_get_fifo``: 500 buffers a get
    with 500 messages waiting (docs/performance.md, "PostgreSQL: a get's look for lapsed
    locks")."""
    queue_id = Queue.objects.get(broker__name="QM1", name="Q1").pk
    message_put(broker="QM1", queue="Q1", messages=msgs(*(f"s{n}" for n in range(10))))
    shallow, rows = _buffers_read(queue_id, statement)
    assert rows == 1

    for start in range(0, 3000, 500):
        message_put(broker="QM1", queue="Q1", messages=msgs(*(f"m{n}" for n in range(start, start + 500))))
    deep, rows = _buffers_read(queue_id, statement)

    assert rows == 1
    assert deep <= shallow + 20, (shallow, deep)
