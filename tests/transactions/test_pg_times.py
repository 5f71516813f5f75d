"""PostgreSQL: times are read by psycopg's own loader, with the values, and the zone, that
Django's would give (transactions/backends/postgresql/base.py)."""

from __future__ import annotations

import datetime

import pytest
from django.db import connection

from transactions import queries
from transactions.backends.postgresql.base import UtcTimestamptzLoader

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's loaders"),
]

UTC = datetime.timezone.utc
TEXTS = [
    ("2026-12-05 16:23:44.123456+00", datetime.datetime(2026, 12, 5, 16, 23, 44, 123456, tzinfo=UTC)),
    ("2026-12-05 18:23:44+02", datetime.datetime(2026, 12, 5, 16, 23, 44, tzinfo=UTC)),
    ("1999-01-01 00:00:00.5-05:30", datetime.datetime(1999, 1, 1, 5, 30, 0, 500000, tzinfo=UTC)),
    ("2000-02-29 23:59:59.999999+00", datetime.datetime(2000, 2, 29, 23, 59, 59, 999999, tzinfo=UTC)),
]


def test_the_connection_reads_times_with_psycopgs_loader():
    connection.ensure_connection()
    loader = connection.connection.adapters.get_loader(connection.connection.adapters.types["timestamptz"].oid, 0)
    assert loader is UtcTimestamptzLoader


@pytest.mark.parametrize("text,expected", TEXTS)
def test_a_time_reads_as_the_same_instant_in_utc(text, expected):
    for c in (connection.cursor(), queries.cursor()):  # Django's cursor and the engine's
        with c:
            c.execute("SELECT %s::timestamptz, NULL::timestamptz", [text])
            value, null = c.fetchone()
        assert value == expected
        assert value.tzinfo is UTC
        assert null is None


def test_times_of_rows_read_through_the_orm_are_aware_utc():
    from brokers.services.brokers import broker_define
    from brokers.models import Broker

    broker_define(name="TIMES")
    created = Broker.objects.get(name="TIMES").created_at
    assert created.tzinfo is UTC
    assert abs(created - datetime.datetime.now(UTC)) < datetime.timedelta(minutes=5)
