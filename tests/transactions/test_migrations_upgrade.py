"""Upgrading a database made by the earlier schema (transactions 0002) to the lean indexes
(0003), the journal's rowid (0004) and its unindexed time (0005): the units of work and
journal events stay as they were, the dropped indexes are gone, the partial cause index is there, the unit-of-work
queries still find what they look for, and new journal events get larger ids."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BEFORE = [("transactions", "0002_transaction_user")]
AFTER = [("transactions", "0004_journal_rowid")]


def _migrate(targets) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor


def _indexes(table: str = "transactions_transaction") -> set[str]:
    with connection.cursor() as c:
        return set(connection.introspection.get_constraints(c, table))


JOURNAL_AT_INDEX = "transactions_journalevent_at_09e68393"


def test_an_earlier_database_keeps_its_units_of_work_and_loses_only_indexes(django_user_model):
    user = django_user_model.objects.create_user("upgrader")
    try:
        _migrate(BEFORE)
        assert "transactions_transaction_user_id_b9ecc248" in _indexes()
        assert JOURNAL_AT_INDEX in _indexes("transactions_journalevent")
        with connection.cursor() as c:
            for id, cause in (("u1", None), ("u2", "u1")):
                c.execute(
                    "INSERT INTO transactions_transaction (id, broker, state, reason, owner, marks, created_at,"
                    " cause_id, user_id) VALUES (%s, 'QM1', 'rolled_back', '', '', '[]', CURRENT_TIMESTAMP, %s, %s)",
                    [id, cause, user.pk],
                )
            for _ in range(2):
                c.execute(
                    "INSERT INTO transactions_journalevent (at, kind, broker, queue, transaction_id, msg_id, detail)"
                    " VALUES (CURRENT_TIMESTAMP, 'begin', 'QM1', '', 'u1', '', '{}')"
                )
            c.execute("SELECT id FROM transactions_journalevent WHERE transaction_id = 'u1' ORDER BY id")
            journal = [row[0] for row in c.fetchall()]
        _migrate(AFTER)
    finally:
        _migrate(_latest())
    indexes = _indexes()
    assert "txn_cause" in indexes
    assert not {"transactions_transaction_user_id_b9ecc248", "transactions_transaction_cause_id_270b1dae"} & indexes
    assert not {name for name in indexes if name.endswith("_like")}
    assert JOURNAL_AT_INDEX not in _indexes("transactions_journalevent")
    from transactions.models import Transaction

    rows = {t.id: (t.cause_id, t.user_id) for t in Transaction.objects.filter(id__in=["u1", "u2"])}
    assert rows == {"u1": (None, user.pk), "u2": ("u1", user.pk)}
    assert list(Transaction.objects.filter(cause_id="u1").values_list("id", flat=True)) == ["u2"]
    Transaction.objects.filter(id__in=["u1", "u2"]).delete()
    from transactions.models import JournalEvent

    assert list(JournalEvent.objects.filter(transaction_id="u1").order_by("id").values_list("id", flat=True)) == journal
    added = JournalEvent.objects.create(at="2026-01-01T00:00:00Z", kind="begin", broker="QM1")
    assert added.id > max(journal)
    JournalEvent.objects.filter(transaction_id="u1").delete()
    added.delete()


def _latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


def test_the_journal_rows_of_an_earlier_database_each_stand_for_one_event():
    """0006 adds the journal's ``count``: every row written before stands for one event,
    and a row written after says how many messages of a step it stands for."""
    try:
        _migrate([("transactions", "0005_journal_at_unindexed")])
        with connection.cursor() as c:
            c.execute(
                "INSERT INTO transactions_journalevent (at, kind, broker, queue, transaction_id, msg_id, detail)"
                " VALUES (CURRENT_TIMESTAMP, 'put', 'QM1', 'Q1', 'u9', 'm1', '{\"bytes\": 3}')"
            )
        _migrate(_latest())
        from transactions.models import JournalEvent

        old = JournalEvent.objects.get(transaction_id="u9")
        assert (old.kind, old.msg_id, old.detail, old.count) == ("put", "m1", {"bytes": 3}, 1)
        new = JournalEvent.objects.create(at="2026-01-01T00:00:00Z", kind="get", broker="QM1", count=3)
        assert JournalEvent.objects.get(pk=new.pk).count == 3
        assert new.pk > old.pk
    finally:
        _migrate(_latest())
        from transactions.models import JournalEvent

        JournalEvent.objects.filter(broker="QM1", transaction_id__in=["u9", ""]).delete()


def test_links_and_queue_releases_of_an_earlier_database_survive_their_rowid_and_lean_index():
    """transactions 0008 and brokers 0013: links and queue release rows are kept whole, the
    link's own upstream index is gone (``link_unique`` serves it), look-ups by upstream and
    by downstream still find the link, a queue's room still counts its releases, and new
    rows get ids; on SQLite neither table has ``AUTOINCREMENT`` any more."""
    from brokers import queries as broker_queries
    from brokers.services.brokers import broker_define
    from brokers.services.queues import queue_define

    broker_define(name="UPG")
    queue = queue_define(broker="UPG", name="Q1")
    try:
        _migrate([("transactions", "0007_baton_require"), ("brokers", "0012_message_put_transaction_names_its_unit")])
        assert "transactions_link_upstream_id_f251b587" in _indexes("transactions_link")
        with connection.cursor() as c:
            for id in ("up1", "down1"):
                c.execute(
                    "INSERT INTO transactions_transaction (id, broker, state, reason, owner, marks, created_at)"
                    " VALUES (%s, 'UPG', 'active', '', '', '[]', CURRENT_TIMESTAMP)",
                    [id],
                )
            c.execute(
                "INSERT INTO transactions_link (upstream_id, downstream_id, resource_ref, created_at)"
                " VALUES ('up1', 'down1', 'm1', CURRENT_TIMESTAMP)"
            )
            c.execute("INSERT INTO brokers_queuerelease (queue_id, stripe, released) VALUES (%s, 0, 3)", [queue.pk])
            c.execute("UPDATE brokers_queue SET reserved_depth = 5 WHERE id = %s", [queue.pk])
        _migrate(_latest())
        assert "transactions_link_upstream_id_f251b587" not in _indexes("transactions_link")
        assert "link_unique" in _indexes("transactions_link")
        from transactions.models import Link
        from transactions.selectors import transaction_neighbours

        assert transaction_neighbours(transaction_id="down1") == (["up1"], [])
        assert transaction_neighbours(transaction_id="up1") == ([], ["down1"])
        old = Link.objects.get(upstream_id="up1")
        assert (old.downstream_id, old.resource_ref) == ("down1", "m1")
        new = Link.objects.create(upstream_id="up1", downstream_id="down1", resource_ref="m2")
        assert new.pk > old.pk
        assert broker_queries.queue_reserved(queue_id=queue.pk) == 2
        if connection.vendor == "sqlite":
            with connection.cursor() as c:
                c.execute(
                    "SELECT name, sql FROM sqlite_master WHERE name IN ('transactions_link', 'brokers_queuerelease')"
                )
                tables = dict(c.fetchall())
            assert set(tables) == {"transactions_link", "brokers_queuerelease"}
            assert not [name for name, sql in tables.items() if "AUTOINCREMENT" in sql.upper()]
    finally:
        _migrate(_latest())
        from transactions.models import Transaction

        Transaction.objects.filter(id__in=["up1", "down1"]).delete()


def _create_sql(table: str) -> str:
    with connection.cursor() as c:
        c.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = %s", [table])
        return c.fetchone()[0]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="WITHOUT ROWID is SQLite's")
def test_the_units_of_work_table_is_without_rowid_after_every_migration():
    """transactions 0009; Django rebuilds a SQLite table as a rowid table whenever a migration
    alters a column of it: a later migration that does so must rebuild it without rowid
    again (``0009_transaction_without_rowid.rebuilt``)."""
    assert _create_sql("transactions_transaction").upper().endswith("WITHOUT ROWID")


@pytest.mark.skipif(connection.vendor != "sqlite", reason="WITHOUT ROWID is SQLite's")
def test_units_of_work_of_an_earlier_database_keep_their_rows_indexes_and_references_without_rowid():
    """transactions 0009 on a database at 0008: the units of work, their cause, their indexes
    and the messages and links that name them are as they were; undone, it is a rowid table
    again with the same rows."""
    from brokers.models import Message
    from brokers.services.brokers import broker_define
    from brokers.services.message_input import MessageInput
    from brokers.services.messages.put import message_put
    from brokers.services.queues import queue_define
    from transactions.manager import transaction_begin

    broker_define(name="UPR")
    queue_define(broker="UPR", name="Q1")
    try:
        _migrate([("transactions", "0008_link_rowid_lean")])
        assert not _create_sql("transactions_transaction").upper().endswith("WITHOUT ROWID")
        with connection.cursor() as c:
            for id, cause in (("w1", None), ("w2", "w1")):
                c.execute(
                    "INSERT INTO transactions_transaction (id, broker, state, reason, owner, marks, created_at,"
                    " cause_id) VALUES (%s, 'UPR', 'active', '', '', '[]', CURRENT_TIMESTAMP, %s)",
                    [id, cause],
                )
        indexes_before = _indexes()
        _migrate([("transactions", "0009_transaction_without_rowid")])
        assert _create_sql("transactions_transaction").upper().endswith("WITHOUT ROWID")
        assert _indexes() == indexes_before
        from transactions.models import Transaction

        assert dict(Transaction.objects.filter(broker="UPR").values_list("id", "cause_id")) == {
            "w1": None,
            "w2": "w1",
        }
        message_put(broker="UPR", queue="Q1", transaction_id="w2", messages=[MessageInput(body=b"m")])
        assert Message.objects.get(queue__name="Q1", queue__broker__name="UPR").put_transaction_id == "w2"
        begun = transaction_begin(broker="UPR", timeout_ms=60_000)
        assert Transaction.objects.get(pk=begun.id).state == "active"
        _migrate([("transactions", "0008_link_rowid_lean")])
        assert not _create_sql("transactions_transaction").upper().endswith("WITHOUT ROWID")
        assert set(Transaction.objects.filter(broker="UPR").values_list("id", flat=True)) == {"w1", "w2", begun.id}
    finally:
        _migrate(_latest())
        from transactions.models import Transaction

        Message.objects.filter(queue__broker__name="UPR").delete()
        Transaction.objects.filter(broker="UPR").delete()
