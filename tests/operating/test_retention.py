"""Retention (brokers/operating/retention.py) on the real database of the pass (SQLite, then
PostgreSQL): units of work resolved before the window are forgotten (404 then), younger and
open ones stay; journal events older than the window go once the analytics export has read
them, and after twice the window whether read or not; an unread one inside that stays; the
newest event always stays; all in batches, the longest database transaction measured.

``transaction=True``: the rows are committed as the platform's are (the PostgreSQL export
watermark is a snapshot's ``xmin``: rows of a transaction still open are never read)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from analytics.models import ExportWatermark
from brokers.operating.housekeeping import operating_housekeep
from brokers.services.brokers import broker_define
from brokers.services.queues import queue_define
from transactions.journal import journal_event, journal_record
from transactions.journal_export import journal_export_increment
from transactions.models import JournalEvent, Transaction

from ..integration.servers import poll_until

pytestmark = pytest.mark.django_db(transaction=True)
HOUR = 3600


def begun(api) -> str:
    response = api.post("/api/brokers/QM1/transactions/", {}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def committed(api) -> str:
    txn = begun(api)
    assert (
        api.post("/api/brokers/QM1/queues/Q1/messages/", {"body": "x", "transaction": txn}, format="json").status_code
        == 201
    )
    assert api.post(f"/api/transactions/{txn}/commit/", {}, format="json").status_code == 200
    return txn


def aged(txn: str, seconds: float) -> None:
    Transaction.objects.filter(pk=txn).update(resolved_at=timezone.now() - timedelta(seconds=seconds))


@override_settings(BATON_RESOLVED_RETENTION_S=HOUR)
def test_units_of_work_resolved_before_the_window_are_forgotten(api):
    broker_define(name="QM1")
    queue_define(broker="QM1", name="Q1")
    old = [committed(api) for _ in range(3)]
    young = committed(api)
    still_open = begun(api)
    for txn in old:
        aged(txn, HOUR + 60)
    aged(young, HOUR - 60)
    Transaction.objects.filter(pk=still_open).update(created_at=timezone.now() - timedelta(days=3))
    unknown = api.get("/api/transactions/0123456789abcdef0123456789abcdef/")

    done = operating_housekeep()
    assert done["units_of_work_forgotten"] == 3
    assert done["longest_hold_ms"] > 0
    for txn in old:
        shown = api.get(f"/api/transactions/{txn}/")
        assert (
            (shown.status_code, shown.json()["code"])
            == (unknown.status_code, unknown.json()["code"])
            == (
                404,
                "not_found",
            )
        )
        check = api.post(f"/api/transactions/{txn}/check/", {}, format="json")
        assert check.status_code == 404, check.content
    assert api.get(f"/api/transactions/{young}/").json()["state"] == "committed"
    assert api.get(f"/api/transactions/{still_open}/").json()["state"] == "active"
    # the messages their puts committed are still there, still committed
    assert api.get("/api/brokers/QM1/queues/Q1/").json()["depth"] == 4


def events(n: int, *, age_s: float, queue: str = "Q1") -> None:
    at = timezone.now() - timedelta(seconds=age_s)
    journal_record(events=[journal_event("put", broker="QM1", queue=queue, msg_id=f"m{i}", at=at) for i in range(n)])


def ids(queue: str) -> int:
    return JournalEvent.objects.filter(queue=queue).count()


class Exporter:
    """The analytics export's increments, as analytics.services runs them. On PostgreSQL an
    increment reads only the rows of transactions older than every one still open on the
    server (its watermark is the snapshot's xmin), so a busy shared server's long transaction
    can leave the newest rows for a later increment: increments until ``total`` are read."""

    def __init__(self, directory) -> None:
        self.directory, self.watermark, self.read, self.parts = directory, None, 0, 0

    def read_all(self, total: int) -> None:
        def increment() -> bool:
            self.parts += 1
            summary = journal_export_increment(
                path=self.directory / f"part-{self.parts}.jsonl", watermark=self.watermark
            )
            self.read, self.watermark = self.read + summary["events"], summary["watermark"]
            return self.read >= total

        poll_until(increment, timeout=60, what=f"the export to read {total} events (read {self.read})")


@override_settings(BATON_JOURNAL_RETENTION_S=HOUR)
def test_journal_events_go_after_the_window_once_exported(tmp_path, api):
    broker_define(name="QM1")
    events(1200, age_s=2 * HOUR + 600, queue="ANCIENT")  # past twice the window: go even unread
    events(700, age_s=HOUR + 600, queue="READ")  # past the window and exported: go
    exporter = Exporter(tmp_path)
    exporter.read_all(1900)
    ExportWatermark.objects.update_or_create(pk=1, defaults={"watermark": exporter.watermark})
    events(5, age_s=HOUR + 300, queue="UNREAD")  # past the window, not exported yet: stays
    events(5, age_s=60, queue="YOUNG")  # inside the window: stays

    done = operating_housekeep()
    assert done["journal_events_forgotten"] == 1900
    assert (ids("ANCIENT"), ids("READ"), ids("UNREAD"), ids("YOUNG")) == (0, 0, 5, 5)
    assert done["longest_hold_ms"] > 0

    # the next export reads them; then they go too, and the newest row never does
    exporter.read_all(1910)
    ExportWatermark.objects.filter(pk=1).update(watermark=exporter.watermark)
    assert operating_housekeep()["journal_events_forgotten"] == 5
    assert (ids("UNREAD"), ids("YOUNG")) == (0, 5)
    JournalEvent.objects.filter(queue="YOUNG").update(at=timezone.now() - timedelta(seconds=3 * HOUR))
    operating_housekeep()
    assert list(JournalEvent.objects.values_list("queue", flat=True)) == ["YOUNG"]  # the newest stays


def test_housekeep_verb_and_the_storage_settings(api):
    out = __import__("io").StringIO()
    call_command("baton", "housekeep", stdout=out)
    assert "units_of_work_forgotten: 0" in out.getvalue() and "longest_hold_ms" in out.getvalue()
    with connection.cursor() as c:
        if connection.vendor == "sqlite":
            c.execute("PRAGMA auto_vacuum")
            assert c.fetchone()[0] == 2  # incremental (migration brokers 0017)
        else:
            c.execute("SELECT reloptions FROM pg_class WHERE relname = 'brokers_message'")
            assert any("autovacuum_vacuum_scale_factor" in option for option in c.fetchone()[0])
