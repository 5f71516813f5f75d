"""journal_analytics: extract, transform and load on hand-made journal events."""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from pyspark.sql import functions as F

from spark_jobs.journal_analytics import EVENT_SCHEMA, extract, load, transform

pytestmark = pytest.mark.spark

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


def at(ms: int) -> datetime:
    return T0 + timedelta(milliseconds=ms)


def event(id_, ms, kind, broker="QM1", queue="", txn="", msg="", **detail) -> tuple:
    return (id_, at(ms), kind, broker, queue, txn, msg, {k: str(v) for k, v in detail.items()})


def frame(spark, events):
    return spark.createDataFrame(events, EVENT_SCHEMA)


def rows(df) -> list[dict]:
    return sorted((r.asDict() for r in df.collect()), key=lambda r: [str(v) for v in r.values()])


def test_message_gotten_250_ms_after_its_put_dwelt_250_ms(spark):
    events = frame(spark, [
        event(1, 0, "put", queue="Q1", msg="m1"),
        event(2, 250, "get", queue="Q1", msg="m1", put_time=at(0).isoformat()),
    ])
    assert rows(transform(events).queues) == [{
        "broker": "QM1", "queue": "Q1", "puts": 1, "gets": 1, "backouts": 0,
        "dwell_samples": 1, "dwell_p50_ms": 250.0, "dwell_p95_ms": 250.0,
    }]


def test_get_stamped_before_its_put_dwelt_0_ms(spark):
    # Both calls stamp their event before waiting for the database lock; the get can win.
    events = frame(spark, [event(1, 5, "put", queue="Q1", msg="m1"), event(2, 3, "get", queue="Q1", msg="m1")])
    [row] = transform(events).queues.collect()
    assert (row.dwell_samples, row.dwell_p50_ms, row.dwell_p95_ms) == (1, 0.0, 0.0)


TRAFFIC = [
    # QM1: T1 puts m1, m2 on Q1 and commits; m1 gotten at once; T2 gets m2 and rolls back;
    # m2 gotten again the next minute; m3 put on Q2 and never gotten.
    event(1, 0, "begin", txn="T1"),
    event(2, 0, "put", queue="Q1", txn="T1", msg="m1"),
    event(3, 0, "put", queue="Q1", txn="T1", msg="m2"),
    event(4, 10, "commit", txn="T1"),
    event(5, 100, "get", queue="Q1", msg="m1"),
    event(6, 400, "get", queue="Q1", txn="T2", msg="m2"),
    event(7, 500, "rollback", txn="T2", reason="client"),
    event(8, 500, "backout", queue="Q1", txn="T2", msg="m2", backout_count=1),
    event(9, 60_300, "get", queue="Q1", msg="m2"),
    event(10, 61_000, "put", queue="Q2", msg="m3"),
    # QM2: m4 arrived over a channel and was gotten; m9 was put before this export began.
    event(11, 1_000, "transfer", broker="QM2", queue="Q1", txn="T3", msg="m4"),
    event(12, 2_000, "commit", broker="QM2", txn="T3"),
    event(13, 1_500, "get", broker="QM2", queue="Q1", msg="m4"),
    event(14, 2_000, "get", broker="QM2", queue="Q1", msg="m9"),
]


def test_queues(spark):
    assert rows(transform(frame(spark, TRAFFIC)).queues) == [
        {"broker": "QM1", "queue": "Q1", "puts": 2, "gets": 3, "backouts": 1,
         "dwell_samples": 3, "dwell_p50_ms": 400.0, "dwell_p95_ms": 60_300.0},
        {"broker": "QM1", "queue": "Q2", "puts": 1, "gets": 0, "backouts": 0,
         "dwell_samples": 0, "dwell_p50_ms": None, "dwell_p95_ms": None},
        {"broker": "QM2", "queue": "Q1", "puts": 0, "gets": 2, "backouts": 0,
         "dwell_samples": 1, "dwell_p50_ms": 500.0, "dwell_p95_ms": 500.0},
    ]


def test_brokers(spark):
    assert rows(transform(frame(spark, TRAFFIC)).brokers) == [
        {"broker": "QM1", "committed": 1, "rolled_back": 1},
        {"broker": "QM2", "committed": 1, "rolled_back": 0},
    ]


def test_throughput_per_minute(spark):
    throughput = transform(frame(spark, TRAFFIC)).throughput
    as_text = throughput.withColumn("minute", F.date_format("minute", "HH:mm"))  # session time zone: UTC
    assert rows(as_text) == [
        {"broker": "QM1", "queue": "Q1", "minute": "12:00", "puts": 2, "gets": 2},
        {"broker": "QM1", "queue": "Q1", "minute": "12:01", "puts": 0, "gets": 1},
        {"broker": "QM1", "queue": "Q2", "minute": "12:01", "puts": 1, "gets": 0},
        {"broker": "QM2", "queue": "Q1", "minute": "12:00", "puts": 0, "gets": 2},
    ]


def test_extract_reads_the_export_format(spark, tmp_path):
    path = tmp_path / "journal.jsonl"
    path.write_text(
        '{"id":7,"at":"2025-05-01T12:00:00.250001+00:00","kind":"get","broker":"QM1","queue":"Q1",'
        '"transaction_id":"","msg_id":"m1","detail":{"put_time":"2025-05-01T12:00:00+00:00","preemptive":false}}\n'
    )
    events = extract(spark, str(path))
    assert events.schema == EVENT_SCHEMA
    (row,) = events.selectExpr("*", "unix_micros(at) AS micros").collect()
    assert row.micros == int(at(0).timestamp() * 1_000_000) + 250_001
    assert (row.id, row.kind, row.broker, row.queue, row.transaction_id, row.msg_id) == (
        7, "get", "QM1", "Q1", "", "m1",
    )
    assert row.detail == {"put_time": "2025-05-01T12:00:00+00:00", "preemptive": "false"}


def test_empty_export_gives_empty_results(spark, tmp_path):
    path = tmp_path / "journal.jsonl"
    path.write_text("")
    result = transform(extract(spark, str(path)))
    assert [frame.count() for frame in result] == [0, 0, 0]


def test_load_writes_json_lines_per_result(spark, tmp_path):
    written = load(transform(frame(spark, TRAFFIC)), str(tmp_path / "out"))
    assert sorted(written) == ["brokers", "queues", "throughput"]
    results = {}
    for name in written:
        parts = sorted((tmp_path / "out" / name).glob("part-*.json"))
        assert (tmp_path / "out" / name / "_SUCCESS").exists() and len(parts) == 1
        results[name] = [json.loads(line) for line in parts[0].read_text().splitlines()]
    assert results["queues"][1] == {
        "broker": "QM1", "queue": "Q2", "puts": 1, "gets": 0, "backouts": 0,
        "dwell_samples": 0, "dwell_p50_ms": None, "dwell_p95_ms": None,
    }
    assert results["throughput"][0] == {
        "broker": "QM1", "queue": "Q1", "minute": "2025-05-01T12:00:00Z", "puts": 2, "gets": 2,
    }
    # Running again replaces the results.
    load(transform(frame(spark, TRAFFIC[:2])), str(tmp_path / "out"))
    parts = list((tmp_path / "out" / "brokers").glob("part-*.json"))
    assert [json.loads(line) for line in parts[0].read_text().splitlines()] == [
        {"broker": "QM1", "committed": 0, "rolled_back": 0},
    ]
