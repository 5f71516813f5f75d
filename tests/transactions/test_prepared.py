"""PostgreSQL: the hot path's statements prepared once per connection and run as ``EXECUTE``
(transactions/prepared.py)."""

from __future__ import annotations

import pytest
from django.db import connection

from brokers.services.messages import message_get, message_put
from tests.conftest import bodies, msgs
from transactions import queries
from transactions.manager import transaction_commit
from transactions.prepared import prepared_sql

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's"),
]


def _prepared_names() -> set[str]:
    with connection.connection.cursor() as c:
        c.execute("SELECT name FROM pg_prepared_statements")
        return {name for (name,) in c.fetchall()}


def test_a_unit_of_works_statements_run_prepared_and_answer_as_before(queue):
    for body in ("a", "b"):  # the second unit of work runs on statements prepared by the first
        put = message_put(broker="QM1", queue="Q1", messages=msgs(body), syncpoint="yes")
        assert transaction_commit(transaction_id=put.transaction_id).state == "committed"
    got = message_get(broker="QM1", queue="Q1", syncpoint="yes", batch=2)
    assert bodies(got) == ["a", "b"]
    assert transaction_commit(transaction_id=got.transaction_id).state == "committed"
    names = {name for name in _prepared_names() if name.startswith("baton_")}
    assert len(names) >= 5  # the put's guard and inserts, the commit's reads and updates, the journal
    sql, _ = prepared_sql(connection.connection, "SELECT version FROM brokers_definitionsversion WHERE id = %s", [1])
    assert sql.startswith("EXECUTE baton_")
    with queries.cursor() as c:
        c.execute("SELECT version FROM brokers_definitionsversion WHERE id = %s", [1])
        assert c.fetchone()[0] is not None


def test_a_text_the_server_cannot_prepare_is_sent_as_text():
    connection.ensure_connection()
    sql, params = prepared_sql(connection.connection, "SELECT %s IS NULL", ["x"])  # no type for $1
    assert (sql, params) == ("SELECT %s IS NULL", ["x"])
    with queries.cursor() as c:
        c.execute("SELECT %s IS NULL", ["x"])
        assert c.fetchone() == (False,)


def test_a_failed_prepare_inside_a_transaction_leaves_it_usable():
    connection.ensure_connection()
    raw = connection.connection
    with raw.cursor() as c:
        c.execute("BEGIN")
        c.execute("CREATE TEMPORARY TABLE prepared_probe (n integer) ON COMMIT DROP")
        c.execute("INSERT INTO prepared_probe VALUES (1)")
        sql, params = prepared_sql(raw, "SELECT %s IS NULL, n FROM prepared_probe", ["x"])  # cannot be
        assert sql == "SELECT %s IS NULL, n FROM prepared_probe"
        sql, params = prepared_sql(raw, "UPDATE prepared_probe SET n = n + %s", [1])  # can
        assert sql.startswith("EXECUTE baton_")
        c.execute(sql, params)
        c.execute("SELECT n FROM prepared_probe")
        assert c.fetchone() == (2,)  # the insert before the failed PREPARE is still there
        c.execute("COMMIT")


def test_statements_joined_in_one_round_trip_are_prepared_one_by_one():
    connection.ensure_connection()
    sql, params = prepared_sql(
        connection.connection,
        "SELECT version FROM brokers_definitionsversion WHERE id = %s; SELECT %s IS NULL",
        [1, "x"],
    )
    first, second = sql.split("; ")
    assert first.startswith("EXECUTE baton_") and first.endswith("(%s)")
    assert second == "SELECT %s IS NULL"
    assert params == [1, "x"]


def test_turned_off_every_text_is_sent_as_text(settings):
    connection.ensure_connection()
    settings.BATON_PG_PREPARED = False
    text = "SELECT version FROM brokers_definitionsversion WHERE id = %s"
    assert prepared_sql(connection.connection, text, [1]) == (text, [1])
