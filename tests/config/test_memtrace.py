"""The allocation tracer a soak turns on (config/memtrace.py): off without its variable; with
it, dumps that name the line whose allocations grew, and the soak's summary of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.soak import Series, memtrace_summary, memtrace_table

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.once

#: A process that starts the tracer, takes the baseline, keeps 20,000 strings on one line
#: (the "kept" line) and dumps again; exiting dumps once more.
PROGRAM = textwrap.dedent(
    """
    import sys
    from config.memtrace import memtrace_start
    trace = memtrace_start(process="web")
    if trace is None:
        print("off")
        sys.exit(0)
    assert memtrace_start(process="web") is None  # once per process
    trace.dump()
    kept = [str(i) * 20 for i in range(20000)]  # kept
    trace.dump()
    print(trace.pid)
    """
)
#: Where the program keeps its strings, as tracemalloc names it.
KEPT = f"<string>:{next(n for n, line in enumerate(PROGRAM.splitlines(), 1) if line.endswith('# kept'))}"


def _run(env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip()


def test_off_without_its_variable():
    assert _run({"BATON_TRACEMALLOC": ""}) == "off"


def test_dumps_name_the_line_that_grew_and_the_soak_summarises_them(tmp_path):
    pid = int(_run({"BATON_TRACEMALLOC": str(tmp_path)}))
    dumps = [json.loads(line) for line in (tmp_path / f"memtrace-{pid}.jsonl").read_text().splitlines()]
    assert len(dumps) == 3  # the baseline, the dump after the allocation, the one at exit
    assert dumps[0]["top"] == []
    first, grown = dumps[0], dumps[1]
    assert grown["process"] == "web" and grown["pid"] == pid
    assert grown["traced"] > first["traced"] + 20000 * 40
    top = grown["top"][0]
    assert top["where"] == KEPT and top["count_diff"] >= 20000
    assert KEPT in (tmp_path / f"memtrace-{pid}.txt").read_text()

    summary = memtrace_summary(tmp_path, [Series("web", pid), Series("worker", pid + 1)])
    assert [s["process"] for s in summary] == ["web"]  # a process without dumps is left out
    assert summary[0]["dumps"] == 3 and summary[0]["traced"]["last"] > summary[0]["traced"]["first"]
    assert summary[0]["top"][0]["where"] == KEPT
    assert KEPT in memtrace_table(summary)


def test_with_no_frames_it_dumps_the_figures_without_tracing(tmp_path):
    pid = int(_run({"BATON_TRACEMALLOC": str(tmp_path), "BATON_TRACEMALLOC_FRAMES": "0"}))
    dumps = [json.loads(line) for line in (tmp_path / f"memtrace-{pid}.jsonl").read_text().splitlines()]
    assert len(dumps) == 3 and all("traced" not in d and d["top"] == [] for d in dumps)
    assert dumps[1]["blocks"] > dumps[0]["blocks"] + 20000 and dumps[1]["rss"] > 0
    summary = memtrace_summary(tmp_path, [Series("web", pid)])
    assert "traced" not in summary[0] and summary[0]["blocks"]["last"] > summary[0]["blocks"]["first"]
    assert memtrace_table(summary).count("\n") == 3  # the heading, the columns, a rule, one process
