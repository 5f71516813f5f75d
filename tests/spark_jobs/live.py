"""A real platform for the Spark jobs that talk to it (the integration suite's servers),
with a staging directory and the API URL its workers hand to the jobs; and a standalone
Spark cluster (a master and a worker started from the installed PySpark)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pyspark

from tests.integration.servers import Platform, free_port, poll_until, process_exited, tail


@dataclass
class SparkPlatform(Platform):
    spark_master: str = ""

    @property
    def staging(self) -> Path:
        return self.var_dir / "staging"

    @property
    def env(self) -> dict[str, str]:
        env = super().env
        env.update(
            {"BATON_API_URL": self.url, "BATON_STAGING_DIR": str(self.staging), "BATON_ANALYTICS_INTERVAL_S": "0"}
        )
        if self.spark_master:
            env["BATON_SPARK_MASTER"] = self.spark_master
        env["SPARK_CONF_DIR"] = str(spark_conf_dir(self.var_dir))
        env["SPARK_LOCAL_IP"] = "127.0.0.1"  # loopback only
        return env


def spark_conf_dir(directory: Path) -> Path:
    """Spark settings for the jobs the tests start (spark-defaults.conf): the same quick
    JVM and interpreted expressions as the in-process session (tests/spark_jobs/conftest.py)."""
    from .conftest import TEST_CONFIG

    conf = directory / "spark-conf"
    conf.mkdir(exist_ok=True)
    settings = {
        **TEST_CONFIG,
        "spark.executor.extraJavaOptions": TEST_CONFIG["spark.driver.extraJavaOptions"],
        "spark.executor.memory": "512m",
        "spark.cores.max": "1",
    }
    (conf / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in settings.items()))
    return conf


@dataclass
class SparkCluster:
    master_url: str
    processes: list[subprocess.Popen]
    logs: list[Path]

    def log_text(self) -> str:
        return "".join(f"--- {path.name}\n{tail(path)}\n" for path in self.logs)


def spark_class() -> Path:
    return Path(pyspark.__file__).parent / "bin" / "spark-class"


@contextmanager
def spark_cluster_started(directory: Path, *, timeout: float = 120) -> Iterator[SparkCluster]:
    """A standalone master and one worker (1 core, 1 GiB) on the loopback interface, with
    their logs and work directory in ``directory``; stopped by their process ids."""
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        raise RuntimeError("no Java runtime")
    port, web, worker_web = free_port(), free_port(), free_port()
    env = {
        **os.environ,
        "SPARK_WORKER_DIR": str(directory / "work"),
        "SPARK_LOG_DIR": str(directory),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
    }
    master_url = f"spark://127.0.0.1:{port}"
    commands = {
        "master": [
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(web),
        ],
        "worker": [
            "org.apache.spark.deploy.worker.Worker",
            master_url,
            "--host",
            "127.0.0.1",
            "--cores",
            "1",
            "--memory",
            "1g",
            "--webui-port",
            str(worker_web),
            "--work-dir",
            str(directory / "work"),
        ],
    }
    processes, logs = [], []
    cluster = SparkCluster(master_url, processes, logs)
    try:
        for name, args in commands.items():
            log = directory / f"{name}.log"
            logs.append(log)
            processes.append(
                subprocess.Popen(
                    [str(spark_class()), *args],
                    env=env,
                    stdout=log.open("wb"),
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )

            def alive() -> None:
                for proc in processes:
                    if proc.poll() is not None:
                        raise AssertionError(f"a Spark daemon exited ({proc.returncode})\n{cluster.log_text()}")

            marker = "I have been elected leader" if name == "master" else "Successfully registered with master"

            def up(log=log, marker=marker) -> bool:
                alive()
                return marker in tail(log, 10**6)

            poll_until(up, timeout=timeout, what=f"the Spark {name} to log {marker!r}", diagnostics=cluster.log_text)
        yield cluster
    finally:
        for proc in reversed(processes):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(processes):
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        for proc in processes:
            assert process_exited(proc.pid)


def depth(platform: Platform, broker: str) -> int:
    """The depth of the broker's queue Q1."""
    with platform.client() as http:
        return http.get(f"/api/brokers/{broker}/queues/Q1/").json()["depth"]


def bodies(platform: Platform, broker: str) -> list[str]:
    """The bodies of every message on the broker's queue Q1 (browsed)."""
    out, cursor = [], None
    with platform.client() as http:
        while True:
            page = http.get(
                f"/api/brokers/{broker}/queues/Q1/messages/",
                params={"limit": 1000, **({"cursor": cursor} if cursor else {})},
            ).json()
            out += [m["body"] for m in page["messages"]]
            if not page["messages"]:
                return out
            cursor = page["cursor"]
