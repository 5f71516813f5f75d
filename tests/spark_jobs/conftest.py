"""One local SparkSession for the whole test run: starting the JVM is most of the cost."""

from __future__ import annotations

import itertools
import os
import shutil
from contextlib import ExitStack

import pytest

#: Tests run tiny inputs, where compiling is the cost: the JVM's quick compiler only, and
#: Spark's interpreted expressions instead of generated code (same results; Spark's own
#: tests run both ways). About halves JVM start and the first queries.
TEST_CONFIG = {
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.shuffle.partitions": "1",
}


@pytest.fixture(scope="session")
def spark():
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.skip("no Java runtime (Spark needs Java 17+; ./platform/test installs one)")
    from spark_jobs.session import spark_session

    session = spark_session("baton-tests", master="local[2]", config=TEST_CONFIG)
    yield session
    session.stop()


@pytest.fixture(scope="package")
def spark_platform(tmp_path_factory):
    """A real platform (Uvicorn, Celery worker and beat) whose workers run Spark jobs: on
    SQLite, or on a fresh database of the PostgreSQL server when the tests run on one.
    Stopped when tests/spark_jobs is done (package scope: an idle platform's worker and beat
    still run housekeeping, which the rest of the suite would pay for)."""
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        pytest.skip("no Java runtime (Spark needs Java 17+; ./platform/test installs one)")
    from django.db import connection

    from tests.integration.servers import RUNNING

    from .live import SparkPlatform

    with ExitStack() as stack:
        extra_env = {}
        if connection.vendor == "postgresql":
            from tests.scaled.conftest import scratch_database

            extra_env["DATABASE_URL"] = stack.enter_context(scratch_database("baton_spark"))
        platform = SparkPlatform(tmp_path_factory.mktemp("baton-spark-var"), extra_env=extra_env)
        platform.staging.mkdir(parents=True)
        try:
            yield platform.start()
        finally:
            platform.stop()
    assert platform not in RUNNING


_names = itertools.count(1)


@pytest.fixture
def target(spark_platform):
    """A fresh broker on the live platform, with queue Q1."""
    name = f"SP{next(_names)}"
    with spark_platform.client() as http:
        assert http.post("/api/brokers/", json={"name": name}).status_code == 201
        assert http.post(f"/api/brokers/{name}/queues/", json={"name": "Q1", "max_depth": 100_000}).status_code == 201
    return name
