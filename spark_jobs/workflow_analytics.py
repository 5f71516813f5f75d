"""Workflow analytics: instances by hour, step durations and time held, compensations, from
the workflow history export beside the journal export.

Run by ``spark_jobs.journal_analytics`` when it is given ``--workflows PATH`` (one Spark
session for both). Input: a JSON Lines file (or a directory of them) written by
``workflows.export.workflow_history_export``: one instance history event a line with
``id``, ``at`` (ISO-8601), ``broker``, ``workflow``, ``version``, ``instance``, ``event``
(``started``, ``step_completed``, ``step_committed``, ...: workflows.models.HistoryEvent),
``step`` and ``transaction`` (empty strings when none). The journal events (the same input
as the journal analytics) give each step's unit of work its begin and its hold.

Output, one directory per result under ``--output`` (JSON Lines part files):

``workflow_hours/``
    ``broker``, ``workflow``, ``hour`` (UTC, ISO-8601) for every hour with any of:
    ``started``, ``completed`` (instances whose every step committed), ``compensating``
    (instances that failed: a step's fail, an abort, a step request dead-lettered or backed
    out past its threshold, a missed deadline), ``compensated`` (every committed step
    compensated), ``compensation_failed`` (a compensation request that could not be done).
``workflow_steps/``
    ``broker``, ``workflow``, ``step``: ``committed`` and ``backed_out`` (the step's units
    of work that ended each way), ``duration_p50_ms``, ``duration_p95_ms``,
    ``duration_p99_ms`` over its committed units of work: from the unit of work's begin
    (its ``begin`` journal event; the step's completion when the begin is not in the input)
    to the step's commit; ``held`` (committed units of work whose commit was held on an
    upstream one: a step that got pre-emptively), ``held_p50_ms``, ``held_p99_ms``,
    ``held_ms`` (the total): from the unit of work's ``hold`` journal event to its commit.
    Percentiles are Spark's ``percentile_approx``; null with no sample.
``compensations/``
    ``broker``, ``workflow``, ``step`` for every step with a compensation: ``requested``
    (compensation requests put, resubmissions included), ``resubmitted``, ``compensated``,
    ``failed`` (requests dead-lettered, backed out past their threshold or refused),
    ``compensation_p50_ms``, ``compensation_p99_ms``: from an instance's first request for
    the step's compensation to its compensation's commit (resubmissions included).

Spark jobs never import Django.
"""

from __future__ import annotations

from typing import NamedTuple

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

#: Every field nullable, as Spark reads files.
HISTORY_SCHEMA = T.StructType(
    [
        T.StructField("id", T.LongType()),
        T.StructField("at", T.TimestampType()),
        T.StructField("broker", T.StringType()),
        T.StructField("workflow", T.StringType()),
        T.StructField("version", T.LongType()),
        T.StructField("instance", T.StringType()),
        T.StructField("event", T.StringType()),
        T.StructField("step", T.StringType()),
        T.StructField("transaction", T.StringType()),
    ]
)

#: Journal kinds (spark_jobs.journal_analytics reads the same events).
BEGIN, HOLD, COMMIT = "begin", "hold", "commit"
STARTED, COMPLETED, COMPENSATED = "started", "completed", "compensated"
STEP_COMPLETED, STEP_COMMITTED, STEP_BACKED_OUT = "step_completed", "step_committed", "step_backed_out"
#: The events that make an instance compensate (workflows.services.saga.instance_fail).
FAILURES = ("step_failed", "request_dead_lettered", "deadline", "aborted")
COMPENSATION_REQUESTED, COMPENSATION_RESUBMITTED = "compensation_requested", "compensation_resubmitted"
STEP_COMPENSATED, COMPENSATION_FAILED = "step_compensated", "compensation_failed"
WORKFLOW_KEY = ["broker", "workflow"]
STEP_KEY = ["broker", "workflow", "step"]


class WorkflowAnalytics(NamedTuple):
    workflow_hours: DataFrame
    workflow_steps: DataFrame
    compensations: DataFrame


def extract(spark: SparkSession, path: str) -> DataFrame:
    """The workflow history events of an export; a malformed line fails the job."""
    return spark.read.schema(HISTORY_SCHEMA).option("mode", "FAILFAST").json(str(path))


def transform(history: DataFrame, events: DataFrame) -> WorkflowAnalytics:
    """The three results above, each sorted by its key (lazy). ``events``: the journal."""
    return WorkflowAnalytics(
        workflow_hours=_hours(history),
        workflow_steps=_steps(history, events),
        compensations=_compensations(history),
    )


def _count(condition: Column, name: str) -> Column:
    return F.count_if(condition).cast(T.LongType()).alias(name)


def _ms(later: Column | str, earlier: Column | str) -> Column:
    return F.greatest(F.lit(0.0), (F.unix_micros(later) - F.unix_micros(earlier)) / 1000.0)


