"""Bulk ingest: files from the staging directory put as messages on a queue, once each.

Run it by hand (from the project directory; the platform answers at ``--url``)::

    BATON_API_TOKEN=<token> python -m spark_jobs.ingest --url http://127.0.0.1:8000 \
        --broker BRK1 --queue ORDERS.IN --source var/staging/orders.jsonl --format jsonl --key-field id

The platform starts it the same way for ``POST /api/brokers/{b}/queues/{q}/ingests/``,
``manage.py ingest`` and the dashboard (spark_jobs/README in docs/spark.md).

Input: a file, or a folder whose files (any depth, names starting ``.`` or ``_`` skipped,
in path order) are all read, as JSON Lines (one JSON value a line; blank lines skipped),
CSV (a header line, then records; values are text) or text (one record a line).

Each record becomes one message: its body is the record's ``--body-field`` (text as is,
other values as JSON) or else the whole record (the line; a CSV record as a JSON object);
``--properties-fields`` copy fields into the message's properties.

Exactly once, whatever Spark retries: every record carries a ``dedup_key`` derived from the
data alone — its ``--key-field`` value, or else ``<sha256 of its file's bytes>:<record
number in the file>`` (never Spark's partition, task or attempt ids, which change between
runs). Each task puts its records in batches over a WebSocket session of its own
(:mod:`spark_jobs.puts`), several batches in flight: each batch put is one database
transaction on the platform, which takes the keys and puts only the records whose key the
queue has not taken before (``brokers.queries.dedup_keys_claim``). A task that fails after
some batches committed and is retried finds their keys taken; batches whose replies a
dropped session lost are sent again on a new session and find theirs taken; a rerun of the
whole ingest puts nothing twice. Spark jobs never import Django.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from pyspark import TaskContext
from pyspark.sql import SparkSession

from spark_jobs.puts import IN_FLIGHT, BatchOutcome, PlatformTarget
from spark_jobs.session import spark_session

APP_NAME = "baton-ingest"
FORMATS = ("jsonl", "csv", "text")
#: Messages per batch put (the platform's BATON_MAX_BATCH is 1000 by default).
BATCH_SIZE = 500
#: Partitions that put at once. SQLite has one writer: more would only queue on its lock.
WRITE_PARTITIONS = 2


class IngestError(ValueError):
    """A record or an option the ingest cannot use; the message says which."""


@dataclass(frozen=True)
class Options:
    format: str = "jsonl"
    body_field: str = ""
    key_field: str = ""
    properties_fields: tuple[str, ...] = field(default_factory=tuple)
    batch_size: int = BATCH_SIZE
    #: Batch puts a task keeps sent and unanswered on its session.
    in_flight: int = IN_FLIGHT
    #: How long the queue remembers each record's key (``dedup_retention_ms``); None: until the
    #: queue is deleted.
    dedup_retention_ms: int | None = None
    #: Fault injection for tests: every task's first attempt fails after this many batches.
    fail_first_attempt_after: int | None = None

    def checked(self) -> "Options":
        if self.format not in FORMATS:
            raise IngestError(f"format must be one of {', '.join(FORMATS)}, not {self.format!r}.")
        if self.format == "text" and (self.body_field or self.key_field or self.properties_fields):
            raise IngestError(
                "Text records have no fields: body_field, key_field and properties_fields need jsonl or csv."
            )
        if not 1 <= self.batch_size <= 1000:
            raise IngestError("batch_size must be 1 to 1000.")
        if not 1 <= self.in_flight <= 100:
            raise IngestError("in_flight must be 1 to 100.")
        return self


def source_files(source: str | Path, root: str | Path | None = None) -> list[Path]:
    """The files an ingest reads: ``source`` itself, or every visible file under it, each
    resolved (symbolic links followed), so Spark reads exactly the files checked. With
    ``root`` (the staging directory), a file that resolves outside it is refused."""
    path = Path(source)
    if path.is_file():
        files = [path]
    elif path.is_dir():
        hidden = re.compile(r"^[._]")
        files = [
            p
            for p in path.rglob("*")
            if p.is_file() and not any(hidden.match(part) for part in p.relative_to(path).parts)
        ]
    else:
        raise IngestError(f"No file or folder {str(path)!r}.")
    resolved = sorted({p.resolve() for p in files})
    if root is not None:
        top = Path(root).resolve()
        outside = [p for p in resolved if not p.is_relative_to(top)]
        if outside:
            raise IngestError(f"{len(outside)} file(s) of the source lead outside the staging directory.")
    return resolved


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def records(spark: SparkSession, files: list[Path], options: Options):
    """An RDD of ``(file digest, record number, record)``: the line (jsonl, text) or the
    row as a dict (csv). ``zipWithIndex`` numbers a file's records in file order whatever
    its splits, so the numbers depend on the bytes alone."""
    sc = spark.sparkContext
    parts = []
    for path in files:
        digest = file_digest(path)
        if options.format == "csv":
            rows = (
                spark.read.option("header", "true")
                .option("multiLine", "true")
                .option("mode", "FAILFAST")
                .csv(str(path))
                .rdd.map(lambda row: row.asDict())
            )
        else:
            rows = sc.textFile(str(path))
        parts.append(rows.zipWithIndex().map(lambda pair, d=digest: (d, pair[1], pair[0])))
    if not parts:
        return sc.emptyRDD()
    rdd = sc.union(parts) if len(parts) > 1 else parts[0]
    if options.format == "jsonl":
        rdd = rdd.filter(lambda r: r[2].strip() != "")
    return rdd


def message(digest: str, number: int, record: Any, options: Options) -> dict[str, Any]:
    """The API message for one record, with its ``dedup_key``."""
    where = f"record {number} of file {digest[:12]}…"
    if options.format == "jsonl":
        try:
            fields = json.loads(record)
        except ValueError as exc:
            raise IngestError(f"{where} is not JSON: {exc}") from None
        text = record
    elif options.format == "csv":
        fields, text = record, json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    else:
        fields, text = None, record
    if (options.body_field or options.key_field or options.properties_fields) and not isinstance(fields, dict):
        raise IngestError(f"{where} is not an object, so it has no fields.")
    body = text
    if options.body_field:
        if options.body_field not in fields:
            raise IngestError(f"{where} has no body field {options.body_field!r}.")
        value = fields[options.body_field]
        body = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if options.key_field:
        value = fields.get(options.key_field)
        if value is None or value == "":
            raise IngestError(f"{where} has no key field {options.key_field!r}.")
        key = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        if len(key) > 200:
            raise IngestError(f"{where}: its key is longer than 200 characters.")
    else:
        key = f"{digest}:{number}"
    out: dict[str, Any] = {"body": body, "dedup_key": key}
    if options.dedup_retention_ms is not None:
        out["dedup_retention_ms"] = options.dedup_retention_ms
    if options.properties_fields:
        out["properties"] = {name: fields.get(name) for name in options.properties_fields}
    return out


def put_partition(rows: Iterable, *, target: PlatformTarget, options: Options) -> Iterator[tuple[int, int]]:
    """Put one partition's records in batches pipelined over a session; yield ``(records,
    messages put)`` of this attempt once every batch is answered. Progress after every
    answered batch, as ``(partition, attempt)`` totals so far: the platform adds the
    attempts' puts and keeps each partition's furthest count."""
    context = TaskContext.get()
    partition, attempt = context.partitionId(), context.attemptNumber()
    done = put = 0
    with target.reporter() as reporter:

        def answered(outcome: BatchOutcome) -> None:
            nonlocal done, put
            done, put = done + outcome.sent, put + outcome.put
            reporter.report({"partition": partition, "attempt": attempt, "done": done, "put": put})

        with target.writer(in_flight=options.in_flight, answered=answered) as writer:

            def send(batch: list[dict[str, Any]]) -> None:
                writer.put(batch)
                if options.fail_first_attempt_after == writer.sent and attempt == 0:
                    writer.drain()  # exactly that many batches committed, nothing more sent
                    raise RuntimeError(
                        f"injected failure: attempt 0 of partition {partition} after {writer.sent} batch(es)"
                    )

            batch: list[dict[str, Any]] = []
            for digest, number, record in rows:
                batch.append(message(digest, number, record, options))
                if len(batch) >= options.batch_size:
                    send(batch)
                    batch = []
            if batch:
                send(batch)
            writer.drain()
    yield done, put


def run(
    spark: SparkSession,
    *,
    source: str,
    target: PlatformTarget,
    options: Options,
    write_partitions: int = WRITE_PARTITIONS,
    staging_root: str | None = None,
) -> dict[str, int]:
    """Put every record of ``source``; return ``records_total``, ``records_done`` and, from
    the attempts that succeeded, ``messages_put`` and ``duplicates_skipped`` (the platform's
    ingest record also counts puts of attempts that failed)."""
    options = options.checked()
    rdd = records(spark, source_files(source, staging_root), options).cache()
    try:
        total = rdd.count()
        with target.reporter() as reporter:
            reporter.report({"records_total": total})
        opts = options
        counts = (
            rdd.coalesce(max(1, write_partitions))
            .mapPartitions(lambda rows: put_partition(rows, target=target, options=opts))
            .collect()
        )
    finally:
        rdd.unpersist()
    done, put = sum(c[0] for c in counts), sum(c[1] for c in counts)
    return {"records_total": total, "records_done": done, "messages_put": put, "duplicates_skipped": done - put}


def spark_error(exc: BaseException) -> str:
    """What a person needs from a failed job: the Python exception a task raised (the
    last one in the worker's traceback Spark forwards), else the first line Spark gave."""
    text = str(exc)
    found = re.findall(r"^([\w.]*(?:Error|Exception): .+)$", text, re.MULTILINE)
    python = [line for line in found if not line.startswith(("org.apache", "java.", "py4j."))]
    line = (python or found or [text.strip().splitlines()[0] if text.strip() else type(exc).__name__])[-1]
    return line[:2000]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.ingest", description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="The platform's base URL (token in BATON_API_TOKEN).")
    parser.add_argument("--broker", required=True)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--source", required=True, help="A file or folder.")
    parser.add_argument(
        "--staging-root",
        default=None,
        help="Refuse files that resolve outside this folder (the platform's staging directory).",
    )
    parser.add_argument("--format", default="jsonl", choices=FORMATS)
    parser.add_argument("--body-field", default="")
    parser.add_argument("--key-field", default="")
    parser.add_argument("--properties-fields", default="", help="Comma-separated field names.")
    parser.add_argument("--ingest-id", default="", help="The platform's ingest record to report progress to.")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument(
        "--in-flight",
        type=int,
        default=IN_FLIGHT,
        help="Batch puts each task keeps sent and unanswered on its session.",
    )
    parser.add_argument("--write-partitions", type=int, default=WRITE_PARTITIONS)
    parser.add_argument("--master", default=None, help="Spark master URL (default: BATON_SPARK_MASTER or local[*]).")
    parser.add_argument(
        "--dedup-retention-ms",
        type=int,
        default=None,
        help="How long the queue remembers each record's key (default: until the queue is deleted).",
    )
    parser.add_argument("--fail-first-attempt-after", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    options = Options(
        format=args.format,
        body_field=args.body_field,
        key_field=args.key_field,
        properties_fields=tuple(f for f in args.properties_fields.split(",") if f),
        batch_size=args.batch_size,
        in_flight=args.in_flight,
        dedup_retention_ms=args.dedup_retention_ms,
        fail_first_attempt_after=args.fail_first_attempt_after,
    )
    try:
        target = PlatformTarget.from_env(url=args.url, broker=args.broker, queue=args.queue, ingest_id=args.ingest_id)
        spark = spark_session(APP_NAME, master=args.master)
        try:
            summary = run(
                spark,
                source=args.source,
                target=target,
                options=options,
                write_partitions=args.write_partitions,
                staging_root=args.staging_root,
            )
        finally:
            spark.stop()
    except Exception as exc:  # the one line the platform shows as the ingest's error
        print(json.dumps({"error": spark_error(exc)}), flush=True)
        return 1
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
