"""The ingest and the analytics on a real Spark standalone cluster: a master and a worker
started from the installed PySpark (loopback only, 1 core, 1 GiB), stopped by their pids."""

from __future__ import annotations

import json

import pytest

from spark_jobs.launch import job_run
from tests.integration.servers import manage, poll_until

from .live import spark_cluster_started

pytestmark = [pytest.mark.spark, pytest.mark.integration]


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    with spark_cluster_started(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


def test_ingest_and_analytics_run_on_a_standalone_cluster(spark_platform, spark_cluster):
    with spark_platform.client() as http:
        assert http.post("/api/brokers/", json={"name": "CLU"}).status_code == 201
        assert http.post("/api/brokers/CLU/queues/", json={"name": "Q1"}).status_code == 201
    source = spark_platform.staging / "cluster.jsonl"
    source.write_text("".join(json.dumps({"id": f"k{n}", "v": n}) + "\n" for n in range(50)))
    env = {
        "BATON_API_TOKEN": spark_platform.token,
        "SPARK_CONF_DIR": spark_platform.env["SPARK_CONF_DIR"],
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    result = job_run(
        "spark_jobs.ingest",
        [
            "--url",
            spark_platform.url,
            "--broker",
            "CLU",
            "--queue",
            "Q1",
            "--source",
            str(source),
            "--key-field",
            "id",
            "--master",
            spark_cluster.master_url,
        ],
        env=env,
        timeout=300,
    )
    assert result.ok, result.error + result.stderr_tail + spark_cluster.log_text()
    assert result.summary["messages_put"] == 50 and result.summary["duplicates_skipped"] == 0
    assert "app-" in "".join(p.name for p in (spark_cluster.logs[0].parent / "work").iterdir())  # ran there

    # the analytics, by hand, on the cluster: the journal now holds those 50 puts
    out = manage(spark_platform.env, "analytics_run", "--master", spark_cluster.master_url, timeout=300)
    assert "results loaded" in out, out
    with spark_platform.client() as http:
        body = poll_until(
            lambda: http.get("/api/brokers/CLU/analytics/").json(), timeout=10, what="the broker's analytics"
        )
    assert body["computed_at"] is not None
    [queue] = [q for q in body["queues"] if q["queue"] == "Q1"]
    assert (queue["puts"], queue["gets"], queue["depth"]) == (50, 0, 50)
