"""The ingest job against a real platform (Uvicorn, Celery worker): exactly once when Spark
retries a task that failed after a partial write, a rerun that puts nothing twice, the
command's progress bar, and a failure reported with Spark's error."""

from __future__ import annotations

import json

import pytest

from spark_jobs.launch import job_run
from tests.integration.servers import manage, poll_until

from .live import bodies, depth

pytestmark = [pytest.mark.spark, pytest.mark.integration]

RECORDS = 600


def ingest_followed(platform, ingest_id: str) -> dict:
    def finished():
        with platform.client() as http:
            body = http.get(f"/api/ingests/{ingest_id}/").json()
        return body if body["state"] in ("succeeded", "failed") else None

    return poll_until(
        finished, timeout=300, what=f"ingest {ingest_id} to finish", interval=0.5, diagnostics=platform.logs
    )


def test_retried_tasks_and_a_rerun_put_each_record_once(spark_platform, target):
    source = spark_platform.staging / f"{target}.jsonl"
    source.write_text("".join(json.dumps({"n": n, "text": f"record {n:04d}"}) + "\n" for n in range(RECORDS)))
    # Every task's first attempt fails after its first batch of 100 committed; local[2,3] retries it.
    result = job_run(
        "spark_jobs.ingest",
        [
            "--url",
            spark_platform.url,
            "--broker",
            target,
            "--queue",
            "Q1",
            "--source",
            str(source),
            "--master",
            "local[2,3]",
            "--batch-size",
            "100",
            "--write-partitions",
            "2",
            "--fail-first-attempt-after",
            "1",
            "--dedup-retention-ms",
            str(7 * 86_400_000),
        ],
        env={"BATON_API_TOKEN": spark_platform.token, "SPARK_CONF_DIR": spark_platform.env["SPARK_CONF_DIR"]},
        timeout=300,
    )
    assert result.ok, result.error + result.stderr_tail
    assert "injected failure" in result.stderr_tail  # the first attempts did fail
    # the retried attempts found their first batch's keys taken: 2 partitions x 100
    assert result.summary == {
        "records_total": RECORDS,
        "records_done": RECORDS,
        "messages_put": RECORDS - 200,
        "duplicates_skipped": 200,
    }
    assert depth(spark_platform, target) == RECORDS
    assert sorted(bodies(spark_platform, target)) == sorted(source.read_text().splitlines())

    # A rerun within the keys' retention, from the command, on the worker fleet: nothing put twice.
    out = manage(spark_platform.env, "ingest", target, "Q1", source.name, "--user", "tester", timeout=300)
    assert f"[{'#' * 30}] {RECORDS}/{RECORDS} records, 0 put, {RECORDS} duplicates skipped (succeeded)" in out, out
    assert depth(spark_platform, target) == RECORDS


def test_rest_ingest_with_a_key_field_and_a_failure_with_sparks_error(spark_platform, target):
    folder = spark_platform.staging / target
    folder.mkdir()
    (folder / "a.csv").write_text("id,colour,body\n1,red,one\n2,blue,two\n")
    (folder / "b.csv").write_text("id,colour,body\n2,blue,two again\n3,green,three\n")
    with spark_platform.client() as http:
        response = http.post(
            f"/api/brokers/{target}/queues/Q1/ingests/",
            json={
                "source": target,
                "format": "csv",
                "key_field": "id",
                "body_field": "body",
                "properties_fields": ["colour"],
            },
        )
        assert response.status_code == 202, response.text
        assert response.json()["state"] == "queued"
        done = ingest_followed(spark_platform, response.json()["id"])
        assert done["state"] == "succeeded", done
        assert (done["records_total"], done["records_done"], done["messages_put"], done["duplicates_skipped"]) == (
            4,
            4,
            3,
            1,
        )
        got = http.post(f"/api/brokers/{target}/queues/Q1/get/", json={"batch": 10}).json()["messages"]
        # id 2 is in both files, read by tasks running at once: whichever put it first wins
        by_colour = {m["properties"]["colour"]: m["body"] for m in got}
        assert len(got) == 3 and by_colour["red"] == "one" and by_colour["green"] == "three"
        assert by_colour["blue"] in ("two", "two again")

        (spark_platform.staging / f"{target}-bad.jsonl").write_text('{"id": 1}\nnot json\n')
        response = http.post(f"/api/brokers/{target}/queues/Q1/ingests/", json={"source": f"{target}-bad.jsonl"})
        failed = ingest_followed(spark_platform, response.json()["id"])
        assert failed["state"] == "failed" and "is not JSON" in failed["error"], failed
        assert "IngestError" in failed["error"]
