"""How a subscription gets: one get per batch that arrives, not a second one that finds
nothing; batches no larger than the engine takes, whatever ``prefetch-count`` says."""

from __future__ import annotations

import threading

from stomp_server import engine

from .conftest import bye, connected


def _gets_counted(monkeypatch) -> list[int]:
    """The number of messages each get of the STOMP server returned, in order."""
    counts: list[int] = []
    lock = threading.Lock()
    real = engine.messages_got

    def counted(*args, **kwargs):
        got = real(*args, **kwargs)
        with lock:
            counts.append(len(got))
        return got

    monkeypatch.setattr(engine, "messages_got", counted)
    return counts


def test_messages_sent_one_at_a_time_are_got_once_each(stomp_port, stomp_broker, token, monkeypatch):
    counts = _gets_counted(monkeypatch)
    conn, seen = connected(stomp_port, token)
    # client-individual, and no ACK: no commit but the puts' wakes the subscription
    conn.subscribe("/queue/Q1", id="s1", ack="client-individual", headers={"receipt": "sub"})
    seen.wait(lambda: "sub" in seen.receipts)
    for n in range(10):
        conn.send("/queue/Q1", f"m{n}", headers={"receipt": f"r{n}"})
        seen.wait_messages(n + 1)
    assert [m.body for m in seen.messages] == [f"m{n}" for n in range(10)]
    bye(conn)
    # each message was got by a get of its own (the put's commit woke it), and no get was made
    # right after one that had found fewer than it asked for (it would have found nothing,
    # once per message); only a first look (the subscription's start, the wake-up listener's)
    # finds nothing
    assert sum(counts) == 10
    assert counts.count(0) <= 2, counts


def test_a_prefetch_count_above_the_largest_batch(stomp_port, stomp_broker, token, settings):
    settings.BATON_MAX_BATCH = 5
    conn, seen = connected(stomp_port, token)
    for n in range(12):
        conn.send("/queue/Q1", f"m{n}")
    conn.subscribe("/queue/Q1", id="s1", ack="client-individual", headers={"prefetch-count": "20"})
    messages = seen.wait_messages(12)
    assert sorted(m.body for m in messages) == sorted(f"m{n}" for n in range(12))
    assert seen.errors == []
    for m in messages:
        conn.ack(m.headers["ack"])
    bye(conn)