def _hours(history: DataFrame) -> DataFrame:
    event = F.col("event")
    return (
        history.where(event.isin(STARTED, COMPLETED, COMPENSATED, COMPENSATION_FAILED, *FAILURES))
        .groupBy(*WORKFLOW_KEY, F.date_trunc("hour", "at").alias("hour"))
        .agg(
            _count(event == STARTED, "started"),
            _count(event == COMPLETED, "completed"),
            _count(event.isin(*FAILURES), "compensating"),
            _count(event == COMPENSATED, "compensated"),
            _count(event == COMPENSATION_FAILED, "compensation_failed"),
        )
        .orderBy(*WORKFLOW_KEY, "hour")
    )


def _steps(history: DataFrame, events: DataFrame) -> DataFrame:
    """Per step: its units of work by outcome, durations of the committed ones, time held."""
    event = F.col("event")
    by_txn = lambda kind, name: (  # noqa: E731 - the first journal event of a kind per unit of work
        events.where(F.col("kind") == kind)
        .groupBy("transaction_id")
        .agg(F.min("at").alias(name))
        .withColumnRenamed("transaction_id", "transaction")
    )
    completed = (
        history.where(event == STEP_COMPLETED)
        .groupBy("instance", "step", "transaction")
        .agg(F.min("at").alias("completed_at"))
    )
    committed = (
        history.where(event == STEP_COMMITTED)
        .select(*STEP_KEY, "instance", "transaction", F.col("at").alias("committed_at"))
        .join(completed, ["instance", "step", "transaction"], "left")
        .join(by_txn(BEGIN, "begun_at"), "transaction", "left")
        .join(by_txn(HOLD, "held_at"), "transaction", "left")
        .join(by_txn(COMMIT, "txn_committed_at"), "transaction", "left")
        .select(
            *STEP_KEY,
            _ms("committed_at", F.coalesce("begun_at", "completed_at", "committed_at")).alias("duration_ms"),
            F.when(F.col("held_at").isNotNull(), _ms(F.coalesce("txn_committed_at", "committed_at"), "held_at")).alias(
                "held_ms"
            ),
        )
    )
    durations = committed.groupBy(*STEP_KEY).agg(
        F.count("*").cast(T.LongType()).alias("committed"),
        F.percentile_approx("duration_ms", [0.5, 0.95, 0.99]).alias("d"),
        F.count("held_ms").cast(T.LongType()).alias("held"),
        F.percentile_approx("held_ms", [0.5, 0.99]).alias("h"),
        F.sum("held_ms").alias("held_ms"),
    )
    backed_out = (
        history.where(event == STEP_BACKED_OUT)
        .groupBy(*STEP_KEY)
        .agg(F.count("*").cast(T.LongType()).alias("backed_out"))
    )
    return (
        durations.join(backed_out, STEP_KEY, "full")
        .fillna(0, subset=["committed", "backed_out", "held", "held_ms"])
        .select(
            *STEP_KEY,
            "committed",
            "backed_out",
            F.col("d")[0].alias("duration_p50_ms"),
            F.col("d")[1].alias("duration_p95_ms"),
            F.col("d")[2].alias("duration_p99_ms"),
            "held",
            F.col("h")[0].alias("held_p50_ms"),
            F.col("h")[1].alias("held_p99_ms"),
            F.col("held_ms").cast(T.DoubleType()).alias("held_ms"),
        )
        .orderBy(*STEP_KEY)
    )


def _compensations(history: DataFrame) -> DataFrame:
    event = F.col("event")
    relevant = history.where(
        event.isin(COMPENSATION_REQUESTED, COMPENSATION_RESUBMITTED, STEP_COMPENSATED, COMPENSATION_FAILED)
        & (F.col("step") != "")
    )
    per_instance = (
        relevant.groupBy(*STEP_KEY, "instance")
        .agg(
            F.min(F.when(event.isin(COMPENSATION_REQUESTED, COMPENSATION_RESUBMITTED), F.col("at"))).alias("asked"),
            F.max(F.when(event == STEP_COMPENSATED, F.col("at"))).alias("done"),
        )
        .where(F.col("asked").isNotNull() & F.col("done").isNotNull())
        .select(*STEP_KEY, _ms("done", "asked").alias("ms"))
        .groupBy(*STEP_KEY)
        .agg(F.percentile_approx("ms", [0.5, 0.99]).alias("p"))
    )
    return (
        relevant.groupBy(*STEP_KEY)
        .agg(
            _count(event.isin(COMPENSATION_REQUESTED, COMPENSATION_RESUBMITTED), "requested"),
            _count(event == COMPENSATION_RESUBMITTED, "resubmitted"),
            _count(event == STEP_COMPENSATED, "compensated"),
            _count(event == COMPENSATION_FAILED, "failed"),
        )
        .join(per_instance, STEP_KEY, "left")
        .select(
            *STEP_KEY,
            "requested",
            "resubmitted",
            "compensated",
            "failed",
            F.col("p")[0].alias("compensation_p50_ms"),
            F.col("p")[1].alias("compensation_p99_ms"),
        )
        .orderBy(*STEP_KEY)
    )
