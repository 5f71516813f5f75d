"""The ingest job puts over WebSocket sessions: seen on the wire by a proxy in front of a real
platform, and safe when a session drops after the platform put a batch but before its reply
reached the task (the batch is sent again on a new session and puts nothing twice)."""

from __future__ import annotations

import json

import pytest

from spark_jobs.launch import job_run

from .live import bodies, depth
from .session_proxy import SessionProxy

pytestmark = [pytest.mark.spark, pytest.mark.integration]

RECORDS = 600
BATCH = 100


def ingested(platform, proxy: SessionProxy, broker: str, source, *extra: str):
    return job_run(
        "spark_jobs.ingest",
        [
            "--url",
            proxy.url,
            "--broker",
            broker,
            "--queue",
            "Q1",
            "--source",
            str(source),
            "--master",
            "local[2]",
            "--batch-size",
            str(BATCH),
            "--write-partitions",
            "2",
            "--in-flight",
            "3",
            *extra,
        ],
        env={"BATON_API_TOKEN": platform.token, "SPARK_CONF_DIR": platform.env["SPARK_CONF_DIR"]},
        timeout=300,
    )


def staged(platform, broker: str):
    source = platform.staging / f"{broker}.jsonl"
    source.write_text("".join(json.dumps({"n": n, "text": f"record {n:04d}"}) + "\n" for n in range(RECORDS)))
    return source


def test_every_record_travels_in_a_session_put(spark_platform, target):
    source = staged(spark_platform, target)
    with SessionProxy(spark_platform.port) as proxy:
        result = ingested(spark_platform, proxy, target, source)
    assert result.ok, result.error + result.stderr_tail
    assert result.summary == {
        "records_total": RECORDS,
        "records_done": RECORDS,
        "messages_put": RECORDS,
        "duplicates_skipped": 0,
    }
    # one session per write partition; every record in one put frame; no REST request at all
    assert proxy.seen.sessions == 2
    assert proxy.seen.put_messages() == RECORDS
    assert {op for _, op, _ in proxy.seen.requests} == {"put"}
    assert proxy.seen.http == []
    assert depth(spark_platform, target) == RECORDS
    assert sorted(bodies(spark_platform, target)) == sorted(source.read_text().splitlines())


def test_a_session_dropped_mid_partition_puts_nothing_twice(spark_platform, target):
    source = staged(spark_platform, target)
    # The first put the platform answers: the reply is swallowed and that session closed,
    # with the task's later batches (up to 3 in flight) sent on it too.
    with SessionProxy(spark_platform.port, drop_put_replies=1) as proxy:
        result = ingested(spark_platform, proxy, target, source)
    assert result.ok, result.error + result.stderr_tail
    assert len(proxy.seen.dropped) == 1
    assert proxy.seen.sessions == 3  # the dropped one's task opened a new one
    # the batch whose reply was lost went again (with those in flight beside it)
    assert proxy.seen.put_messages() >= RECORDS + BATCH
    summary = result.summary
    assert summary["records_total"] == summary["records_done"] == RECORDS
    # it had been put: sent again, every one of its messages came back a duplicate
    assert BATCH <= summary["duplicates_skipped"] <= 3 * BATCH
    assert summary["messages_put"] + summary["duplicates_skipped"] == RECORDS
    assert depth(spark_platform, target) == RECORDS
    assert sorted(bodies(spark_platform, target)) == sorted(source.read_text().splitlines())
