"""What a put stores comes back exactly, whatever its bytes and characters, one message or
many in one call (on PostgreSQL a put of several goes as one array per column, and the
journal likewise: brokers.queries.messages_insert, transactions.queries.journal_insert)."""

from __future__ import annotations

import pytest
from django.db import connection

from brokers.models import Message
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from transactions.journal import journal_messages
from transactions.models import JournalEvent

AWKWARD_TEXT = "quote \" apostrophe ' backslash \\ braces {} [a,b] comma, NULL null \t tab é 漢字 🙂"


def awkward(i: int) -> MessageInput:
    return MessageInput(
        body=bytes(range(256)) + i.to_bytes(2, "big") + b"\\x00'\"{}",
        correl_id=f"{i:048x}",
        format=AWKWARD_TEXT[:100],
        properties={"text": AWKWARD_TEXT, "nested": {"list": [1, None, "{}", '"']}, "n": i},
        priority=i % 10,
    )


@pytest.mark.parametrize("count", [1, 3, 100])
def test_a_put_stores_every_byte_and_character_as_given(queue, count):
    sent = [awkward(i) for i in range(count)]
    put = message_put(broker="QM1", queue="Q1", messages=sent)
    assert len(put.messages) == count
    got = message_get(broker="QM1", queue="Q1", batch=count).messages
    by_correl = {m.correl_id: m for m in got}
    assert sorted(by_correl) == sorted(m.correl_id for m in sent)
    for m in sent:
        stored = by_correl[m.correl_id]
        assert bytes(stored.body) == m.body
        assert stored.format == m.format
        assert stored.properties == m.properties
        assert stored.priority == m.priority
    # the journal records every message put, under the right queue: one event for the
    # step, which stands for each message in order (transactions.journal.journal_messages)
    rows = list(JournalEvent.objects.filter(kind="put", queue="Q1").values())
    assert [r["count"] for r in rows] == [count]
    events = [e for row in rows for e in journal_messages(row)]
    assert [e["msg_id"] for e in events] == [m.msg_id for m in put.messages]
    assert [e["detail"] for e in events] == [{"persistent": True, "bytes": len(m.body)} for m in sent]


@pytest.mark.parametrize("count", [1, 3, 100])
def test_a_put_knows_each_message_row_id(queue, count):
    """SQLite: a put's rows take their ids from the statement's ``lastrowid`` and the ones
    before it (no ``RETURNING``), also once the table's newest rows have gone (an
    AUTOINCREMENT table never hands an id out twice)."""
    if connection.vendor != "sqlite":
        pytest.skip("on PostgreSQL a put keeps no row ids")
    before = message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"gone")] * 3)
    assert len(message_get(broker="QM1", queue="Q1", batch=3).messages) == 3  # final: the rows are deleted
    put = message_put(broker="QM1", queue="Q1", messages=[awkward(i) for i in range(count)])
    stored = dict(Message.objects.filter(queue__name="Q1").values_list("msg_id", "id"))
    assert {m.msg_id: m.id for m in put.messages} == stored
    assert min(stored.values()) == max(m.id for m in before.messages) + 1
