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
    a get that was later backed out counts, and so does its redelivery), ``transfers``
    (messages that arrived over a channel), ``moved_in`` (messages moved to it from another
    queue of its broker: a backout queue or dead-letter queue receiving a message backed out
    past its threshold), ``backout_rate`` (backouts / gets, null without gets),
    ``dead_letters`` (messages moved from it to a backout or dead-letter queue), ``expired``,
    ``discarded`` (non-persistent messages discarded at a broker restart), ``cancelled``
    (messages removed by a reactive message's cancel: a ``react`` event with ``action``
    cancel, ``applied`` true, naming the message in ``refers_to``), ``depth``
    (messages on it at the end of the input, counted from its events: see ``throughput``),
    ``oldest_age_ms`` (how long the oldest of them had waited at the input's last event;
    null when none), ``dwell_samples``, ``dwell_p50_ms``, ``dwell_p95_ms``,
    ``dwell_p99_ms``: how long messages waited on the queue. A get's dwell time is its time
    minus the time its message arrived on that queue: the put event, the ``transfer`` event
    for a message that came over a channel, or the ``dead_letter`` event that moved it there,
    with the same broker, queue and ``msg_id`` (a get stamped before its arrival, which lock
    waits allow, counts 0). Gets whose arrival is not in the input have no dwell sample.

    A ``dead_letter`` event is recorded on the queue a message left and names the queue it
    went to (``detail.target``): it counts once on each (``dead_letters`` there,
    ``moved_in`` here). A report that its destination refused and that was put on the
    dead-letter queue is recorded there as a ``dead_letter`` event with ``detail.report``
    and no target: it counts as a put on that queue. One that could go nowhere (no target,
    no report placed) moved nothing and is not counted.
    Percentiles are Spark's ``percentile_approx`` (a sample value, within 1/10000 in rank);
    null when there is no sample.
``brokers/``
    ``broker``, ``committed``, ``rolled_back``: units of work resolved each way (held and
    cascaded ones included), for every broker in the input; ``links`` (pre-emptive gets
    that linked two units of work), ``links_upstream_committed`` (of those, how many
    producers committed), ``max_chain_depth``, ``saved_ms`` (time saved by pre-emptive gets,
    summed over linked units of work; see ``chains``), ``wasted_ms`` (work of units of work
    rolled back by a cascade: from their begin to their rollback), ``cascaded``.
``throughput/``
    ``broker``, ``queue``, ``minute`` (UTC, ISO-8601), ``puts``, ``gets`` per minute that
    saw any, and ``depth`` at the minute's end: the running sum of committed puts and
    transfers, messages moved in and backouts, minus gets, expiries, discards, cancels and moves out
    (puts of units of work that rolled back never count; a get that is backed out counts,
    and so does its backout).
