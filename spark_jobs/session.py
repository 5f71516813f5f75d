"""The SparkSession every Baton job runs in.

Spark jobs never import Django: they read what the platform leaves in a staging area
(files such as the journal export) and write their results back there.

Which master: the ``master`` argument, else ``BATON_SPARK_MASTER``, else whatever
``spark-submit --master`` (or ``spark-defaults.conf``) says, else ``local[*]`` (Spark inside
this process, one task thread per core). So one job runs embedded or on a cluster
(``spark://host:7077``) unchanged.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

#: Baton's analytics inputs are small to medium; Spark's default of 200 shuffle partitions
#: would spend most of a run scheduling near-empty tasks.
SHUFFLE_PARTITIONS = 4


def spark_session(app_name: str, master: str | None = None, config: Mapping[str, str] | None = None) -> SparkSession:
    """A SparkSession named ``app_name``: UTC timestamps, few shuffle partitions, no web UI
    or progress bar, warnings and errors only; ``config`` adds or overrides settings. Returns
    the running session if there is one (``getOrCreate``), so a test run shares one JVM;
    settings that act at JVM start (``spark.driver.*``) then have no effect."""
    builder = (
        SparkSession.builder.appName(app_name)
        .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
        .config("spark.sql.session.timeZone", "UTC")  # the journal is in UTC; so are the results
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.level", "WARN")
    )
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    master = master or os.environ.get("BATON_SPARK_MASTER")
    if master:
        builder = builder.master(master)
    # Otherwise no .master(): that would override spark-submit's --master. Plain ``python``
    # gets local[*] from PySpark's own launcher.
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    if not session.sparkContext.master.startswith("local"):
        _code_shipped(session)
    return session


def _code_shipped(session: SparkSession) -> None:
    """Send this package to the cluster's executors (their Python workers import the
    functions a job's tasks run from it), as a zip on their ``sys.path``."""
    package = Path(__file__).resolve().parent
    target = Path(tempfile.mkdtemp(prefix="baton-spark-jobs-")) / "spark_jobs.zip"
    with zipfile.ZipFile(target, "w") as archive:
        for path in sorted(package.glob("*.py")):
            archive.write(path, f"spark_jobs/{path.name}")
    session.sparkContext.addPyFile(str(target))
