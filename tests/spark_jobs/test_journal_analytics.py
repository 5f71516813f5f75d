"""journal_analytics: extract, transform and load on hand-made journal events."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

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
    events = frame(
        spark,
        [
            event(1, 0, "put", queue="Q1", msg="m1"),
            event(2, 250, "get", queue="Q1", msg="m1", put_time=at(0).isoformat()),
        ],
    )
    [row] = transform(events).queues.collect()
    assert (row.dwell_samples, row.dwell_p50_ms, row.dwell_p95_ms, row.dwell_p99_ms) == (1, 250.0, 250.0, 250.0)
    assert (row.depth, row.oldest_age_ms) == (0, None)


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
    # QM1: T4 puts m5 on Q2 and rolls back: m5 never counts; m6 is dead-lettered from Q2.
    event(15, 1_000, "put", queue="Q2", txn="T4", msg="m5"),
    event(16, 1_100, "rollback", txn="T4", reason="client"),
    event(17, 1_200, "put", queue="Q2", msg="m6"),
    event(18, 1_300, "dead_letter", queue="Q2", msg="m6", target="DLQ"),
]


@pytest.fixture(scope="module")
def traffic(spark):
    result = transform(frame(spark, TRAFFIC))
    return result._replace(**{name: df.cache() for name, df in result._asdict().items()})


def test_queues(spark, traffic):
    assertDataFrameEqual(
        traffic.queues,
        [
            # m6 moved here from Q2 at 1.3 s and waits (the input ends at 61 s)
            Row(
                broker="QM1",
                queue="DLQ",
                puts=0,
                gets=0,
                backouts=0,
                transfers=0,
                moved_in=1,
                backout_rate=None,
                dead_letters=0,
                expired=0,
                discarded=0,
                cancelled=0,
                depth=1,
                oldest_age_ms=59_700.0,
                dwell_samples=0,
                dwell_p50_ms=None,
                dwell_p95_ms=None,
                dwell_p99_ms=None,
            ),
            Row(
                broker="QM1",
                queue="Q1",
                puts=2,
                gets=3,
                backouts=1,
                transfers=0,
                moved_in=0,
                backout_rate=1 / 3,
                dead_letters=0,
                expired=0,
                discarded=0,
                cancelled=0,
                depth=0,
                oldest_age_ms=None,
                dwell_samples=3,
                dwell_p50_ms=400.0,
                dwell_p95_ms=60_300.0,
                dwell_p99_ms=60_300.0,
            ),
            # m3 waits: put at the input's last event (61 s); m5 vanished with T4; m6 moved away
            Row(
                broker="QM1",
                queue="Q2",
                puts=3,
                gets=0,
                backouts=0,
                transfers=0,
                moved_in=0,
                backout_rate=None,
                dead_letters=1,
                expired=0,
                discarded=0,
                cancelled=0,
                depth=1,
                oldest_age_ms=0.0,
                dwell_samples=0,
                dwell_p50_ms=None,
                dwell_p95_ms=None,
                dwell_p99_ms=None,
            ),
            # m9 came before the input: depth is counted from the input's first event
            Row(
                broker="QM2",
                queue="Q1",
                puts=0,
                gets=2,
                backouts=0,
                transfers=1,
                moved_in=0,
                backout_rate=0.0,
                dead_letters=0,
                expired=0,
                discarded=0,
                cancelled=0,
                depth=-1,
                oldest_age_ms=None,
                dwell_samples=1,
                dwell_p50_ms=500.0,
                dwell_p95_ms=500.0,
                dwell_p99_ms=500.0,
            ),
        ],
    )


def test_brokers(spark, traffic):
    assertDataFrameEqual(
        traffic.brokers,
        [
            Row(
                broker="QM1",
                committed=1,
                rolled_back=2,
                cascaded=0,
                links=0,
                links_upstream_committed=0,
                max_chain_depth=0,
                saved_ms=0.0,
                wasted_ms=0.0,
            ),
            Row(
                broker="QM2",
                committed=1,
                rolled_back=0,
                cascaded=0,
                links=0,
                links_upstream_committed=0,
                max_chain_depth=0,
                saved_ms=0.0,
                wasted_ms=0.0,
            ),
        ],
    )


def test_throughput_and_depth_per_minute(spark, traffic):
    as_text = traffic.throughput.withColumn("minute", F.date_format("minute", "HH:mm"))  # session time zone: UTC
    assertDataFrameEqual(
        as_text,
        [
            Row(broker="QM1", queue="DLQ", minute="12:00", puts=0, gets=0, depth=1),
            Row(broker="QM1", queue="Q1", minute="12:00", puts=2, gets=2, depth=1),
            Row(broker="QM1", queue="Q1", minute="12:01", puts=0, gets=1, depth=0),
            Row(broker="QM1", queue="Q2", minute="12:00", puts=2, gets=0, depth=0),
            Row(broker="QM1", queue="Q2", minute="12:01", puts=1, gets=0, depth=1),
            Row(broker="QM2", queue="Q1", minute="12:00", puts=0, gets=2, depth=-1),
        ],
        checkRowOrder=True,
    )


#: m1 is backed out of Q1 past its threshold and moved to APP.BACKOUT, then gotten there; a
#: report that its reply queue refused lands on DLQ; one that could go nowhere moves
#: nothing; m2, not persistent, is discarded at a restart; m3 is cancelled by a reactive
#: message (m4 names it), a second cancel finding it gone.
MOVES = [
    event(1, 0, "put", queue="Q1", msg="m1"),
    event(2, 100, "get", queue="Q1", txn="T1", msg="m1"),
    event(3, 200, "rollback", txn="T1", reason="client"),
    event(4, 201, "dead_letter", queue="Q1", msg="m1", target="APP.BACKOUT", reason="backout count 1 reached 1"),
    event(5, 200, "backout", queue="Q1", txn="T1", msg="m1", backout_count=1),
    event(6, 1_201, "get", queue="APP.BACKOUT", msg="m1"),
    event(7, 1_300, "dead_letter", queue="DLQ", msg="r1", report="exception", reason="reply queue full"),
    event(8, 1_400, "dead_letter", queue="Q1", msg="r2", reason="unknown queue; no dead-letter queue"),
    event(9, 1_500, "put", queue="Q1", msg="m2"),
    event(10, 2_000, "discard", queue="Q1", msg="m2"),
    event(11, 2_000, "put", queue="Q1", msg="m3"),
    event(12, 2_000, "react", queue="Q1", msg="m4", refers_to="m3", action="cancel", applied="true"),
    event(13, 2_000, "react", queue="Q1", msg="m5", refers_to="m3", action="cancel", applied="false"),
]


def test_moves_to_backout_queues_reports_discards_and_cancels_keep_depths_right(spark):
    columns = ["puts", "gets", "moved_in", "dead_letters", "discarded", "cancelled", "depth", "oldest_age_ms"]
    queues = transform(frame(spark, MOVES)).queues.select("queue", *columns, "dwell_p50_ms")
    assertDataFrameEqual(
        queues,
        [
            # the move is m1's arrival here: its get dwelt 1 s, and nothing is left (not -1)
            Row(
                queue="APP.BACKOUT",
                puts=0,
                gets=1,
                moved_in=1,
                dead_letters=0,
                discarded=0,
                cancelled=0,
                depth=0,
                oldest_age_ms=None,
                dwell_p50_ms=1_000.0,
            ),
            Row(
                queue="DLQ",
                puts=1,
                gets=0,
                moved_in=0,
                dead_letters=0,
                discarded=0,
                cancelled=0,
                depth=1,
                oldest_age_ms=700.0,
                dwell_p50_ms=None,
            ),
            Row(
                queue="Q1",
                puts=3,
                gets=1,
                moved_in=0,
                dead_letters=1,
                discarded=1,
                cancelled=1,
                depth=0,
                oldest_age_ms=None,
                dwell_p50_ms=100.0,
            ),
        ],
    )


#: U commits at 1 s. D got U's message pre-emptively at 0.2 s and asked to commit at 0.5 s
#: (held: p = 300 ms); E got D's at 0.6 s and asked at 0.9 s (p = 300 ms); F got U's at
#: 0.1 s and committed, not held, at 1.2 s (p = 1.1 s). W, linked to a producer that rolled
#: back, was cascaded 0.7 s after it began.
CHAIN = [
    event(1, 0, "begin", txn="U"),
    event(2, 10, "put", queue="Q1", txn="U", msg="m1"),
    event(3, 100, "begin", txn="D"),
    event(4, 200, "link", txn="D", msg="m1", upstream="U"),
    event(5, 500, "hold", txn="D", waiting_on="U"),
    event(6, 300, "begin", txn="E"),
    event(7, 600, "link", txn="E", msg="m2", upstream="D"),
    event(8, 900, "hold", txn="E", waiting_on="D"),
    event(9, 50, "begin", txn="F"),
    event(10, 100, "link", txn="F", msg="m1", upstream="U"),
    event(11, 1_000, "commit", txn="U"),
    event(12, 1_000, "commit", txn="D"),
    event(13, 1_000, "commit", txn="E"),
    event(14, 1_200, "commit", txn="F"),
    event(15, 0, "begin", txn="X"),
    event(16, 0, "begin", txn="W"),
    event(17, 300, "link", txn="W", msg="m7", upstream="X"),
    event(18, 700, "cascade", txn="W", cause="X"),
    event(19, 700, "rollback", txn="W", reason="cascade from X"),
    event(20, 700, "rollback", txn="X", reason="client"),
]


def test_chains_time_saved_compounds_along_the_chain(spark):
    result = transform(frame(spark, CHAIN))
    assertDataFrameEqual(
        result.chains,
        [
            # saved = min(p, c_U - g): min(300, 800); chain latency from U's begin
            Row(broker="QM1", transaction_id="D", chain_depth=2, saved_ms=300.0, chain_latency_ms=1_000.0),
            # counterfactual: D would finish at 1.3 s, E 300 ms after: 1.6 s; it committed at 1 s
            Row(broker="QM1", transaction_id="E", chain_depth=3, saved_ms=600.0, chain_latency_ms=1_000.0),
            Row(broker="QM1", transaction_id="F", chain_depth=2, saved_ms=900.0, chain_latency_ms=1_200.0),
        ],
    )
    assertDataFrameEqual(
        result.brokers,
        [
            Row(
                broker="QM1",
                committed=4,
                rolled_back=2,
                cascaded=1,
                links=4,
                links_upstream_committed=3,
                max_chain_depth=3,
                saved_ms=1_800.0,
                wasted_ms=700.0,
            ),
        ],
    )


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
        7,
        "get",
        "QM1",
        "Q1",
        "",
        "m1",
    )
    assert row.detail == {"put_time": "2025-05-01T12:00:00+00:00", "preemptive": "false"}


def test_empty_export_gives_empty_results(spark, tmp_path):
    path = tmp_path / "journal.jsonl"
    path.write_text("")
    result = transform(extract(spark, str(path)))
    assert [frame.count() for frame in result] == [0, 0, 0, 0]


def test_load_writes_json_lines_per_result(spark, traffic, tmp_path):
    written = load(traffic, str(tmp_path / "out"))
    assert sorted(written) == ["brokers", "chains", "queues", "throughput"]
    results = {}
    for name in written:
        parts = sorted((tmp_path / "out" / name).glob("part-*.json"))
        assert (tmp_path / "out" / name / "_SUCCESS").exists() and len(parts) == 1
        results[name] = [json.loads(line) for line in parts[0].read_text().splitlines()]
    assert results["queues"][2] == {
        "broker": "QM1",
        "queue": "Q2",
        "puts": 3,
        "gets": 0,
        "backouts": 0,
        "transfers": 0,
        "moved_in": 0,
        "backout_rate": None,
        "dead_letters": 1,
        "expired": 0,
        "discarded": 0,
        "cancelled": 0,
        "depth": 1,
        "oldest_age_ms": 0.0,
        "dwell_samples": 0,
        "dwell_p50_ms": None,
        "dwell_p95_ms": None,
        "dwell_p99_ms": None,
    }
    assert results["throughput"][1] == {
        "broker": "QM1",
        "queue": "Q1",
        "minute": "2025-05-01T12:00:00Z",
        "puts": 2,
        "gets": 2,
        "depth": 1,
    }
    # Running again replaces the results.
    load(transform(frame(spark, TRAFFIC[:2])), str(tmp_path / "out"))
    parts = list((tmp_path / "out" / "brokers").glob("part-*.json"))
    assert [json.loads(line) for line in parts[0].read_text().splitlines()] == [
        {
            "broker": "QM1",
            "committed": 0,
            "rolled_back": 0,
            "cascaded": 0,
            "links": 0,
            "links_upstream_committed": 0,
            "max_chain_depth": 0,
            "saved_ms": 0.0,
            "wasted_ms": 0.0,
        },
    ]
