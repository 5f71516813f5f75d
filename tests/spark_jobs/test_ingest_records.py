"""The ingest's records and messages: keys from the data, numbering in file order."""

from __future__ import annotations

import hashlib
import json

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from spark_jobs.ingest import IngestError, Options, message, records, source_files, spark_error

pytestmark = pytest.mark.spark


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_records_are_numbered_per_file_in_file_order(spark, tmp_path):
    (tmp_path / "b.jsonl").write_text('{"id": "x"}\n\n{"id": "y"}\n')
    (tmp_path / "a.jsonl").write_text('{"id": "w"}\n')
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".hidden.jsonl").write_text('{"id": "h"}\n')
    files = source_files(tmp_path)
    assert [f.name for f in files] == ["a.jsonl", "b.jsonl"]
    rdd = records(spark, files, Options(format="jsonl")).repartition(3)  # numbers come from the data, not the split
    got = spark.createDataFrame(rdd, "digest string, number long, record string")
    a, b = (tmp_path / "a.jsonl").read_text(), (tmp_path / "b.jsonl").read_text()
    assertDataFrameEqual(
        got,
        [
            Row(digest=sha(a), number=0, record='{"id": "w"}'),
            Row(digest=sha(b), number=0, record='{"id": "x"}'),
            Row(digest=sha(b), number=2, record='{"id": "y"}'),  # the blank line keeps its number
        ],
    )


def test_csv_records_are_rows_of_text(spark, tmp_path):
    (tmp_path / "a.csv").write_text('id,text\n1,"one, quoted"\n2,two\n')
    got = sorted(records(spark, source_files(tmp_path), Options(format="csv")).collect(), key=lambda r: r[1])
    assert [(n, r) for _, n, r in got] == [(0, {"id": "1", "text": "one, quoted"}), (1, {"id": "2", "text": "two"})]


def test_messages_take_their_key_body_and_properties_from_the_record():
    options = Options(format="jsonl", key_field="id", body_field="doc", properties_fields=("colour",))
    assert message("d" * 64, 4, '{"id": 7, "doc": {"a": 1}, "colour": "red"}', options) == {
        "body": '{"a":1}',
        "dedup_key": "7",
        "properties": {"colour": "red"},
    }
    assert message("d" * 64, 4, "plain line", Options(format="text")) == {
        "body": "plain line",
        "dedup_key": "d" * 64 + ":4",
    }
    assert message("d" * 64, 0, {"id": "1", "x": "y"}, Options(format="csv"))["body"] == json.dumps(
        {"id": "1", "x": "y"}, separators=(",", ":")
    )
    assert message("d" * 64, 4, "plain line", Options(format="text", dedup_retention_ms=604_800_000)) == {
        "body": "plain line",
        "dedup_key": "d" * 64 + ":4",
        "dedup_retention_ms": 604_800_000,
    }


@pytest.mark.parametrize(
    "record, options, text",
    [
        ("not json", Options(format="jsonl"), "is not JSON"),
        ('{"doc": 1}', Options(format="jsonl", key_field="id"), "has no key field"),
        ("[1, 2]", Options(format="jsonl", body_field="doc"), "is not an object"),
        ('{"id": "' + "k" * 201 + '"}', Options(format="jsonl", key_field="id"), "longer than 200"),
    ],
)
def test_unusable_records_fail_with_a_reason(record, options, text):
    with pytest.raises(IngestError, match=text):
        message("d" * 64, 0, record, options)


def test_options_are_checked():
    with pytest.raises(IngestError):
        Options(format="text", key_field="id").checked()
    with pytest.raises(IngestError):
        Options(format="xml").checked()


def test_sparks_error_is_the_python_exception_a_task_raised():
    forwarded = (
        "An error occurred while calling o91.collect.\n: org.apache.spark.SparkException: Job aborted\n"
        'Traceback (most recent call last):\n  File "x.py", line 1\n'
        "spark_jobs.ingest.IngestError: record 1 of file abc… is not JSON: Expecting value\n"
        "\tat org.apache.spark.api.python.BasePythonRunner\n"
    )
    assert spark_error(RuntimeError(forwarded)) == (
        "spark_jobs.ingest.IngestError: record 1 of file abc… is not JSON: Expecting value"
    )
