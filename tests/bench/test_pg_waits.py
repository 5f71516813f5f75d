"""`python -m bench.pg_waits` samples what PostgreSQL's client backends wait on: a backend
blocked on another's row lock and one idle inside its transaction show as such."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from bench.pg_waits import sample
from tests.conftest import database_url

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_a_lock_wait_and_an_idle_transaction_are_seen():
    if connection.vendor != "postgresql":
        pytest.skip("pg_stat_activity is PostgreSQL's")
    import psycopg

    url = database_url()
    with psycopg.connect(url) as holder, psycopg.connect(url) as waiter:
        holder.execute("CREATE TABLE IF NOT EXISTS bench_pg_waits (id int PRIMARY KEY)")
        holder.execute("INSERT INTO bench_pg_waits VALUES (1) ON CONFLICT DO NOTHING")
        holder.commit()
        holder.execute("UPDATE bench_pg_waits SET id = 1 WHERE id = 1")  # holds the row, stays idle in its transaction
        blocked = threading.Thread(target=lambda: waiter.execute("UPDATE bench_pg_waits SET id = 1 WHERE id = 1"))
        blocked.start()
        try:
            seconds = list(sample(url, seconds=1.5, interval=0.02))
        finally:
            holder.rollback()
            blocked.join(timeout=10)
            waiter.rollback()
        holder.execute("DROP TABLE bench_pg_waits")
        holder.commit()
    last = seconds[-1][1]
    assert last.get("idle in transaction: Client/ClientRead") == pytest.approx(1.0)
    assert last.get("active: Lock/transactionid") == pytest.approx(1.0)
