"""Starting a Spark job as its own process, the way the platform's workers do.

Each job runs in a child Python process (``python -m spark_jobs.<job> ...``) with its own
driver JVM, so a Celery worker never holds a SparkContext between jobs and a job's crash
never takes the worker down. The child prints one JSON object as its last line of
standard output: its summary, or ``{"error": "..."}``. No Django here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class JobResult:
    ok: bool
    summary: dict
    error: str
    stderr_tail: str


def job_run(
    module: str, args: list[str], *, env: dict[str, str] | None = None, timeout: float | None = None
) -> JobResult:
    """Run ``python -m <module> <args>`` from the project directory; ``env`` is added to
    this process's environment (secrets such as the API token travel here, not in argv)."""
    child_env = {
        **os.environ,
        **(env or {}),
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
    }
    # Spark's Python workers: this interpreter (its packages), unless the deployment says otherwise
    child_env.setdefault("PYSPARK_PYTHON", sys.executable)
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    stderr_tail = proc.stderr[-4000:]
    summary: dict = {}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            try:
                summary = json.loads(line)
            except ValueError:
                continue
            break
    error = summary.get("error", "") if isinstance(summary, dict) else ""
    if proc.returncode != 0 and not error:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        error = (lines[-1] if lines else f"the job exited with status {proc.returncode}")[:2000]
    return JobResult(ok=proc.returncode == 0 and not error, summary=summary, error=error, stderr_tail=stderr_tail)
