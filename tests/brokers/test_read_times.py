"""A get reads a message's times back as the instants the put wrote, aware and in UTC. On
SQLite the get's statement reads them as text (``+column``, past the driver's converter) and
``brokers.queries._datetime`` makes each an aware datetime in one call; any other text form
still goes through Django's parser."""

from __future__ import annotations

from datetime import timezone

import pytest
from django.utils.dateparse import parse_datetime

from brokers.queries import _datetime
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from transactions.manager import transaction_begin
from transactions.queries import aware


@pytest.mark.parametrize("under_unit", [False, True])
def test_a_get_reads_the_put_time_and_expiry_the_put_wrote(queue, under_unit):
    put = message_put(
        broker="QM1",
        queue="Q1",
        messages=[MessageInput(body=b"a", expiry_ms=3_600_000), MessageInput(body=b"b")],
    )
    unit = transaction_begin(broker="QM1", timeout_ms=60_000).id if under_unit else None
    got = message_get(broker="QM1", queue="Q1", batch=2, transaction_id=unit).messages
    assert [m.body for m in got] == [b"a", b"b"]
    for sent, read in zip(put.messages, got):
        assert read.put_time == sent.put_time
        assert read.put_time.utcoffset() == timezone.utc.utcoffset(None)
        assert read.expires_at == sent.expires_at
    assert got[0].expires_at is not None and got[0].expires_at.tzinfo is not None
    assert got[1].expires_at is None


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-27 10:00:00",
        "2026-11-27 10:00:00.123456",
        "2026-11-27 10:00:00.123",  # not the fast form: Django's parser
        "2026-11-27T10:00:00+01:00",
        "2026-11-27 10:00:00.123+01",  # 26 characters, an offset: not the fast form either
    ],
)
def test_text_is_read_as_django_reads_it(text):
    read = _datetime(text)
    assert read == aware(parse_datetime(text))
    assert read.utcoffset() == aware(parse_datetime(text)).utcoffset()
