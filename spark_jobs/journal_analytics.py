"""Journal analytics: traffic per queue and per broker, from a journal export.

Run it (from the project directory)::

    python manage.py journal_export var/staging/journal.jsonl
    python -m spark_jobs.journal_analytics --input var/staging/journal.jsonl --output var/analytics/journal
    # or on a cluster (both paths on storage the executors share):
    PYTHONPATH=. spark-submit --master spark://HOST:7077 spark_jobs/journal_analytics.py --input ... --output ...

Input: a JSON Lines file (or a directory of them) written by
``transactions.journal_export.journal_export`` — one journal event a line with ``id``,
``at`` (ISO-8601), ``kind``, ``broker``, ``queue``, ``transaction_id``, ``msg_id``, ``detail``.

Output: one directory per result under ``--output``, each holding JSON Lines part files and
Spark's ``_SUCCESS`` marker once complete (replaced whole on every run):

``queues/``
    ``broker``, ``queue``, ``puts``, ``gets``, ``backouts`` (journal events of each kind, so
    a get that was later backed out counts, and so does its redelivery), ``dwell_samples``,
    ``dwell_p50_ms``, ``dwell_p95_ms``: how long messages waited on the queue. A get's dwell
    time is its time minus the time its message arrived on that queue: the put event, or the
    ``transfer`` event for a message that came over a channel, with the same broker, queue
    and ``msg_id`` (a get stamped before its arrival, which lock waits allow, counts 0). Gets
    whose arrival is not in the input have no dwell sample.
    Percentiles are Spark's ``percentile_approx`` (a sample value, within 1/10000 in rank);
    null when there is no sample.
``brokers/``
    ``broker``, ``committed``, ``rolled_back``: units of work resolved each way (held and
    cascaded ones included), for every broker in the input.
``throughput/``
    ``broker``, ``queue``, ``minute`` (UTC, ISO-8601), ``puts``, ``gets`` per minute that
    saw any.

Extract, transform and load are separate functions; ``transform`` is pure (DataFrames in,
DataFrames out) so tests check it on hand-made events. Spark jobs never import Django.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NamedTuple

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

# Absolute, not relative: spark-submit runs this file as a script.
from spark_jobs.session import spark_session

APP_NAME = "baton-journal-analytics"

#: Every field nullable: Spark reads files with nullable fields whatever the schema says.
EVENT_SCHEMA = T.StructType([
    T.StructField("id", T.LongType()),
    T.StructField("at", T.TimestampType()),
    T.StructField("kind", T.StringType()),
    T.StructField("broker", T.StringType()),
    T.StructField("queue", T.StringType()),
    T.StructField("transaction_id", T.StringType()),
    T.StructField("msg_id", T.StringType()),
    # Values are scalars as text ("true", "3", an ISO time); nested values as JSON text.
    T.StructField("detail", T.MapType(T.StringType(), T.StringType())),
])

PUT, GET, BACKOUT, TRANSFER, COMMIT, ROLLBACK = "put", "get", "backout", "transfer", "commit", "rollback"
QUEUE_KEY = ["broker", "queue"]


class Analytics(NamedTuple):
    queues: DataFrame
    brokers: DataFrame
    throughput: DataFrame


def extract(spark: SparkSession, path: str) -> DataFrame:
    """The journal events in a JSON Lines export. A malformed line fails the job: the
    export is written whole or not at all, so one means a wrong file."""
    return spark.read.schema(EVENT_SCHEMA).option("mode", "FAILFAST").json(str(path))


def transform(events: DataFrame) -> Analytics:
    """The three results described above, each sorted by its key. Lazy: nothing runs
    until they are collected or written."""
    kind = F.col("kind")
    queues = (
        events.where(kind.isin(PUT, GET, BACKOUT))
        .groupBy(*QUEUE_KEY)
        .agg(_count(kind == PUT, "puts"), _count(kind == GET, "gets"), _count(kind == BACKOUT, "backouts"))
        .join(_dwell(events), QUEUE_KEY, "left")
        .fillna(0, subset=["dwell_samples"])
        .select(*QUEUE_KEY, "puts", "gets", "backouts", "dwell_samples", "dwell_p50_ms", "dwell_p95_ms")
        .orderBy(*QUEUE_KEY)
    )
    brokers = (
        events.groupBy("broker")
        .agg(_count(kind == COMMIT, "committed"), _count(kind == ROLLBACK, "rolled_back"))
        .orderBy("broker")
    )
    throughput = (
        events.where(kind.isin(PUT, GET))
        .groupBy(*QUEUE_KEY, F.date_trunc("minute", "at").alias("minute"))
        .agg(_count(kind == PUT, "puts"), _count(kind == GET, "gets"))
        .orderBy(*QUEUE_KEY, "minute")
    )
    return Analytics(queues=queues, brokers=brokers, throughput=throughput)


def _count(condition: Column, name: str) -> Column:
    return F.count_if(condition).cast(T.LongType()).alias(name)


def _dwell(events: DataFrame) -> DataFrame:
    """Per queue: how many gets have a known arrival, and percentiles of their dwell time."""
    key = [*QUEUE_KEY, "msg_id"]
    arrivals = (  # the first arrival, should a message id ever arrive twice on one queue
        events.where(F.col("kind").isin(PUT, TRANSFER))
        .groupBy(*key).agg(F.min("at").alias("arrived_at"))
    )
    gets = events.where(F.col("kind") == GET).select(*key, F.col("at").alias("got_at"))
    # Put and get stamp their events when the call starts, before waiting for the database's
    # write lock, so under contention a get can be stamped a little before the put it took:
    # such a dwell time counts as 0.
    dwell_ms = F.greatest(F.lit(0.0), (F.unix_micros("got_at") - F.unix_micros("arrived_at")) / 1000.0)
    percentiles = F.percentile_approx(dwell_ms, [0.5, 0.95])
    return (
        gets.join(arrivals, key)
        .groupBy(*QUEUE_KEY)
        .agg(F.count("*").alias("dwell_samples"), percentiles.alias("p"))
        .select(*QUEUE_KEY, "dwell_samples", F.col("p")[0].alias("dwell_p50_ms"), F.col("p")[1].alias("dwell_p95_ms"))
    )


def load(result: Analytics, out_dir: str) -> dict[str, str]:
    """Write each result as JSON Lines under ``out_dir/<name>/`` (one part file; results
    are small), replacing what was there. Nulls are written, not dropped. Returns the
    directories by name."""
    written = {}
    for name, frame in result._asdict().items():
        target = str(Path(out_dir) / name)
        (frame.coalesce(1).write.mode("overwrite")
         .option("ignoreNullFields", "false")
         .option("timestampFormat", "yyyy-MM-dd'T'HH:mm:ssXXX")
         .json(target))
        written[name] = target
    return written


def run(spark: SparkSession, input_path: str, out_dir: str) -> dict[str, str]:
    events = extract(spark, input_path).cache()  # read by all three results
    try:
        return load(transform(events), out_dir)
    finally:
        events.unpersist()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.journal_analytics", description=__doc__.split("\n")[0])
    parser.add_argument("--input", required=True, help="Journal export: a JSON Lines file or a directory of them.")
    parser.add_argument("--output", required=True, help="Directory for the results (queues/, brokers/, throughput/).")
    parser.add_argument("--master", default=None,
                        help="Spark master URL (default: BATON_SPARK_MASTER, spark-submit's --master, or local[*]).")
    args = parser.parse_args(argv)
    spark = spark_session(APP_NAME, master=args.master)
    try:
        for name, target in run(spark, args.input, args.output).items():
            print(f"{name}: {target}")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
