"""`python manage.py benchmark_pipelines` runs end to end on its own scratch database and
prints its tables. Only the shape of the output is checked: never a timing, so the runs
skip the warm-up runs (--no-warm-up), which only make the measured runs' figures fairer."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from bench.pipelines import PipelineResult, alternated, ratios, table, table_parse

# the benchmark makes its own databases, whatever the suite's: once, in the SQLite pass
pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parent.parent.parent


def run(*args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "benchmark_pipelines", *args],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_table_round_trips_with_ratios():
    results = [
        PipelineResult("chain", False, 4, 100, 1.0, 2.0),
        PipelineResult("chain", True, 4, 100, 1.0, 0.5),
        PipelineResult("request-reply", False, None, 100, 1.0, 1.0),
    ]
    parsed = table_parse(table(results))
    assert [
        (r["scenario"], r["preemptive"], r["stages"], r["messages"], r["work_ms"], r["rate"]) for r in parsed["results"]
    ] == [
        ("chain", False, 4, 100, 1.0, 50.0),
        ("chain", True, 4, 100, 1.0, 200.0),
        ("request-reply", False, None, 100, 1.0, 100.0),
    ]
    # a ratio only for a scenario measured both ways
    assert parsed["ratios"] == [{"scenario": "chain", "off": 2.0, "on": 0.5, "ratio": 4.0}]
    assert ratios(results) == [("chain", 2.0, 0.5, 4.0)]


def test_rounds_alternate_and_the_ratio_is_of_the_medians():
    assert alternated(2) == [(0, False), (0, True), (1, False), (1, True)]
    results = [
        PipelineResult("chain", preemptive, 4, 100, 1.0, seconds)
        for preemptive, seconds in [(False, 2.0), (True, 1.0), (False, 9.0), (True, 0.5), (False, 3.0), (True, 4.0)]
    ]
    assert ratios(results) == [("chain", 3.0, 1.0, 3.0)]  # off: 2, 3, 9; on: 0.5, 1, 4
    assert ratios(results[:4]) == [("chain", 2.0, 0.5, 4.0)]  # an even count: the lower middle


def test_benchmark_pipelines_prints_every_scenario_both_ways():
    proc = run("--stages", "2", "--messages", "5", "--work-ms", "0", "--no-warm-up")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "manage.py benchmark_pipelines --stages 2 --messages 5 --work-ms 0 --no-warm-up" in out
    assert re.search(r"^scenario\s+pre-emptive\s+stages\s+messages\s+work ms\s+seconds\s+msgs/s$", out, re.MULTILINE)
    assert re.search(r"^scenario\s+off s\s+on s\s+off/on$", out, re.MULTILINE)
    assert re.search(r"^load avg:\s+\S+ at the start", out, re.MULTILINE)

    parsed = table_parse(out)
    assert [(r["scenario"], r["preemptive"], r["stages"], r["messages"], r["work_ms"]) for r in parsed["results"]] == [
        ("chain", False, 2, 5, 0.0),
        ("chain", True, 2, 5, 0.0),
        ("request-reply", False, None, 5, 0.0),
        ("request-reply", True, None, 5, 0.0),
        ("chain-session", False, 2, 5, 0.0),
        ("chain-session", True, 2, 5, 0.0),
        ("request-reply-session", False, None, 5, 0.0),
        ("request-reply-session", True, None, 5, 0.0),
        ("request-reply-rest", False, None, 5, 0.0),
        ("request-reply-rest", True, None, 5, 0.0),
    ]
    assert all(r["seconds"] > 0 and r["rate"] > 0 for r in parsed["results"])
    assert [r["scenario"] for r in parsed["ratios"]] == [
        "chain",
        "request-reply",
        "chain-session",
        "request-reply-session",
        "request-reply-rest",
    ]
    assert all(r["off"] > 0 and r["on"] > 0 and r["ratio"] > 0 for r in parsed["ratios"])
    # the per-run notes: when each unit of work committed, and the channels' batches
    assert re.search(r"chain, on: stage 0 committed [\d.]+; stage 1 committed [\d.]+; stage 2 committed", out)
    # over sessions, the server's CPU over each run and its share of the run
    for side in ("off", "on"):
        assert re.search(
            rf"chain-session, {side}: stage 0 committed .*; the server's CPU [\d.]+ s \(\d+ % of the run\)$",
            out,
            re.MULTILINE,
        ), side
    assert re.search(
        r"request-reply, off: App1 committed [\d.]+;.*App1' committed [\d.]+; channel batches: "
        r"A\.TO\.B \d+, B\.TO\.A \d+",
        out,
    )
    # through the API too, over a session and over REST, with the channels' agents in processes of their own
    for scenario in ("request-reply-session", "request-reply-rest"):
        assert re.search(
            # in time order: with pre-emptive gets App2 may get a request before App1 commits
            scenario + r", on: (.*; )?App1 committed [\d.]+;.*App1' committed [\d.]+;.*channel batches: "
            r"A\.TO\.B [1-9]\d*, B\.TO\.A [1-9]\d*",
            out,
        ), scenario

    # It worked in a scratch directory of its own, and removed it.
    scratch = re.search(r"scratch directory (\S+)", proc.stderr)
    assert scratch, proc.stderr
    assert not Path(scratch.group(1)).exists()


def test_only_runs_one_scenario():
    proc = run("--stages", "1", "--messages", "3", "--work-ms", "0", "--only", "chain", "--no-warm-up")
    assert proc.returncode == 0, proc.stderr[-3000:]
    parsed = table_parse(proc.stdout)
    assert [(r["scenario"], r["preemptive"], r["stages"]) for r in parsed["results"]] == [
        ("chain", False, 1),
        ("chain", True, 1),
    ]
    assert [r["scenario"] for r in parsed["ratios"]] == ["chain"]


def test_the_channels_take_the_window_and_interval_asked_for_with_a_long_unit_of_work_upstream():
    proc = run(
        "--messages",
        "3",
        "--work-ms",
        "0",
        "--only",
        "request-reply",
        "--window",
        "2",
        "--batch-interval-ms",
        "5",
        "--long-uow-ms",
        "300",
        "--no-warm-up",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "--batch-interval-ms 5 --window 2 --long-uow-ms 300" in proc.stdout
    text = " ".join(proc.stdout.split())
    assert "batch interval 5 ms, window 2 batches" in text
    assert "A long unit of work on A (--long-uow-ms 300)" in text
    assert "Long committed" in text  # when the long unit of work committed, per run
    parsed = table_parse(proc.stdout)
    assert [(r["scenario"], r["preemptive"]) for r in parsed["results"]] == [
        ("request-reply", False),
        ("request-reply", True),
    ]


def test_options_are_checked_before_anything_runs():
    # as a user runs it: an error on stderr, a non-zero exit
    proc = run("--stages", "0", timeout=120)
    assert proc.returncode != 0
    assert "--stages" in proc.stderr
    assert "scratch directory" not in proc.stderr
    # each check, in this process (the same command and checks, without starting Python each time)
    for args, text in (
        (["--messages", "0"], "--messages"),
        (["--work-ms", "-1"], "--work-ms"),
        (["--batch-interval-ms", "-1"], "--batch-interval-ms"),
        (["--window", "0"], "--window"),
        (["--window", "65"], "--window"),
        (["--long-uow-ms", "-1"], "--long-uow-ms"),
    ):
        stderr = io.StringIO()
        with pytest.raises(CommandError, match=re.escape(text)):
            call_command("benchmark_pipelines", *args, stdout=io.StringIO(), stderr=stderr)
        assert "scratch directory" not in stderr.getvalue()


def test_phases_refuse_to_run_outside_a_scratch_environment():
    proc = run(
        "--phase",
        "setup",
        "--result-file",
        "/dev/null",
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "BATON_BENCHMARK_SCRATCH"},
    )
    assert proc.returncode != 0
    assert "internal" in proc.stderr
