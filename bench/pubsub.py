"""The scenarios of ``python -m bench benchmark_pubsub`` (run in its child process, on the
scratch database)."""

from __future__ import annotations

import time

from brokers.services.brokers import broker_define
from brokers.services.message_input import MessageInput
from brokers.services.queues import queue_define
from brokers.models import Queue

from pubsub.models import Subscription
from pubsub.services.publications import publication_publish
from pubsub.services.subscriptions import subscription_define
from pubsub.topics import matches
from pubsub.tree import tree_for, tree_version_bump

TOPIC = "bench/prices/eur"
#: Filters that match TOPIC, one per matching subscription (cycled).
MATCHING = [
    "bench/prices/eur",
    "bench/prices/+",
    "bench/#",
    "+/prices/eur",
    "bench/+/eur",
    "#",
    "+/+/+",
    "bench/prices/#",
    "+/prices/+",
    "bench/+/+",
]


def _others(n: int) -> list[str]:
    """Filters that do not match TOPIC: literal, '+' and '#' ones spread over many subtrees,
    several sharing TOPIC's first levels."""
    shapes = [
        "other/{i}/eur",
        "bench/prices/usd{i}",
        "bench/{i}/+",
        "+/stocks/{i}",
        "x{i}/#",
        "bench/prices/eur/{i}",
        "bench/+/gbp{i}",
        "+/+/{i}/+",
    ]
    return [shapes[i % len(shapes)].format(i=i) for i in range(n)]


def _publish_rate(*, broker: str, publications: int, expected: int) -> dict:
    body = b"x" * 1024
    started = time.perf_counter()
    for _ in range(publications):
        result = publication_publish(
            broker=broker, topic=TOPIC, message=MessageInput(body=body, persistence="persistent")
        )
        assert result.matched == expected, result
    elapsed = time.perf_counter() - started
    return {
        "publications_per_s": publications / elapsed,
        "copies_per_s": publications * expected / elapsed,
        "ms_per_publication": elapsed * 1000 / publications,
    }


def run(*, publications: int, subscriptions: int, matching: int, broker: str) -> dict:
    owner = broker_define(name=broker, transaction_timeout_ms=60_000)
    for i in range(matching):
        queue_define(broker=broker, name=f"SUB.{i}", max_depth=publications * 2 + 100)
        subscription_define(
            broker=broker, name=f"match.{i}", topic_filter=MATCHING[i % len(MATCHING)], queue=f"SUB.{i}"
        )
    results: dict = {"publish": [], "matching": []}
    _publish_rate(broker=broker, publications=min(20, publications), expected=matching)  # warm up
    results["publish"].append(
        {
            "scenario": f"{matching} subscriptions, all matching",
            **_publish_rate(broker=broker, publications=publications, expected=matching),
        }
    )
    # the others: defined in bulk (defining 10,000 one by one is not what is measured)
    other_queue = Queue.objects.get(broker=owner, name=owner.dead_letter_queue)
    Subscription.objects.bulk_create(
        [
            Subscription(broker=owner, name=f"other.{i}", topic_filter=f, queue=other_queue)
            for i, f in enumerate(_others(subscriptions - matching))
        ],
        batch_size=1000,
    )
    tree_version_bump()
    _publish_rate(broker=broker, publications=min(20, publications), expected=matching)  # builds the tree
    results["publish"].append(
        {
            "scenario": f"{subscriptions} subscriptions, {matching} matching",
            **_publish_rate(broker=broker, publications=publications, expected=matching),
        }
    )
    tree = tree_for(broker_id=owner.pk)
    filters = list(Subscription.objects.filter(broker=owner).values_list("topic_filter", flat=True))
    rounds = 2000
    started = time.perf_counter()
    for _ in range(rounds):
        found = tree.match(TOPIC)
    tree_us = (time.perf_counter() - started) * 1e6 / rounds
    assert len(found) == matching
    started = time.perf_counter()
    scan_rounds = 50
    for _ in range(scan_rounds):
        scanned = [f for f in filters if matches(f, TOPIC)]
    scan_us = (time.perf_counter() - started) * 1e6 / scan_rounds
    assert len(scanned) == matching
    results["matching"] = [
        {"scenario": f"subscription tree ({subscriptions} filters)", "us_per_match": tree_us},
        {"scenario": f"scan of every filter ({subscriptions} filters)", "us_per_match": scan_us},
    ]
    return results