``chains/``
    One row per committed unit of work that pre-emptively got from another (a consumer D of
    producers U): ``broker``, ``transaction_id``, ``chain_depth`` (1 + the deepest upstream's;
    a producer with no upstream is 1), ``saved_ms`` and ``chain_latency_ms``. With g = D's
    get (its link), c_U = U's commit, r = D's commit request (its hold, or its commit when it
    was not held) and p = r − g: without pre-emption D could start only when its upstreams
    had finished and would finish p later. Counterfactual finish C′(D) = max over U of C′(U)
    + p (C′ = the actual commit for a unit of work with no upstream), so savings compound
    along chains; saved = max(0, C′(D) − D's actual commit). For one link that is
    max(0, min(p, c_U − g)). ``chain_latency_ms``: D's commit minus the begin of the
    earliest unit of work at the head of its chain.

Extract, transform and load are separate functions; ``transform`` is pure (DataFrames in,
DataFrames out) so tests check it on hand-made events. Spark jobs never import Django.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NamedTuple

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

# Absolute, not relative: spark-submit runs this file as a script.
from spark_jobs import workflow_analytics
from spark_jobs.session import spark_session

APP_NAME = "baton-journal-analytics"

#: Every field nullable: Spark reads files with nullable fields whatever the schema says.
EVENT_SCHEMA = T.StructType(
    [
        T.StructField("id", T.LongType()),
        T.StructField("at", T.TimestampType()),
        T.StructField("kind", T.StringType()),
        T.StructField("broker", T.StringType()),
        T.StructField("queue", T.StringType()),
        T.StructField("transaction_id", T.StringType()),
        T.StructField("msg_id", T.StringType()),
        # Values are scalars as text ("true", "3", an ISO time); nested values as JSON text.
        T.StructField("detail", T.MapType(T.StringType(), T.StringType())),
    ]
)

PUT, GET, BACKOUT, TRANSFER, COMMIT, ROLLBACK = "put", "get", "backout", "transfer", "commit", "rollback"
BEGIN, LINK, HOLD, CASCADE, EXPIRE, DEAD_LETTER = "begin", "link", "hold", "cascade", "expire", "dead_letter"
DISCARD, REACT = "discard", "react"
#: Not journal kinds (``_moves_expanded``): the arrival, on the queue a ``dead_letter``
#: event names as its target, of the message it moved; a message removed by a cancel.
MOVED_IN, CANCELLED = "moved_in", "cancelled"
#: Events that put a message on a queue, and those that take one off it.
ARRIVALS = (PUT, TRANSFER, MOVED_IN)
DEPARTURES = (GET, EXPIRE, DEAD_LETTER, DISCARD, CANCELLED)
QUEUE_KEY = ["broker", "queue"]
#: Chains longer than this are cut (their deeper members get no chain row): each level is a join.
MAX_CHAIN_DEPTH = 32


class Analytics(NamedTuple):
    queues: DataFrame
    brokers: DataFrame
    throughput: DataFrame
    chains: DataFrame


def extract(spark: SparkSession, path: str) -> DataFrame:
    """The journal events in a JSON Lines export. A malformed line fails the job: the
    export is written whole or not at all, so one means a wrong file."""
    return spark.read.schema(EVENT_SCHEMA).option("mode", "FAILFAST").json(str(path))


def transform(events: DataFrame) -> Analytics:
    """The four results described above, each sorted by its key. Lazy, but for the chains,
    which are resolved level by level (a few small jobs) when this is called."""
    kind = F.col("kind")
    events = _moves_expanded(events)
    depth = _depth_by_minute(events)
    end = events.agg(F.max("at").alias("end_at"))
    queues = (
        events.where(kind.isin(*ARRIVALS, *DEPARTURES, BACKOUT))
        .groupBy(*QUEUE_KEY)
        .agg(
            _count(kind == PUT, "puts"),
            _count(kind == GET, "gets"),
            _count(kind == BACKOUT, "backouts"),
            _count(kind == TRANSFER, "transfers"),
            _count(kind == MOVED_IN, "moved_in"),
            _count(kind == DEAD_LETTER, "dead_letters"),
            _count(kind == EXPIRE, "expired"),
            _count(kind == DISCARD, "discarded"),
            _count(kind == CANCELLED, "cancelled"),
        )
        .where(F.col("queue") != "")
        .withColumn("backout_rate", F.when(F.col("gets") > 0, F.col("backouts") / F.col("gets")))
        .join(_dwell(events), QUEUE_KEY, "left")
        .join(depth.groupBy(*QUEUE_KEY).agg(F.max_by("depth", "minute").alias("depth")), QUEUE_KEY, "left")
        .join(_oldest(events, end), QUEUE_KEY, "left")
        .fillna(0, subset=["dwell_samples", "depth"])
        .select(
            *QUEUE_KEY,
            "puts",
            "gets",
            "backouts",
            "transfers",
            "moved_in",
            "backout_rate",
            "dead_letters",
            "expired",
            "discarded",
            "cancelled",
            "depth",
            "oldest_age_ms",
            "dwell_samples",
            "dwell_p50_ms",
            "dwell_p95_ms",
            "dwell_p99_ms",
        )
        .orderBy(*QUEUE_KEY)
    )
    chains = _chains(events)
    links = events.where(kind == LINK).select(
        "broker", F.col("transaction_id").alias("downstream"), F.col("detail")["upstream"].alias("upstream")
    )
    committed = events.where(kind == COMMIT).select(F.col("transaction_id").alias("upstream"), F.lit(1).alias("ok"))
    link_stats = (
        links.join(committed.dropDuplicates(["upstream"]), "upstream", "left")
        .groupBy("broker")
        .agg(
            F.count("*").cast(T.LongType()).alias("links"),
            F.count("ok").cast(T.LongType()).alias("links_upstream_committed"),
        )
    )
    chain_stats = chains.groupBy("broker").agg(
        F.max("chain_depth").alias("max_chain_depth"), F.sum("saved_ms").alias("saved_ms")
    )
    brokers = (
        events.groupBy("broker")
        .agg(
            _count(kind == COMMIT, "committed"),
            _count(kind == ROLLBACK, "rolled_back"),
            _count(kind == CASCADE, "cascaded"),
        )
        .join(link_stats, "broker", "left")
        .join(chain_stats, "broker", "left")
        .join(_wasted(events), "broker", "left")
        .fillna(0, subset=["links", "links_upstream_committed", "saved_ms", "wasted_ms"])
        .withColumn("max_chain_depth", F.coalesce("max_chain_depth", F.lit(0)).cast(T.IntegerType()))
        .select(
            "broker",
            "committed",
            "rolled_back",
            "cascaded",
            "links",
            "links_upstream_committed",
            "max_chain_depth",
            "saved_ms",
            "wasted_ms",
        )
        .orderBy("broker")
    )
    throughput = (
        events.where(kind.isin(PUT, GET))
        .groupBy(*QUEUE_KEY, F.date_trunc("minute", "at").alias("minute"))
        .agg(_count(kind == PUT, "puts"), _count(kind == GET, "gets"))
        .join(depth, [*QUEUE_KEY, "minute"], "full")
        .fillna(0, subset=["puts", "gets"])
        .select(*QUEUE_KEY, "minute", "puts", "gets", "depth")
        .orderBy(*QUEUE_KEY, "minute")
    )
    return Analytics(queues=queues, brokers=brokers, throughput=throughput, chains=chains)


def _moves_expanded(events: DataFrame) -> DataFrame:
    """The events, with a ``moved_in`` event on the target queue of every ``dead_letter``
    event that names one; a report put on the dead-letter queue as a put there; a
    ``dead_letter`` event that moved nothing left out; an applied cancel as the departure of
    the message it names (see ``queues`` above)."""
    detail = F.col("detail")
    target, report = detail["target"], detail["report"]
    untargeted = (F.col("kind") == DEAD_LETTER) & target.isNull()
    cancel = (F.col("kind") == REACT) & (detail["action"] == "cancel") & (detail["applied"] == "true")
    normalised = (
        events.withColumn("msg_id", F.when(cancel, detail["refers_to"]).otherwise(F.col("msg_id")))
        .withColumn(
            "kind",
            F.when(untargeted & report.isNotNull(), F.lit(PUT)).when(cancel, F.lit(CANCELLED)).otherwise(F.col("kind")),
        )
        .where(~((F.col("kind") == DEAD_LETTER) & target.isNull()))
    )
    moved_in = normalised.where(F.col("kind") == DEAD_LETTER).select(
        "id",
        "at",
        F.lit(MOVED_IN).alias("kind"),
        "broker",
        target.alias("queue"),
        F.lit("").alias("transaction_id"),
        "msg_id",
        "detail",
    )
    return normalised.unionByName(moved_in)


def _rolled_back(events: DataFrame) -> DataFrame:
    return events.where(F.col("kind") == ROLLBACK).select("transaction_id").distinct()


def _depth_by_minute(events: DataFrame) -> DataFrame:
    """Per queue and minute with events: the depth at the minute's end (see ``throughput``)."""
    kind = F.col("kind")
    counted = events.where(kind.isin(*ARRIVALS, BACKOUT, *DEPARTURES) & (F.col("queue") != ""))
    # Puts under a unit of work that rolled back vanished: they never counted.
    vanished = _rolled_back(events).where(F.col("transaction_id") != "")
    counted = counted.join(vanished.withColumn("gone", F.lit(True)), "transaction_id", "left").where(
        ~(kind.isin(PUT, TRANSFER) & F.col("gone").isNotNull())
    )
    change = F.when(kind.isin(*ARRIVALS, BACKOUT), 1).otherwise(-1)
    per_minute = counted.groupBy(*QUEUE_KEY, F.date_trunc("minute", "at").alias("minute")).agg(
        F.sum(change).alias("change")
    )
    running = Window.partitionBy(*QUEUE_KEY).orderBy("minute").rowsBetween(Window.unboundedPreceding, 0)
    return per_minute.select(*QUEUE_KEY, "minute", F.sum("change").over(running).cast(T.LongType()).alias("depth"))


def _oldest(events: DataFrame, end: DataFrame) -> DataFrame:
    """Per queue: the age, at the input's last event, of the oldest message still on it (its
    last event an arrival or a backout)."""
    key = [*QUEUE_KEY, "msg_id"]
    kind = F.col("kind")
    vanished = _rolled_back(events).where(F.col("transaction_id") != "").withColumn("gone", F.lit(True))
    relevant = (
        events.where(kind.isin(*ARRIVALS, BACKOUT, *DEPARTURES) & (F.col("msg_id") != ""))
        .join(vanished, "transaction_id", "left")
        .where(~(kind.isin(PUT, TRANSFER) & F.col("gone").isNotNull()))
    )
    latest = Window.partitionBy(*key).orderBy(F.col("at").desc(), F.col("id").desc())
    arrived = relevant.where(kind.isin(*ARRIVALS)).groupBy(*key).agg(F.min("at").alias("arrived_at"))
    waiting = (
        relevant.withColumn("n", F.row_number().over(latest))
        .where("n = 1")
        .where(kind.isin(*ARRIVALS, BACKOUT))
        .select(*key)
        .join(arrived, key)
    )
    age_ms = (F.unix_micros(F.col("end_at")) - F.unix_micros(F.col("arrived_at"))) / 1000.0
    return waiting.crossJoin(end).groupBy(*QUEUE_KEY).agg(F.max(age_ms).alias("oldest_age_ms"))


def _wasted(events: DataFrame) -> DataFrame:
    """Per broker: milliseconds of work lost by units of work a cascade rolled back."""
    begun = events.where(F.col("kind") == BEGIN).select("transaction_id", F.col("at").alias("begun_at"))
    cascaded = events.where(F.col("kind") == CASCADE).select("broker", "transaction_id", F.col("at").alias("ended_at"))
    ms = F.greatest(F.lit(0.0), (F.unix_micros("ended_at") - F.unix_micros("begun_at")) / 1000.0)
    return cascaded.join(begun, "transaction_id").groupBy("broker").agg(F.sum(ms).alias("wasted_ms"))


def _chains(events: DataFrame) -> DataFrame:
    """Chain depth, time saved and chain latency of every committed linked unit of work
    (see ``chains`` above). Resolved level by level from the heads of the chains, at most
    MAX_CHAIN_DEPTH levels; a unit of work whose upstreams never all resolve (a cycle, or a
    producer outside the input) gets no row."""
    kind = F.col("kind")
    ms = lambda col: F.unix_micros(col) / 1000.0  # noqa: E731
    commits = events.where(kind == COMMIT).groupBy("transaction_id").agg(F.min("at").alias("committed_at"))
    begins = events.where(kind == BEGIN).groupBy("transaction_id").agg(F.min("at").alias("begun_at"))
    holds = events.where(kind == HOLD).groupBy("transaction_id").agg(F.min("at").alias("held_at"))
    links = (
        events.where(kind == LINK)
        .select(
            "broker",
            F.col("transaction_id").alias("d"),
            F.col("detail")["upstream"].alias("u"),
            F.col("at").alias("got_at"),
        )
        .groupBy("broker", "d", "u")
        .agg(F.min("got_at").alias("got_at"))
    )
    # p per downstream: from its first pre-emptive get to its commit request
    consumer = (
        links.groupBy("broker", "d")
        .agg(F.min("got_at").alias("got_at"))
        .join(commits.withColumnRenamed("transaction_id", "d"), "d")
        .join(holds.withColumnRenamed("transaction_id", "d"), "d", "left")
        .withColumn("p_ms", ms(F.coalesce("held_at", "committed_at")) - ms("got_at"))
    )
    # level 1: committed units of work that are upstream of someone and have no upstream themselves
    heads = (
        links.select(F.col("u").alias("transaction_id"))
        .distinct()
        .join(links.select(F.col("d").alias("transaction_id")).distinct(), "transaction_id", "left_anti")
        .join(commits, "transaction_id")
        .join(begins, "transaction_id", "left")
        .select(
            "transaction_id",
            F.lit(1).alias("chain_depth"),
            ms("committed_at").alias("cf_ms"),
            ms(F.coalesce("begun_at", "committed_at")).alias("head_ms"),
        )
    )
    schema = "broker string, transaction_id string, chain_depth int, saved_ms double, chain_latency_ms double"
    rows = []
    resolved = heads.localCheckpoint(eager=True)
    pending = consumer
    for _ in range(MAX_CHAIN_DEPTH if not resolved.isEmpty() else 0):
        ups = links.join(resolved.withColumnRenamed("transaction_id", "u"), "u")
        counts = links.groupBy("d").agg(F.count("*").alias("needed"))
        ready = (
            ups.groupBy("d")
            .agg(
                F.count("*").alias("have"),
                F.max("chain_depth").alias("up_depth"),
                F.max("cf_ms").alias("up_cf_ms"),
                F.min("head_ms").alias("head_ms"),
            )
            .join(counts, "d")
            .where("have = needed")
            .join(pending, "d")
            .select(
                F.col("d").alias("transaction_id"),
                "broker",
                (F.col("up_depth") + 1).alias("chain_depth"),
                (F.col("up_cf_ms") + F.col("p_ms")).alias("cf_ms"),
                "head_ms",
                "committed_at",
            )
        )
        ready = ready.localCheckpoint(eager=True)  # cut the plan: each level builds on the last
        if ready.isEmpty():
            break
        rows.append(ready)
        resolved = resolved.unionByName(ready.select("transaction_id", "chain_depth", "cf_ms", "head_ms"))
        pending = pending.join(ready.select(F.col("transaction_id").alias("d")), "d", "left_anti")
    if not rows:
        return events.sparkSession.createDataFrame([], schema)
    out = rows[0]
    for more in rows[1:]:
        out = out.unionByName(more)
    return out.select(
        "broker",
        "transaction_id",
        F.col("chain_depth").cast(T.IntegerType()).alias("chain_depth"),
        F.greatest(F.lit(0.0), F.col("cf_ms") - ms("committed_at")).alias("saved_ms"),
        (ms("committed_at") - F.col("head_ms")).alias("chain_latency_ms"),
    ).orderBy("broker", "transaction_id")


def _count(condition: Column, name: str) -> Column:
    return F.count_if(condition).cast(T.LongType()).alias(name)


def _dwell(events: DataFrame) -> DataFrame:
    """Per queue: how many gets have a known arrival, and percentiles of their dwell time."""
    key = [*QUEUE_KEY, "msg_id"]
    arrivals = (  # the first arrival, should a message id ever arrive twice on one queue
        events.where(F.col("kind").isin(*ARRIVALS)).groupBy(*key).agg(F.min("at").alias("arrived_at"))
    )
    gets = events.where(F.col("kind") == GET).select(*key, F.col("at").alias("got_at"))
    # Put and get stamp their events when the call starts, before waiting for the database's
    # write lock, so under contention a get can be stamped a little before the put it took:
    # such a dwell time counts as 0.
    dwell_ms = F.greatest(F.lit(0.0), (F.unix_micros("got_at") - F.unix_micros("arrived_at")) / 1000.0)
    percentiles = F.percentile_approx(dwell_ms, [0.5, 0.95, 0.99])
    return (
        gets.join(arrivals, key)
        .groupBy(*QUEUE_KEY)
        .agg(F.count("*").alias("dwell_samples"), percentiles.alias("p"))
        .select(
            *QUEUE_KEY,
            "dwell_samples",
            F.col("p")[0].alias("dwell_p50_ms"),
            F.col("p")[1].alias("dwell_p95_ms"),
            F.col("p")[2].alias("dwell_p99_ms"),
        )
    )


def load(result: NamedTuple, out_dir: str) -> dict[str, str]:
    """Write each result as JSON Lines under ``out_dir/<name>/`` (one part file; results
    are small), replacing what was there. Nulls are written, not dropped. Returns the
    directories by name."""
    written = {}
    for name, frame in result._asdict().items():
        target = str(Path(out_dir) / name)
        (
            frame.coalesce(1)
            .write.mode("overwrite")
            .option("ignoreNullFields", "false")
            .option("timestampFormat", "yyyy-MM-dd'T'HH:mm:ssXXX")
            .json(target)
        )
        written[name] = target
    return written


def run(spark: SparkSession, input_path: str, out_dir: str, workflows_path: str | None = None) -> dict[str, str]:
    """The journal's results; with ``workflows_path`` (a workflow history export) the
    workflows' too (``spark_jobs.workflow_analytics``), in the same session."""
    events = extract(spark, input_path).cache()  # read by every result
    try:
        written = load(transform(events), out_dir)
        if workflows_path is not None:
            history = workflow_analytics.extract(spark, workflows_path)
            written.update(load(workflow_analytics.transform(history, events), out_dir))
        return written
    finally:
        events.unpersist()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.journal_analytics", description=__doc__.split("\n")[0])
    parser.add_argument("--input", required=True, help="Journal export: a JSON Lines file or a directory of them.")
    parser.add_argument(
        "--output", required=True, help="Directory for the results (queues/, brokers/, throughput/, chains/)."
    )
    parser.add_argument(
        "--workflows",
        default=None,
        help="Workflow history export (JSON Lines file or directory): adds workflow_hours/, workflow_steps/, "
        "compensations/.",
    )
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master URL (default: BATON_SPARK_MASTER, spark-submit's --master, or local[*]).",
    )
    args = parser.parse_args(argv)
    try:
        spark = spark_session(APP_NAME, master=args.master)
        try:
            written = run(spark, args.input, args.output, args.workflows)
        finally:
            spark.stop()
    except Exception as exc:  # the one line the platform shows as the run's error
        from spark_jobs.ingest import spark_error

        print(json.dumps({"error": spark_error(exc)}), flush=True)
        return 1
    print(json.dumps({"outputs": written}), flush=True)  # last line: what spark_jobs.launch reads
    return 0


if __name__ == "__main__":
    sys.exit(main())
