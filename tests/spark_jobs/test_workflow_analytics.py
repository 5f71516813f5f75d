"""workflow_analytics: instances by hour, step durations, time held and compensations on a
hand-made workflow history and journal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from spark_jobs.journal_analytics import EVENT_SCHEMA
from spark_jobs.workflow_analytics import HISTORY_SCHEMA, extract, transform

pytestmark = pytest.mark.spark

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
HOUR = 3_600_000


def at(ms: int) -> datetime:
    return T0 + timedelta(milliseconds=ms)


def h(id_, ms, instance, event, step="", txn="") -> tuple:
    return (id_, at(ms), "QM1", "claims", 1, instance, event, step, txn)


def j(id_, ms, kind, txn) -> tuple:
    return (id_, at(ms), kind, "QM1", "", txn, "", {})


#: I1: validate under TA (begun at 0.1 s, committed at 0.4 s); approve got validate's output
#: pre-emptively under TB (begun at 0.2 s), completed and asked to commit at 0.35 s, held
#: until 0.45 s. I2: validate's first unit of work TC (its begin not in the journal) backed
#: out, TD committed; then I2 was aborted the next hour and validate compensated, its first
#: compensation request failing and resubmitted.
HISTORY = [
    h(1, 0, "I1", "started"),
    h(2, 300, "I1", "step_completed", "validate", "TA"),
    h(3, 350, "I1", "step_completed", "approve", "TB"),
    h(4, 400, "I1", "step_committed", "validate", "TA"),
    h(5, 450, "I1", "step_committed", "approve", "TB"),
    h(6, 450, "I1", "completed"),
    h(7, 1_000, "I2", "started"),
    h(8, 1_100, "I2", "step_completed", "validate", "TC"),
    h(9, 1_200, "I2", "step_backed_out", "validate", "TC"),
    h(10, 1_400, "I2", "step_completed", "validate", "TD"),
    h(11, 1_500, "I2", "step_committed", "validate", "TD"),
    h(12, HOUR, "I2", "aborted"),
    h(13, HOUR + 100, "I2", "compensation_requested", "validate"),
    h(14, HOUR + 200, "I2", "compensation_failed", "validate"),
    h(15, HOUR + 300, "I2", "compensation_resubmitted", "validate"),
    h(16, HOUR + 500, "I2", "step_compensated", "validate", "TE"),
    h(17, HOUR + 500, "I2", "compensated"),
]
JOURNAL = [
    j(1, 100, "begin", "TA"),
    j(2, 200, "begin", "TB"),
    j(3, 350, "hold", "TB"),
    j(4, 400, "commit", "TA"),
    j(5, 450, "commit", "TB"),
    j(6, 1_300, "begin", "TD"),
    j(7, 1_500, "commit", "TD"),
]


@pytest.fixture(scope="module")
def result(spark):
    out = transform(spark.createDataFrame(HISTORY, HISTORY_SCHEMA), spark.createDataFrame(JOURNAL, EVENT_SCHEMA))
    return out._replace(**{name: df.cache() for name, df in out._asdict().items()})


def test_instances_per_hour(result):
    as_text = result.workflow_hours.withColumn("hour", F.date_format("hour", "HH:mm"))
    assertDataFrameEqual(
        as_text,
        [
            Row(
                broker="QM1",
                workflow="claims",
                hour="12:00",
                started=2,
                completed=1,
                compensating=0,
                compensated=0,
                compensation_failed=0,
            ),
            Row(
                broker="QM1",
                workflow="claims",
                hour="13:00",
                started=0,
                completed=0,
                compensating=1,
                compensated=1,
                compensation_failed=1,
            ),
        ],
        checkRowOrder=True,
    )


def test_step_durations_and_time_held(result):
    assertDataFrameEqual(
        result.workflow_steps,
        [
            # from TB's begin to its commit; held from its hold to its commit
            Row(
                broker="QM1",
                workflow="claims",
                step="approve",
                committed=1,
                backed_out=0,
                duration_p50_ms=250.0,
                duration_p95_ms=250.0,
                duration_p99_ms=250.0,
                held=1,
                held_p50_ms=100.0,
                held_p99_ms=100.0,
                held_ms=100.0,
            ),
            # TA 300 ms, TD 200 ms; TC backed out
            Row(
                broker="QM1",
                workflow="claims",
                step="validate",
                committed=2,
                backed_out=1,
                duration_p50_ms=200.0,
                duration_p95_ms=300.0,
                duration_p99_ms=300.0,
                held=0,
                held_p50_ms=None,
                held_p99_ms=None,
                held_ms=0.0,
            ),
        ],
        checkRowOrder=True,
    )


def test_a_step_whose_begin_is_not_in_the_journal_counts_from_its_completion(spark):
    history = spark.createDataFrame(
        [h(1, 0, "I", "step_completed", "validate", "TX"), h(2, 40, "I", "step_committed", "validate", "TX")],
        HISTORY_SCHEMA,
    )
    steps = transform(history, spark.createDataFrame([], EVENT_SCHEMA)).workflow_steps
    assert steps.select("committed", "duration_p50_ms", "held").first() == Row(
        committed=1, duration_p50_ms=40.0, held=0
    )


def test_compensations_per_step_with_their_outcome(result):
    assertDataFrameEqual(
        result.compensations,
        [
            Row(
                broker="QM1",
                workflow="claims",
                step="validate",
                requested=2,
                resubmitted=1,
                compensated=1,
                failed=1,
                compensation_p50_ms=400.0,
                compensation_p99_ms=400.0,
            ),
        ],
    )


def test_extract_reads_the_export_format(spark, tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_text(
        '{"id":3,"at":"2025-05-01T12:00:00.250001+00:00","broker":"QM1","workflow":"claims","version":2,'
        '"instance":"I1","event":"step_committed","step":"validate","transaction":"TA"}\n'
    )
    (row,) = extract(spark, str(path)).selectExpr("*", "unix_micros(at) AS micros").collect()
    assert (row.broker, row.workflow, row.version, row.instance, row.event, row.step, row.transaction) == (
        "QM1",
        "claims",
        2,
        "I1",
        "step_committed",
        "validate",
        "TA",
    )
    assert row.micros == int(at(0).timestamp() * 1_000_000) + 250_001
