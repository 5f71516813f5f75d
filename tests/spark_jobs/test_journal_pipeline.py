"""Traffic made through the services, exported from the database, analysed by Spark."""

from __future__ import annotations

import time

import pytest

from brokers.services.brokers import broker_define
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from spark_jobs.journal_analytics import extract, transform
from tests.conftest import bodies, msgs
from transactions.journal_export import journal_export
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback

pytestmark = pytest.mark.spark


def test_exported_traffic_is_counted(spark, queue, tmp_path):
    queue_define(broker="QM1", name="Q2")
    broker_define(name="QM2")
    queue_define(broker="QM2", name="Q1")

    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    assert bodies(message_get(broker="QM1", queue="Q1", batch=2)) == ["a", "b"]
    message_put(broker="QM1", queue="Q1", messages=msgs("c"))
    time.sleep(0.3)
    backed_out = transaction_begin(broker="QM1", timeout_ms=60_000)
    assert bodies(message_get(broker="QM1", queue="Q1", transaction_id=backed_out.id)) == ["c"]
    transaction_rollback(transaction_id=backed_out.id)
    assert bodies(message_get(broker="QM1", queue="Q1")) == ["c"]

    committed = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q2", messages=msgs("d", "e"), transaction_id=committed.id)
    transaction_commit(transaction_id=committed.id)
    message_put(broker="QM2", queue="Q1", messages=msgs("f"))

    summary = journal_export(path=tmp_path / "journal.jsonl")
    assert summary["events"] > 0
    result = transform(extract(spark, summary["path"]))

    queues = {(r.broker, r.queue): r.asDict() for r in result.queues.collect()}
    counts = {key: (r["puts"], r["gets"], r["backouts"], r["dwell_samples"]) for key, r in queues.items()}
    assert counts == {("QM1", "Q1"): (3, 4, 1, 4), ("QM1", "Q2"): (2, 0, 0, 0), ("QM2", "Q1"): (1, 0, 0, 0)}
    q1 = queues[("QM1", "Q1")]
    assert 0 <= q1["dwell_p50_ms"] <= q1["dwell_p95_ms"]
    assert q1["dwell_p95_ms"] >= 300  # "c" waited out the sleep, twice

    assert {r.broker: (r.committed, r.rolled_back) for r in result.brokers.collect()} == {
        "QM1": (1, 1),
        "QM2": (0, 0),
    }
    assert sum(r.puts for r in result.throughput.collect()) == 6
