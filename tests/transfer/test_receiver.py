"""The receiving end puts a batch with a few statements per batch, deciding per message as
before: the destination, too long or full → dead-letter queue with the reason, duplicates
skipped, the batch's order kept."""

from __future__ import annotations

import base64

import pytest

from brokers.channels.receiver import receiver_batch_commit, receiver_batch_receive
from brokers.models import Broker, Message, put_committed_q
from brokers.services.brokers import broker_define
from brokers.services.messages import message_put
from brokers.services.queues import queue_alter, queue_define
from baton_client.errors import PutInhibited
from tests.conftest import msgs

pytestmark = pytest.mark.django_db


def item(n: int, queue: str = "IN", body: bytes = b"x", msg_id: str | None = None) -> dict:
    return {
        "msg_id": msg_id or f"{n:048x}",
        "put_time": "2026-01-01T00:00:00+00:00",
        "body_base64": base64.b64encode(body).decode(),
        "destination": {"broker": "QMB", "queue": queue},
    }


def test_a_batch_lands_in_order_with_full_long_unknown_and_duplicates_handled():
    broker_define(name="QMB")
    queue_define(broker="QMB", name="IN", max_depth=3)
    queue_define(broker="QMB", name="SMALL", max_message_length=4)
    dlq = Broker.objects.get(name="QMB").dead_letter_queue
    items = [
        item(1),
        item(2),
        item(3, "SMALL", b"too long"),
        item(4, "NOWHERE"),
        item(5, msg_id=f"{1:048x}"),
        item(6),
        item(7),
        item(8, "SMALL", b"ok"),
    ]
    taken = receiver_batch_receive(
        payload={"channel": "A.B", "source_broker": "QMA", "target_broker": "QMB", "seq": 1, "messages": items}
    )
    assert taken == {"state": "received", "seq": 1, "dead_lettered": 3, "duplicates": 1}
    assert receiver_batch_commit(channel="A.B", source_broker="QMA", seq=1)["state"] == "committed"
    on = {
        q: list(Message.objects.filter(queue__name=q).order_by("id").values_list("msg_id", "dead_letter_reason"))
        for q in ("IN", "SMALL", dlq)
    }
    assert on["IN"] == [(f"{n:048x}", "") for n in (1, 2, 6)]
    assert on["SMALL"] == [(f"{8:048x}", "")]
    assert [(m, reason.split(" ")[0]) for m, reason in on[dlq]] == [
        (f"{3:048x}", "message"),
        (f"{4:048x}", "unknown"),
        (f"{7:048x}", "queue"),
    ]
    again = receiver_batch_receive(
        payload={
            "channel": "A.B",
            "source_broker": "QMA",
            "target_broker": "QMB",
            "seq": 2,
            "messages": [item(1), item(9, "SMALL")],
        }
    )
    assert again["duplicates"] == 1 and again["dead_lettered"] == 0


@pytest.mark.parametrize("inhibited", ["ALIAS", "IN", "RQ", "XQ"])
def test_a_batch_lands_where_a_put_would_and_is_refused_where_a_put_is(inhibited):
    """The receiving end resolves a destination as a put does (an alias, a remote queue's
    transmission queue) and dead-letters with the put's reason what a put would refuse."""
    broker_define(name="QMB")
    queue_define(broker="QMB", name="IN", max_message_length=4)
    queue_define(broker="QMB", name="ALIAS", kind="alias", target_queue="IN")
    queue_define(broker="QMB", name="XQ", usage="transmission")
    queue_define(
        broker="QMB", name="RQ", kind="remote", remote_broker="QMC", remote_queue="OUT", transmission_queue="XQ"
    )
    queue_alter(broker="QMB", name=inhibited, put_enabled=False)
    with pytest.raises(PutInhibited) as put:
        message_put(broker="QMB", queue="RQ" if inhibited in ("RQ", "XQ") else "ALIAS", messages=msgs("p"))
    items = [item(1, "ALIAS"), item(2, "ALIAS", b"too long"), item(3, "RQ")]
    taken = receiver_batch_receive(
        payload={"channel": "A.B", "source_broker": "QMA", "target_broker": "QMB", "seq": 1, "messages": items}
    )
    receiver_batch_commit(channel="A.B", source_broker="QMA", seq=1)
    dlq = Broker.objects.get(name="QMB").dead_letter_queue
    landed = {
        m.msg_id: (m.queue.name, m.dead_letter_reason, m.transmission_header)
        for m in Message.objects.select_related("queue")
    }
    alias_refused = inhibited in ("ALIAS", "IN")
    assert landed[f"{1:048x}"] == ((dlq, put.value.message, None) if alias_refused else ("IN", "", None))
    assert landed[f"{2:048x}"][0] == dlq  # longer than the alias's queue takes, whichever is refused
    assert landed[f"{3:048x}"] == (
        (dlq, put.value.message, None) if not alias_refused else ("XQ", "", {"broker": "QMC", "queue": "OUT"})
    )
    assert repr(inhibited) in put.value.message
    assert taken["dead_lettered"] == 2


def test_the_statements_of_a_batch_do_not_grow_with_its_messages():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    broker_define(name="QMB")
    queue_define(broker="QMB", name="IN")
    counts = []
    for seq, size in ((1, 1), (2, 100)):
        with CaptureQueriesContext(connection) as queries:
            receiver_batch_receive(
                payload={
                    "channel": "A.B",
                    "source_broker": "QMA",
                    "target_broker": "QMB",
                    "seq": seq,
                    "messages": [item(seq * 1000 + n) for n in range(size)],
                }
            )
        counts.append(len(queries))
    assert counts[1] <= counts[0] + 2, counts  # a bulk insert may be split, never a statement per message


def test_commit_through_commits_the_pending_batches_in_order_and_stops_at_one_backed_out():
    from brokers.channels.receiver import receiver_batch_backout, receiver_batch_status

    broker_define(name="QMB")
    queue_define(broker="QMB", name="IN")
    key = {"channel": "A.B", "source_broker": "QMA"}
    for seq in range(1, 6):
        receiver_batch_receive(
            payload={**key, "target_broker": "QMB", "seq": seq, "provisional": True, "messages": [item(seq)]}
        )
    assert receiver_batch_backout(**key, seq=4)["state"] == "backed_out"
    assert receiver_batch_commit(**key, seq=1, through=5) == {"state": "committed", "seq": 1, "committed_through": 3}
    assert [receiver_batch_status(**key, seq=n)["state"] for n in range(1, 6)] == [
        "committed",
        "committed",
        "committed",
        "unknown",
        "pending",
    ]
    assert sorted(Message.objects.filter(put_committed_q(), queue__name="IN").values_list("msg_id", flat=True)) == [
        f"{n:048x}" for n in (1, 2, 3)
    ]
    # asked again, the committed ones stay committed; the fifth commits once asked on its own
    assert receiver_batch_commit(**key, seq=2, through=3) == {"state": "committed", "seq": 2, "committed_through": 3}
    assert receiver_batch_commit(**key, seq=5)["state"] == "committed"
    # nothing received: nothing committed
    assert receiver_batch_commit(**key, seq=6, through=7) == {"state": "unknown", "seq": 6, "committed_through": None}
