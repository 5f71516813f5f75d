"""Message ids the console shows differ where the ids differ: messages put together share
the first 32 of their 48 characters (time and process), so the list shows the whole id."""

from __future__ import annotations

import re

import pytest

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_put
from dashboard.templatetags.baton import id_parts, id_tail

pytestmark = pytest.mark.django_db


def test_one_put_of_25_shows_25_different_ids(admin_client, queue):
    ids = [m.msg_id for m in message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"x")] * 25).messages]
    assert len({i[:32] for i in ids}) == 1  # the case that collided: one instant, one process
    page = admin_client.get("/brokers/QM1/queues/Q1/").content.decode()
    rows = re.findall(r'<tr data-msg-id="([0-9a-f]{48})"', page)
    assert sorted(rows) == sorted(ids)
    shown = re.findall(r'aria-label="message [0-9a-f]{48}">(.*?)</a>', page)
    texts = [re.sub(r"<[^>]+>", "", s) for s in shown]
    assert len(texts) == 25 and len(set(texts)) == 25 and set(texts) == set(ids)
    assert len({id_tail(i) for i in ids}) == 25


def test_labels():
    an_id = "0123456789abcdef" + "fedcba9876543210" + "0000000000000007"
    assert re.sub(r"<[^>]+>", "", id_parts(an_id)) == an_id
    assert id_tail(an_id) == "…3210·00000007"
    assert id_tail("9f3c1e2a7b6d4c5e8f9a0b1c2d3e4f5a") == "9f3c1e2a…"  # a unit of work's random id


def test_words_times_and_units():
    from datetime import datetime, timezone

    from dashboard.templatetags.baton import duration_ms, size, when, words

    assert words("not_found") == "Not found" and words("uncommitted_put") == "uncommitted put"
    assert [duration_ms(v) for v in (250, 1500, 60_000, 3_600_000, 90_000, 0, None)] == [
        "250 ms",
        "1.5 s",
        "1 min",
        "1 h",
        "1.5 min",
        "0 ms",
        "—",
    ]
    assert [size(v) for v in (512, 1536, 4 * 1024**2, 1048576 * 1024 * 2)] == ["512 B", "1.5 KiB", "4 MiB", "2 GiB"]
    now = datetime(2026, 12, 6, 2, 30, 0, tzinfo=timezone.utc)
    shown = when("2026-12-06T02:27:00+00:00", now)
    assert '<time datetime="2026-12-06T02:27:00+00:00"' in shown and ">2026-12-06 02:27:00</time>" in shown
    assert "(3 min ago)" in shown and "(just now)" in when(now, now) and when(None) == "—"
